package configs

import (
	"os"
	"testing"
)

// FuzzParse: any file either loads into a configuration that validates
// and converts, or is refused with an error; nothing panics.
func FuzzParse(f *testing.F) {
	if b, err := os.ReadFile("fairgrid.toml"); err == nil {
		f.Add(b)
	}
	f.Add([]byte("[capture]\nports = [\"9000-9100\", \"13000\"]\n[control]\ninterval = \"2s\"\n"))
	f.Add([]byte("[control]\nmin_bps = 9\nmax_bps = 1\n"))
	f.Add([]byte("[proxy]\nlisten = \"[::1]:1080\"\nallow_ports = [\"443\", \"9000-9100\"]\nusername = \"viewer\"\npassword_file = \"pass\"\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Parse(b)
		if err != nil {
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("Parse accepted a file Validate refuses: %v\n%s", err, b)
		}
		if _, err := c.Ports(); err != nil {
			t.Fatalf("valid file, bad ports: %v", err)
		}
		if _, err := c.Sims(); err != nil {
			t.Fatalf("valid file, bad sims: %v", err)
		}
		c.Throttle()
		if s := c.ProxyConfig(); len(s.AllowPorts) == 0 || s.MaxAssociations < 1 || s.MaxConnects < 1 {
			t.Fatalf("valid file, proxy settings %+v", s)
		}
	})
}
