package scenario

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/fairgrid/fairgrid/internal/audit"
	"github.com/fairgrid/fairgrid/internal/audit/render"
	"github.com/fairgrid/fairgrid/internal/lab/link"
	"github.com/fairgrid/fairgrid/lludp"
)

// The addresses a capture gives the viewer's datagrams, which cross the
// bottleneck as bare UDP payloads (link.FlowConfig.UDP): the client and
// server hosts of tcpflow's net, and the ports of a viewer and of a region
// (OpenSim's default 9000).
var (
	pcapViewer = netip.MustParseAddrPort("10.77.0.1:13000")
	pcapRegion = netip.MustParseAddrPort("10.77.0.2:9000")
)

// pcapFile writes the viewer's and the flows' packets as a capture on the
// viewer's host would see them (link.NewClientPcapWriter): what it sends
// as it leaves, what it receives as the bottleneck delivers it, so the
// audit's ping RTT is the round trip (a capture of what the bottleneck
// delivers both ways timed only the way up). The viewers' datagrams cross
// the bottleneck between the relay's loopback sockets; the capture gives
// them the hosts of tcpflow's net instead, beside the TCP flows, each
// viewer a port of its own from pcapViewer's and the region pcapRegion,
// so that fairgrid audit finds every circuit at its default ports.
type pcapFile struct {
	f *os.File
	w *link.PcapWriter

	mu      sync.Mutex
	viewers map[netip.AddrPort]netip.AddrPort // the relay's viewer endpoint → the capture's
}

// fileName turns a run's name into a file name.
func fileName(name string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '.':
			return r
		}
		return '_'
	}, name)
}

func createPcap(dir, name string) (*pcapFile, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("capture: %w", err)
	}
	f, err := os.Create(filepath.Join(dir, fileName(name)+".pcap"))
	if err != nil {
		return nil, fmt.Errorf("capture: %w", err)
	}
	w, err := link.NewClientPcapWriter(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("capture: %w", err)
	}
	return &pcapFile{f: f, w: w, viewers: map[netip.AddrPort]netip.AddrPort{}}, nil
}

func (p *pcapFile) tap(e link.Event) {
	if e.UDP != (link.UDPEndpoints{}) {
		viewer := e.UDP.Src
		if e.Dir == link.Down {
			viewer = e.UDP.Dst
		}
		p.mu.Lock()
		as, ok := p.viewers[viewer]
		if !ok {
			as = netip.AddrPortFrom(pcapViewer.Addr(), pcapViewer.Port()+uint16(len(p.viewers)))
			p.viewers[viewer] = as
		}
		p.mu.Unlock()
		e.UDP = link.UDPEndpoints{Src: as, Dst: pcapRegion}
		if e.Dir == link.Down {
			e.UDP.Src, e.UDP.Dst = e.UDP.Dst, e.UDP.Src
		}
	}
	p.w.Tap(e)
}

func (p *pcapFile) close() error {
	if err := errors.Join(p.w.Flush(), p.f.Close()); err != nil {
		return fmt.Errorf("capture: %w", err)
	}
	return nil
}

// viewerLog keeps the viewer's datagrams as its host saw them, for the
// audit's report after the run.
type viewerLog struct {
	mu sync.Mutex
	ds []lludp.Datagram
}

func (l *viewerLog) add(d lludp.Datagram) {
	l.mu.Lock()
	l.ds = append(l.ds, d)
	l.mu.Unlock()
}

// writeAudit audits the viewer's circuit with fairgrid audit's engine and
// writes its HTML report.
func (l *viewerLog) writeAudit(dir, name string) error {
	r, err := l.audit(fileName(name))
	if err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, fileName(name)+".html"))
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	err = render.WriteHTML(f, r)
	return errors.Join(err, f.Close())
}

// audit is the audit's report of the datagrams kept, as one file called
// name, with the per-second series the HTML report's figures draw.
func (l *viewerLog) audit(name string) (*audit.Report, error) {
	l.mu.Lock()
	ds := l.ds
	l.mu.Unlock()
	r, err := audit.Datagrams(audit.Config{Series: true}, name, ds)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	return r, nil
}
