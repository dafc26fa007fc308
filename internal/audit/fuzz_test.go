package audit

import (
	"bytes"
	"os"
	"testing"

	"github.com/fairgrid/fairgrid/capture"
)

// FuzzAudit feeds arbitrary bytes to the audit's whole path: the capture
// reader, the tracker, the bins and the report. It must never panic, and
// what it reports must add up: no more datagrams measured than read, and
// every stop said with its place.
func FuzzAudit(f *testing.F) {
	ds := smallSession(f)
	full := pcapOf(f, ds)
	f.Add(full)
	f.Add(full[:len(full)/2])
	f.Add(full[:24])
	if b, err := os.ReadFile(realCapturePath()); err == nil {
		f.Add(b[:min(len(b), 64<<10)]) // real OpenSim traffic
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := capture.NewReader(bytes.NewReader(b), nil)
		if err != nil {
			return
		}
		a, err := New(Config{Series: true})
		if err != nil {
			t.Fatal(err)
		}
		a.Read([]Input{{Name: "fuzz", Reader: r}}, nil)
		rep := a.Report()
		f := rep.Files[0]
		var measured, messages int64
		for _, c := range rep.Circuits {
			measured += c.Packets
			if c.Packets <= 0 || c.DurationS < 0 || c.LossRate < 0 || c.LossRate > 1 {
				t.Fatalf("circuit %+v", c)
			}
		}
		for _, m := range rep.Messages {
			messages += m.Packets
		}
		if measured > f.Datagrams || messages > f.Datagrams {
			t.Fatalf("%d datagrams read, %d measured, %d counted by message", f.Datagrams, measured, messages)
		}
		if f.StoppedAt != nil && (f.StopReason == "" || *f.StoppedAt < 0 || *f.StoppedAt > int64(len(b))) {
			t.Fatalf("stopped at %d of %d: %q", *f.StoppedAt, len(b), f.StopReason)
		}
	})
}
