package circuit

import (
	"bytes"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/capture"
	"github.com/fairgrid/fairgrid/capture/capturetest"
	"github.com/fairgrid/fairgrid/lludp"
)

var (
	viewer = netip.MustParseAddrPort("192.0.2.10:50123")
	sim    = netip.MustParseAddrPort("192.0.2.20:9000")
	agent  = lludp.AgentData{AgentID: lludp.UUID{1, 2, 3}, SessionID: lludp.UUID{4, 5, 6}}
	t0     = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
)

// dgram is one datagram of a scripted exchange.
type dgram struct {
	at       time.Duration
	src, dst netip.AddrPort
	payload  []byte
}

// script builds a circuit's traffic: encode appends typed messages.
type script struct {
	t  *testing.T
	ds []dgram
}

func (s *script) add(at time.Duration, dir Direction, h lludp.Header, m lludp.Typed) {
	s.t.Helper()
	b, err := lludp.AppendMessage(nil, h, m, nil)
	if err != nil {
		s.t.Fatal(err)
	}
	src, dst := viewer, sim
	if dir == Down {
		src, dst = sim, viewer
	}
	s.ds = append(s.ds, dgram{at, src, dst, b})
}

// down sends an ObjectUpdate of the given sequence and flags from the sim.
func (s *script) down(at time.Duration, seq uint32, flags lludp.Flags) {
	s.add(at, Down, lludp.Header{Flags: flags | lludp.FlagReliable, Sequence: seq}, &lludp.ImprovedTerseObjectUpdate{Objects: []lludp.TerseObjectData{{Data: make([]byte, 60)}}})
}

