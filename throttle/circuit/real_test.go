package circuit

import (
	"os"
	"path/filepath"
	"testing"
	"time"
	"unsafe"

	"github.com/fairgrid/fairgrid/capture"
)

func realCapture(t testing.TB) string {
	t.Helper()
	p, err := filepath.Abs("../../../shared/testdata/real/opensim-0922-captures/testclient-2x-10min.pcap")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Skipf("real capture not found at %s (it lives in ../shared beside the repository): %v", p, err)
	}
	return p
}

// TestRealOpenSimCapture: ten minutes of a real OpenSim 0.9.2.2 region
// serving two libomv TestClients on loopback (SOURCES.md): nothing was
// lost, about 450 resends per client were all spurious, 264 ping pairs per
// client measure about 0.3 ms.
func TestRealOpenSimCapture(t *testing.T) {
	r, err := capture.OpenFile(realCapture(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tr, err := trackReader(r)
	if err != nil {
		t.Fatal(err)
	}
	st := r.Stats()
	if st.Datagrams != 24153 || st.SkippedBy(capture.SkipNotUDP) == 0 {
		t.Errorf("reader: %+v; SOURCES.md says 24,153 LLUDP datagrams besides the TCP login", st)
	}
	if tr.InvalidTotal() != 0 || tr.NotCircuit() != 0 {
		t.Errorf("%d invalid, %d outside circuits", tr.InvalidTotal(), tr.NotCircuit())
	}
	cs := tr.Circuits()
	if len(cs) != 2 {
		t.Fatalf("%d circuits, want 2", len(cs))
	}
	for _, c := range cs {
		down := c.Stats(Down)
		t.Logf("%v agent %v: down %d packets, %d resent (%d spurious), %d lost; %d pings, RTT %v; local %v",
			c.Key, c.AgentID, down.Packets, down.Resent, down.SpuriousResends, down.Lost, c.RTT().Samples(), c.RTT().SRTT(), c.LocalRTT().SRTT())
		if c.Key.Sim.String() != "127.0.0.1:9000" || !c.Known() {
			t.Errorf("%v: sim side or identity wrong (%+v)", c.Key, c.Identity)
		}
		if down.Lost != 0 || down.LossEvents != 0 || down.Duplicates != 0 {
			t.Errorf("%v: %d lost, %d loss events, %d duplicates on loopback", c.Key, down.Lost, down.LossEvents, down.Duplicates)
		}
		if down.SpuriousResends != down.Resent || down.Resent < 400 || down.Resent > 500 {
			t.Errorf("%v: %d resent, %d spurious; all of about 450 should be spurious", c.Key, down.Resent, down.SpuriousResends)
		}
		if c.RTT().Samples() != 264 || c.RTT().SRTT() > 2*time.Millisecond {
			t.Errorf("%v: %d ping pairs, SRTT %v", c.Key, c.RTT().Samples(), c.RTT().SRTT())
		}
		if c.LocalRTT().Samples() == 0 {
			t.Errorf("%v: the simulator's own pings were not kept apart", c.Key)
		}
	}
	if cs[0].AgentID == cs[1].AgentID {
		t.Error("both circuits have the same agent")
	}
}

// TestCircuitSize: a circuit's state stays within 4 KiB, a candidate's
// (the Circuit without its measures) within 384 bytes.
func TestCircuitSize(t *testing.T) {
	candidate, circuit := unsafe.Sizeof(Circuit{}), unsafe.Sizeof(Circuit{})+unsafe.Sizeof(measures{})
	t.Logf("per-circuit state: %d bytes; per candidate: %d", circuit, candidate)
	if circuit > 4096 || candidate > 384 {
		t.Errorf("a circuit takes %d bytes, a candidate %d: more than 4 KiB, 384 bytes", circuit, candidate)
	}
}
