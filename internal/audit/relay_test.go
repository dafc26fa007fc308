package audit

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/capture"
	"github.com/fairgrid/fairgrid/lludp"
)

// relayed reads the real capture and returns its datagrams as a capture
// on the host of a relay would hold them: each one on the viewer's leg
// (viewer to relay, at relay) and again on the relay's leg (relay to the
// simulator), 1 ms later, as fairgrid proxy or link forwards them.
func relayed(t *testing.T, relay netip.AddrPort) []lludp.Datagram {
	t.Helper()
	ds, err := capture.ReadFile(realCapture(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []lludp.Datagram
	for _, d := range ds {
		leg := d
		leg.At = d.At.Add(time.Millisecond)
		if d.Dst.Port() == 9000 { // up: the viewer sends to the relay, the relay to the simulator
			out = append(out, lludp.Datagram{At: d.At, Src: d.Src, Dst: relay, Payload: d.Payload})
			leg.Src = netip.AddrPortFrom(relay.Addr(), relay.Port()+d.Src.Port()%100)
		} else { // down: the simulator sends to the relay, the relay to the viewer
			out = append(out, lludp.Datagram{At: d.At, Src: d.Src, Dst: netip.AddrPortFrom(relay.Addr(), relay.Port()+d.Dst.Port()%100), Payload: d.Payload})
			leg.Src = relay
		}
		out = append(out, leg)
	}
	return out
}

// TestRelayLegsWarning: a capture holding both legs of a relay is said to
// count each session twice, with the flags that keep one leg; with --sim
// one leg is audited and the warning is gone.
func TestRelayLegsWarning(t *testing.T) {
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
