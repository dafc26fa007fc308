package input

import (
	"flag"
	"fmt"
	"net/netip"
	"os"
	"strings"

	"github.com/fairgrid/fairgrid/capture"
	"github.com/fairgrid/fairgrid/lludp"
)

// Flags are the flags of the commands that read captures (fairgrid
// decode and audit): which ports are a simulator's, which endpoints are
// known simulators, and the message template.
type Flags struct {
	ports, sims, template *string
}

// BindFlags declares --template, --ports and --sim on fs.
func BindFlags(fs *flag.FlagSet) Flags {
	return Flags{
		template: fs.String("template", "", "message_template.msg to use instead of the built-in one (the 2007 template decodes old captures)"),
		ports:    fs.String("ports", "9000-13100", "UDP ports of simulators in captures: ranges like 9000-13100,12035 (empty: all)"),
		sims:     fs.String("sim", "", "known simulator endpoints, comma-separated ip:port (port 0: any); they decide which side is the simulator"),
	}
}

// Parse reads the flags once fs is parsed: the ports, the known
// simulators, and the template (nil: the built-in one). Its errors name
// the flag.
func (f Flags) Parse() (ports capture.Ports, sims []netip.AddrPort, tmpl *lludp.Template, err error) {
	if ports, err = capture.ParsePorts(*f.ports); err != nil {
		return nil, nil, nil, fmt.Errorf("--ports: %w", err)
	}
	if sims, err = ParseSims(*f.sims); err != nil {
		return nil, nil, nil, fmt.Errorf("--sim: %w", err)
	}
	if tmpl, err = LoadTemplate(*f.template); err != nil {
		return nil, nil, nil, err
	}
	return ports, sims, tmpl, nil
}

// ParseSims reads comma-separated ip:port endpoints.
func ParseSims(v string) ([]netip.AddrPort, error) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	var sims []netip.AddrPort
	for _, part := range strings.Split(v, ",") {
		ap, err := netip.ParseAddrPort(strings.TrimSpace(part))
		if err != nil {
			return nil, fmt.Errorf("%q: want ip:port", part)
		}
		sims = append(sims, ap)
	}
	return sims, nil
}

// LoadTemplate reads a message template file; "" is the built-in one
// (nil).
func LoadTemplate(path string) (*lludp.Template, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t, err := lludp.ParseTemplate(f)
	if err != nil {
		return nil, fmt.Errorf("template %s: %w", path, err)
	}
	return t, nil
}