// pcapBytes writes the datagrams as a pcap or pcapng capture.
func pcapBytes(t testing.TB, ds []dgram, ng bool) []byte {
	t.Helper()
	var cds []capturetest.Datagram
	for _, d := range ds {
		cds = append(cds, capturetest.Datagram{At: t0.Add(d.at), Src: d.src, Dst: d.dst, Payload: d.payload})
	}
	format := capturetest.Pcap
	if ng {
		format = capturetest.Pcapng
	}
	var out bytes.Buffer
	if err := capturetest.Write(&out, format, cds); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// track reads a capture through a Tracker and returns it.
func track(t testing.TB, data []byte, cfg Config) (*Tracker, error) {
	t.Helper()
	r, err := capture.NewReader(bytes.NewReader(data), nil)
	if err != nil {
		t.Fatal(err)
	}
	return trackWith(NewTracker(cfg), r)
}

// TestCircuitMeasurement scripts a login and a lossy stream and checks
// every counter, from pcap and from pcapng alike.
func TestCircuitMeasurement(t *testing.T) {
	s := &script{t: t}
	ms := time.Millisecond
	s.add(0, Up, lludp.Header{Flags: lludp.FlagReliable, Sequence: 1}, &lludp.UseCircuitCode{Code: 77, SessionID: agent.SessionID, AgentID: agent.AgentID})
	s.add(1*ms, Down, lludp.Header{Sequence: 0}, &lludp.PacketAck{IDs: []uint32{1}}) // OpenSim's out-of-band ack
	s.add(2*ms, Up, lludp.Header{Flags: lludp.FlagReliable, Sequence: 2}, &lludp.CompleteAgentMovement{AgentData: agent, CircuitCode: 77})
	// Sim stream 1..30 every 10 ms from 10 ms, with: 5 lost; 8 and 9 swapped;
	// 12 lost then resent after declared; 15 lost and resent while pending;
	// 20 spuriously resent; 22 duplicated; 26 and 27 lost together.
	lost := map[uint32]bool{5: true, 12: true, 15: true, 26: true, 27: true}
	order := []uint32{1, 2, 3, 4, 6, 7, 9, 8, 10, 11, 13, 14, 16, 15, 17, 18, 19, 20, 21, 22, 23, 24, 25, 28, 29, 30}
	at := 10 * ms
	for _, seq := range order {
		flags := lludp.Flags(0)
		if seq == 15 {
			flags = lludp.FlagResent
		}
		if lost[seq] && seq != 15 {
			continue
		}
		s.down(at, seq, flags)
		at += 10 * ms
		switch seq {
		case 16:
			s.down(at, 12, lludp.FlagResent) // late resend of a declared loss
			at += 10 * ms
		case 20:
			s.down(at, 20, lludp.FlagResent) // spurious
			at += 10 * ms
		case 22:
			s.down(at, 22, 0) // duplicate
			at += 10 * ms
		}
	}
	// Pings: the viewer's, answered after 40 ms (an RTT sample); the sim's,
	// answered by the viewer after 1 ms (a local delay, kept apart).
	s.add(400*ms, Up, lludp.Header{Sequence: 3}, &lludp.StartPingCheck{PingID: 7})
	s.add(440*ms, Down, lludp.Header{Sequence: 31}, &lludp.CompletePingCheck{PingID: 7})
	s.add(500*ms, Down, lludp.Header{Sequence: 32}, &lludp.StartPingCheck{PingID: 1})
	s.add(501*ms, Up, lludp.Header{Sequence: 4}, &lludp.CompletePingCheck{PingID: 1})
	// The viewer's reliable AgentThrottle, acked by the sim 300 ms later.
	s.add(600*ms, Up, lludp.Header{Flags: lludp.FlagReliable | lludp.FlagZeroCoded, Sequence: 5}, &lludp.AgentThrottle{AgentData: agent, CircuitCode: 77, Throttles: [7]float32{1, 2, 3, 4, 5, 6, 7}})
	s.add(900*ms, Down, lludp.Header{Sequence: 33}, &lludp.PacketAck{IDs: []uint32{5}})
	// An AgentThrottle with wrong IDs from the viewer's port is not the viewer's.
	s.add(950*ms, Up, lludp.Header{Sequence: 5}, &lludp.AgentThrottle{AgentData: lludp.AgentData{AgentID: lludp.UUID{9}, SessionID: lludp.UUID{9}}})

	var results [2]DirStats
	for i, ng := range []bool{false, true} {
		tr, err := track(t, pcapBytes(t, s.ds, ng), Config{})
		if err != nil {
			t.Fatal(err)
		}
		cs := tr.Circuits()
		if len(cs) != 1 {
			t.Fatalf("%d circuits", len(cs))
		}
		c := cs[0]
		if c.Key != (Key{Viewer: viewer, Sim: sim}) || c.AgentID != agent.AgentID || c.SessionID != agent.SessionID || c.CircuitCode != 77 {
			t.Errorf("circuit %v identity %+v", c.Key, c.Identity)
		}
		if c.UpSequence != 5 || c.ViewerThrottle != [7]float32{1, 2, 3, 4, 5, 6, 7} || !c.ViewerThrottleAt.Equal(t0.Add(600*ms)) {
			t.Errorf("up seq %d, viewer throttle %v at %v", c.UpSequence, c.ViewerThrottle, c.ViewerThrottleAt)
		}
		down := c.Stats(Down)
		want := DirStats{
			// 26 numbers, 3 extra copies, 4 control messages.
			Packets: 26 + 3 + 4, Reliable: 29, Resent: 3, SpuriousResends: 1, Duplicates: 1, Reordered: 1,
			Lost: 5, OutOfBand: 1,
		}
		if down.Packets != want.Packets || down.Reliable != want.Reliable || down.Resent != want.Resent ||
			down.SpuriousResends != want.SpuriousResends || down.Duplicates != want.Duplicates || down.Reordered != want.Reordered ||
			down.Lost != want.Lost || down.OutOfBand != want.OutOfBand {
			t.Errorf("down stats %+v\nwant       %+v", down, want)
		}
		// Losses within one RTT (100 ms before the first ping) are one
		// event: 5 at 45 ms, 12 at 105 ms and 15 at 125 ms; 26–27 at ~265 ms.
		if down.LossEvents != 2 {
			t.Errorf("%d loss events, want 2 (5, 12 and 15 within 100 ms; 26–27)", down.LossEvents)
		}
		if c.RTT().Samples() != 1 || c.RTT().SRTT() != 40*ms || c.LocalRTT().SRTT() != ms {
			t.Errorf("rtt %v (%d samples), local %v", c.RTT().SRTT(), c.RTT().Samples(), c.LocalRTT().SRTT())
		}
		// Ack samples: UseCircuitCode acked at once (OpenSim's out-of-band
		// ack), the AgentThrottle after 300 ms of ack delay.
		if a := c.AckRTT(); a.Samples() != 2 || a.Min() != ms || a.Latest() != 300*ms {
			t.Errorf("ack rtt: %d samples, min %v, latest %v", a.Samples(), a.Min(), a.Latest())
		}
		if down.ByCategory[lludp.Task] == 0 || down.ByCategory[lludp.NumCategories] == 0 || down.ByChannel[lludp.ChannelAvatar] == 0 {
			t.Errorf("by category %v, by channel %v", down.ByCategory, down.ByChannel)
		}
		results[i] = down
	}
	results[0].LossEventRate, results[1].LossEventRate = 0, 0
	if results[0] != results[1] {
		t.Errorf("pcap and pcapng differ:\n%+v\n%+v", results[0], results[1])
	}
}

// TestNewTrackerConcurrent: trackers are built at once by the daemon's and
// the proxy's tests and by the synthetic viewers; building one must not
// write shared state (the race detector finds it when it does).
func TestNewTrackerConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() { NewTracker(Config{}) })
	}
	wg.Wait()
}
