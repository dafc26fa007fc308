package audit

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/capture"
	"github.com/fairgrid/fairgrid/capture/capturetest"
	"github.com/fairgrid/fairgrid/lludp"
)

// relayed is the real capture as a capture on the host of a relay would
// hold it: both legs of each session (capturetest.Relay).
func relayed(t *testing.T, relay netip.AddrPort) []lludp.Datagram {
	t.Helper()
	ds, err := capture.ReadFile(realCapture(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	in := make([]capturetest.Datagram, len(ds))
	for i, d := range ds {
		in[i] = capturetest.Datagram(d)
	}
	var out []lludp.Datagram
	for _, d := range capturetest.Relay(in, relay, 9000) {
		out = append(out, lludp.Datagram(d))
	}
	return out
}

// TestRelayLegsWarning: a capture holding both legs of a relay is said to
// count each session twice, with the flags that keep one leg; with --sim
// one leg is audited and the warning is gone.
func TestRelayLegsWarning(t *testing.T) {
	t.Run("neighbouring regions are no relay", testNeighbours)
	relay := netip.MustParseAddrPort("127.0.0.1:9100")
	ds := relayed(t, relay)
	audit := func(cfg Config) *Report {
		r, err := Datagrams(cfg, "relay.pcap", ds)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r := audit(Config{})
	if len(r.Circuits) != 8 {
		t.Fatalf("%d circuit rows, want 2 agents × 2 legs × 2 directions", len(r.Circuits))
	}
	var warned []string
	for _, w := range r.Warnings {
		if strings.Contains(w, "both legs of a relay") {
			warned = append(warned, w)
		}
	}
	if len(warned) != 2 {
		t.Fatalf("%d relay warnings, want one per agent: %q", len(warned), r.Warnings)
	}
	for _, w := range warned {
		if !strings.Contains(w, "--sim 127.0.0.1:9100") || !strings.Contains(w, "--ports") {
			t.Errorf("the warning names no flag that keeps one leg: %s", w)
		}
	}
	for _, c := range r.Circuits {
		if c.Direction == "up" && c.Verdict != VerdictUp {
			t.Errorf("%s up: verdict %q, want %q", c.Circuit, c.Verdict, VerdictUp)
		}
	}
	// the flag the warning names keeps one leg, and nothing is lost of it
	one := audit(Config{Sims: []netip.AddrPort{relay}})
	if len(one.Circuits) != 4 {
		t.Errorf("--sim %s: %d circuit rows, want 2 agents × 2 directions", relay, len(one.Circuits))
	}
	for _, w := range one.Warnings {
		if strings.Contains(w, "relay") {
			t.Errorf("--sim %s still warns: %s", relay, w)
		}
	}
	if got, want := one.Files[0].Datagrams, int64(len(ds)); got != want {
		t.Errorf("file counts %d datagrams, %d were observed", got, want)
	}
}

// testNeighbours: one viewer socket in two regions at once, the real
// capture's circuits with their simulator moved to a second address for
// one of them, as a viewer's child agent in a neighbouring region: the
// same agent, no relay, no warning.
func testNeighbours(t *testing.T) {
	ds, err := capture.ReadFile(realCapture(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	sim, neighbour := netip.MustParseAddrPort("127.0.0.1:9000"), netip.MustParseAddrPort("127.0.0.1:9001")
	var both []lludp.Datagram
	for _, d := range ds {
		both = append(both, d)
		n := d
		n.At = d.At.Add(time.Millisecond)
		switch sim {
		case d.Src:
			n.Src = neighbour
		case d.Dst:
			n.Dst = neighbour
		}
		both = append(both, n)
	}
	r, err := Datagrams(Config{}, "neighbours.pcap", both)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Circuits) != 8 {
		t.Fatalf("%d circuit rows, want 2 agents × 2 regions × 2 directions", len(r.Circuits))
	}
	for _, w := range r.Warnings {
		if strings.Contains(w, "relay") {
			t.Errorf("a viewer in two regions is taken for a relay: %s", w)
		}
	}
}
