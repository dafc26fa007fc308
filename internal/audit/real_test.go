package audit

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/fairgrid/fairgrid/capture"
	"github.com/fairgrid/fairgrid/throttle"
)

// realCapture is the OpenSim 0.9.2.2 capture of two TestClients on
// loopback (../shared/testdata/real/SOURCES.md): nothing lost, every
// resend spurious, 264 ping pairs per client at about 0.3–0.7 ms.
func realCapture(t testing.TB) string {
	t.Helper()
	p := realCapturePath()
	if _, err := os.Stat(p); err != nil {
		t.Skipf("real capture not found at %s (it lives in ../shared beside the repository): %v", p, err)
	}
	return p
}

func realCapturePath() string {
	p, _ := filepath.Abs("../../../shared/testdata/real/opensim-0922-captures/testclient-2x-10min.pcap")
	return p
}

// auditFiles audits captures read from disk, merged as the command does.
func auditFiles(t testing.TB, cfg Config, paths ...string) *Report {
	t.Helper()
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var inputs []Input
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		cr := &CountingReader{R: f}
		r, err := capture.NewReader(cr, cfg.Ports)
		if err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, Input{Name: filepath.Base(p), Reader: r, Counter: cr})
	}
	a.Read(inputs, nil)
	return a.Report()
}

func TestRealCapture(t *testing.T) {
	path := realCapture(t)
	for _, segment := range []throttle.Segment{throttle.SegmentMean, throttle.SegmentNominal} {
		t.Run(segment.String(), func(t *testing.T) {
			r := auditFiles(t, Config{Segment: segment, Series: true}, path)
			if len(r.Circuits) != 4 {
				t.Fatalf("%d circuit rows, want 2 circuits × 2 directions", len(r.Circuits))
			}
			if r.Segment != segment.String() {
				t.Errorf("segment %q, want %q", r.Segment, segment)
			}
			for _, c := range r.Circuits {
				name := c.Circuit + " " + c.Direction
				if c.Lost != 0 || c.LossEvents != 0 || c.LossRate != 0 {
					t.Errorf("%s: lost %d in %d events: loopback loses nothing", name, c.Lost, c.LossEvents)
				}
				if c.SpuriousResends != c.Resent {
					t.Errorf("%s: %d of %d resends spurious, want all", name, c.SpuriousResends, c.Resent)
				}
				if c.Direction == "down" && (c.Resent < 400 || c.Resent > 500) {
					t.Errorf("%s: %d resends, SOURCES.md says about 450", name, c.Resent)
				}
				if c.RTTMs == nil || *c.RTTMs <= 0 || *c.RTTMs > 5 || c.RTTSamples < 250 {
					t.Errorf("%s: RTT %v ms from %d ping pairs, want about 0.3 ms from 264", name, c.RTTMs, c.RTTSamples)
				}
				if c.FairState != FairUnbounded || c.FairMeanS != nil || c.FairNominal != nil || c.Mathis != nil || c.ReceivedOverFair != nil {
					t.Errorf("%s: fair %q %v %v %v, want stated unbounded and no number", name, c.FairState, c.FairMeanS, c.FairNominal, c.Mathis)
				}
				if want := map[string]string{"down": "no loss: fair rate unbounded", "up": VerdictUp}[c.Direction]; c.Verdict != want {
					t.Errorf("%s: verdict %q", name, c.Verdict)
				}
				if c.AgentID == "" || c.SessionID == "" {
					t.Errorf("%s: identity not found", name)
				}
				if c.DurationS < 570 || c.DurationS > 590 || c.MeanBitPerS <= 0 || c.PeakBitPerS < c.MedianBitPerS || c.MedianBitPerS <= 0 {
					t.Errorf("%s: %.0f s, mean %.0f, median %.0f, peak %.0f bit/s", name, c.DurationS, c.MeanBitPerS, c.MedianBitPerS, c.PeakBitPerS)
				}
				var cats float64
				for _, v := range c.CategoryBitPerS {
					cats += v
				}
				if cats > c.MeanBitPerS*1.0001 {
					t.Errorf("%s: categories sum to %.0f bit/s, above the total %.0f", name, cats, c.MeanBitPerS)
				}
			}
			if r.JainIndex != nil {
				t.Errorf("Jain's index %v with no known fair rate, want none", *r.JainIndex)
			}
			var packets, seconds int64
			for _, c := range r.Circuits {
				packets += c.Packets
			}
			for _, s := range r.Seconds {
				seconds += s.Packets
				if s.FairBitPerS != nil || s.FairState != FairUnbounded {
					t.Fatalf("second %d: fair %q %v", s.UnixS, s.FairState, s.FairBitPerS)
				}
			}
			if seconds != packets {
				t.Errorf("seconds hold %d datagrams, the circuits %d", seconds, packets)
			}
			var msgs int64
			for _, m := range r.Messages {
				msgs += m.Packets
			}
			if f := r.Files[0]; f.Datagrams != 24153 || msgs != f.Datagrams || f.StoppedAt != nil || f.Bytes != 3301947 {
				t.Errorf("file %+v, messages count %d", f, msgs)
			}
			if len(r.Warnings) != 0 {
				t.Errorf("warnings %q", r.Warnings)
			}
		})
	}
}
