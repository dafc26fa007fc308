package throttle

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"net/netip"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/internal/lifecycletest"
	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/throttle/circuit"
)

// recordHandler keeps every log record.
type recordHandler struct {
	mu      sync.Mutex
	records []slog.Record
}

func (h *recordHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *recordHandler) WithGroup(string) slog.Handler            { return h }
func (h *recordHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, r.Clone())
	return nil
}

// take returns the records since the last call.
func (h *recordHandler) take() []slog.Record {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := h.records
	h.records = nil
	return out
}

// spoofed sends one datagram from a fake viewer endpoint to the sim.
func spoofed(t *testing.T, l *Loop, at time.Duration, src netip.AddrPort, seq uint32, m lludp.Typed) {
	b, err := lludp.AppendMessage(nil, lludp.Header{Flags: lludp.FlagReliable, Sequence: seq}, m, nil)
	if err != nil {
		t.Fatal(err)
	}
	l.Observe(lludp.Datagram{At: t0.Add(at), Src: src, Dst: simEP, Payload: b})
}

// TestFlood (issue 11, item 3): over ten seconds of virtual time, 10,000
// spoofed endpoints each send one UseCircuitCode with random IDs, and 3,000
// more hold fake circuits of three datagrams: with random IDs and no
// answer from the simulator, with IDs but an answer and too few
// datagrams, and with no IDs at all. Beside them a real viewer talks to
// the simulator. The loop holds at most MaxCircuits circuits, its heap
// stays bounded, the real circuit gets its requests, no request goes out
// in a fake identity, and the log has one summary line per interval and
// the real circuit's decisions, nothing per fake circuit.
func TestFlood(t *testing.T) {
	const maxCircuits = 64
	logs := &recordHandler{}
	l, err := New(Config{Sims: []netip.AddrPort{simEP}, MaxCircuits: maxCircuits, Interval: time.Second}, slog.New(logs))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(11, 1))
	uuid := func() lludp.UUID {
		var u lludp.UUID
		for i := range u {
			u[i] = byte(rng.Uint32())
		}
		return u
	}
	real := &feed{t: t, l: l}
	real.send(0, true, lludp.FlagReliable, &lludp.UseCircuitCode{Code: 7, SessionID: agent.SessionID, AgentID: agent.AgentID})
	real.send(time.Millisecond, true, lludp.FlagReliable, &lludp.CompleteAgentMovement{AgentData: agent, CircuitCode: 7})
	realKey := circuit.Key{Viewer: viewerEP, Sim: simEP}

	before := lifecycletest.HeapInUse()
	fakes := 0
	fake := func() netip.AddrPort {
		fakes++
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, byte(fakes >> 16), byte(fakes >> 8), byte(fakes)}), uint16(20000+fakes%40000))
	}
	realRequests := 0
	for second := range 10 {
		base := time.Duration(second) * time.Second
		for i := range 1000 {
			at := base + time.Duration(i)*time.Millisecond
			// The real viewer, in time order with the flood: its
			// avatar's updates and the sim's stream.
			if i%100 == 0 {
				real.send(at, true, lludp.FlagZeroCoded, &lludp.AgentUpdate{AgentData: agent})
			}
			if i%10 == 0 {
				real.stream(at, 1)
			}
			spoofed(t, l, at, fake(), 1, &lludp.UseCircuitCode{Code: rng.Uint32(), SessionID: uuid(), AgentID: uuid()})
			if i%10 != 0 {
				continue
			}
			// 100 fake circuits a second of each kind.
			ids := lludp.AgentData{AgentID: uuid(), SessionID: uuid()}
			src := fake()
			spoofed(t, l, at, src, 1, &lludp.UseCircuitCode{Code: 1, SessionID: ids.SessionID, AgentID: ids.AgentID})
			spoofed(t, l, at, src, 2, &lludp.AgentUpdate{AgentData: ids})
			spoofed(t, l, at, src, 3, &lludp.AgentUpdate{AgentData: ids})

			src = fake()
			spoofed(t, l, at, src, 1, &lludp.UseCircuitCode{Code: 1, SessionID: ids.SessionID, AgentID: ids.AgentID})
			spoofed(t, l, at, src, 2, &lludp.AgentUpdate{AgentData: ids})
			answer, _ := lludp.AppendMessage(nil, lludp.Header{Sequence: 1}, &lludp.StartPingCheck{PingID: 1}, nil)
			l.Observe(lludp.Datagram{At: t0.Add(at), Src: simEP, Dst: src, Payload: answer})

			src = fake()
			for seq := range uint32(3) {
				spoofed(t, l, at, src, seq+1, &lludp.StartPingCheck{PingID: uint8(seq)})
			}
		}
		now := t0.Add(base + time.Second)
		for _, r := range l.Tick(now) {
			if r.Circuit != realKey || r.Agent != agent {
				t.Fatalf("a request in a fake identity: %+v", r)
			}
			realRequests++
		}
		if n := len(l.Keys()); n > maxCircuits {
			t.Fatalf("%d circuits after second %d; the limit is %d", n, second+1, maxCircuits)
		}
		if n := len(l.states); n > maxCircuits {
			t.Fatalf("the loop keeps state for %d circuits after second %d", n, second+1)
		}
		if _, _, ok := l.Circuit(realKey); !ok {
			t.Fatalf("the real circuit was evicted in second %d", second+1)
		}
		// One summary line per interval; the real circuit's decision may
		// add one. Nothing per fake circuit.
		summaries := 0
		for _, r := range l.log.Handler().(*recordHandler).take() {
			switch r.Message {
			case "interval":
				summaries++
			case "throttle decision":
			default:
				t.Errorf("second %d: a log line %q", second+1, r.Message)
			}
		}
		if summaries != 1 {
			t.Errorf("second %d: %d summary lines, want 1", second+1, summaries)
		}
	}
	grown := int64(lifecycletest.HeapInUse()) - int64(before)
	runtime.KeepAlive(l)
	// 64 circuits of a few KiB and the tracker's bounded candidate table
	// (DefaultMaxCandidates of about 400 B); 13,000 tracked circuits
	// would be over 40 MB.
	if grown > 12<<20 {
		t.Errorf("the heap grew by %d MiB under the flood", grown>>20)
	}
	st := l.Stats()
	if realRequests < 3 || st.Evicted == 0 || st.Implausible == 0 || st.Folded == 0 {
		t.Errorf("%d requests for the real circuit, stats %+v; want at least 3, and evictions, implausible circuits and folded endpoints counted", realRequests, st)
	}
	t.Logf("%d fake endpoints; heap grew %d KiB; %d real requests; stats %+v", fakes, grown>>10, realRequests, st)
}
