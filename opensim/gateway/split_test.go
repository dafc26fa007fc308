package gateway

import (
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/opensim"
	"github.com/fairgrid/fairgrid/ratecalc"
	"github.com/fairgrid/fairgrid/throttle"
)

// TestSplitFollowsDemand (issue 33): a region sending terrain alone, the
// gateway's AgentThrottle towards it gives Land most of the circuit's
// rate after a decision, where the viewer's own split gives it an eighth;
// with Control.FixedSplit it keeps the viewer's proportions. The
// gateway's own scheduler gets the same split.
func TestSplitFollowsDemand(t *testing.T) {
	for _, fixed := range []bool{false, true} {
		t0 := time.Unix(1000, 0)
		c := newTestCore(t, Config{Control: throttle.Config{Controller: throttle.TFRC, Interval: time.Second, FixedSplit: fixed}})
		addr := viewerAddr(192, 0, 2, 1, 1)
		v := login(t, c, addr, 1, t0)
		establish(t, c, v, t0)
		ask := ratecalc.RateFromBits(1_500_000)
		thr := &lludp.AgentThrottle{AgentData: lludp.AgentData{AgentID: lludp.UUID{1, 1}, SessionID: lludp.UUID{2, 1}}, Throttles: throttle.ViewerSplit(ask)}
		c.FromViewer(0, addr, datagram(t, 4, lludp.FlagReliable, thr), t0)
		c.FromViewer(0, addr, datagram(t, 5, 0, &lludp.AgentUpdate{}), t0)
		// Five seconds of terrain: 16 kB/s of LayerData, drained as it
		// comes.
		var asserts []Assert
		out := make([]Out, 64)
		seq := uint32(10)
		for ms := 0; ms <= 5000; ms += 50 {
			now := t0.Add(time.Duration(ms) * time.Millisecond)
			seq++
			c.FromRegion(v, regionDatagram(lludp.LayerDataID, seq, lludp.FlagReliable, 800), now)
			c.Next(out, now)
			asserts, _ = c.Tick(now, asserts, nil)
		}
		if len(asserts) == 0 {
			t.Fatalf("fixed %v: no AgentThrottle asserted", fixed)
		}
		var p lludp.Packet
		var got lludp.AgentThrottle
		last := asserts[len(asserts)-1]
		if err := p.DecodeFromBytes(last.B); err != nil || p.Unmarshal(&got) != nil {
			t.Fatalf("assert does not decode: %v", err)
		}
		land := float64(got.Throttles[lludp.Land]) / got.Total()
		t.Logf("fixed %v: %d asserts, the last %.0f bit/s with Land %.2f of it", fixed, len(asserts), got.Total(), land)
		if !fixed && land < 0.5 {
			t.Errorf("Land has %.2f of the assert with only terrain arriving: the split must follow demand", land)
		}
		if fixed && land > 0.2 {
			t.Errorf("Land has %.2f of a fixed split: want the viewer's proportion", land)
		}
		channels, total, ok := c.sched.Rates(v.sched)
		layer := float64(channels[opensim.Layer]) / float64(total)
		if !ok || !fixed && layer < 0.5 || fixed && layer > 0.2 {
			t.Errorf("fixed %v: the gateway's scheduler gives Layer %.2f of %d B/s", fixed, layer, total)
		}
	}
}
