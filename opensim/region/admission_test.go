package region

import (
	"math"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// TestPrefixLimiter: the new-circuit budget is per /24 or /64, refills at
// its rate on the time it is given (never backwards), and the table stays
// within its bound, evicting the least recently used prefix.
func TestPrefixLimiter(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	ms := time.Millisecond
	type step struct {
		addr string
		at   time.Duration
		want bool
	}
	tests := []struct {
		name      string
		max       int
		steps     []step
		prefixes  int
		evictions uint64
	}{
		{"a burst of 2, then nothing until a token refills", 8, []step{
			{"192.0.2.1", 0, true}, {"192.0.2.1", 0, true}, {"192.0.2.1", 0, false},
			{"192.0.2.1", 50 * ms, false}, {"192.0.2.1", 120 * ms, true}, {"192.0.2.1", 120 * ms, false},
		}, 1, 0},
		{"one /24 shares a budget, the next /24 has its own", 8, []step{
			{"192.0.2.1", 0, true}, {"192.0.2.200", 0, true}, {"192.0.2.77", 0, false},
			{"192.0.3.1", 0, true},
		}, 2, 0},
		{"one /64 shares a budget; an IPv4-mapped address is its IPv4 /24", 8, []step{
			{"2001:db8::1", 0, true}, {"2001:db8::ffff:1", 0, true}, {"2001:db8::2", 0, false},
			{"2001:db8:0:1::1", 0, true},
			{"192.0.2.1", 0, true}, {"::ffff:192.0.2.9", 0, true}, {"192.0.2.2", 0, false},
		}, 3, 0},
		{"time going backwards refills nothing", 8, []step{
			{"192.0.2.1", time.Second, true}, {"192.0.2.1", time.Second, true},
			{"192.0.2.1", 0, false}, {"192.0.2.1", time.Second + 90*ms, false}, {"192.0.2.1", time.Second + 120*ms, true},
		}, 1, 0},
		{"a full table evicts the least recently used; a drained entry's eviction is counted", 2, []step{
			{"10.0.1.1", 0, true}, {"10.0.1.1", 0, true}, // drained
			{"10.0.2.1", 0, true},
			{"10.0.3.1", 0, true},           // evicts 10.0.1/24, drained: counted
			{"10.0.1.1", 0, true},           // back with a fresh burst; evicts 10.0.2/24 (1 token short)
			{"10.0.4.1", time.Second, true}, // evicts 10.0.3/24, refilled by now: not counted
		}, 2, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newPrefixLimiter(10, 2, tt.max)
			for i, s := range tt.steps {
				if got := l.allow(netip.MustParseAddr(s.addr), t0.Add(s.at)); got != s.want {
					t.Errorf("step %d (%s at %v): allowed %v, want %v", i, s.addr, s.at, got, s.want)
				}
				if l.len() > tt.max || l.lru.Len() != l.len() {
					t.Fatalf("step %d: %d prefixes, %d in the LRU list, bound %d", i, l.len(), l.lru.Len(), tt.max)
				}
			}
			if l.len() != tt.prefixes || l.evicted != tt.evictions {
				t.Errorf("%d prefixes, %d evictions; want %d, %d", l.len(), l.evicted, tt.prefixes, tt.evictions)
			}
		})
	}
}

// TestAdmissionConfig: zero fields take the documented defaults; values
// that cannot work are refused by New, each named.
func TestAdmissionConfig(t *testing.T) {
	got := AdmissionConfig{}.withDefaults()
	want := AdmissionConfig{MaxPending: 1024, PendingTimeout: 10 * time.Second, CircuitRate: 50, CircuitBurst: 1000, MaxPrefixes: 16384}
	if got != want {
		t.Errorf("defaults %+v, want %+v", got, want)
	}
	for _, tt := range []struct {
		name string
		cfg  AdmissionConfig
		want string
	}{
		{"negative cap", AdmissionConfig{MaxPending: -1}, "max pending circuits -1"},
		{"negative timeout", AdmissionConfig{PendingTimeout: -time.Second}, "pending timeout -1s"},
		{"negative rate", AdmissionConfig{CircuitRate: -5}, "circuit rate -5"},
		{"infinite rate", AdmissionConfig{CircuitRate: math.Inf(1)}, "circuit rate +Inf"},
		{"negative burst", AdmissionConfig{CircuitBurst: -1}, "circuit burst -1"},
		{"negative table", AdmissionConfig{MaxPrefixes: -1}, "max prefixes -1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(Config{Listen: netip.MustParseAddrPort("127.0.0.1:0"), Admission: tt.cfg}, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one naming %q", err, tt.want)
			}
		})
	}
}

// TestInboundBudget: the bytes between the reader and a stalled loop stay
// within maxInboundBytes; beyond it datagrams are dropped and counted, and
// what the loop handles makes room again.
func TestInboundBudget(t *testing.T) {
	var b inboundBudget
	const size = 60_000
	taken := 0
	for b.take(size) {
		taken++
		if taken > maxInboundBytes/size+1 {
			t.Fatalf("%d datagrams of %d bytes queued, bound %d bytes", taken, size, maxInboundBytes)
		}
	}
	if taken != maxInboundBytes/size || b.dropped.Load() != 1 || b.bytes.Load() != int64(taken*size) {
		t.Errorf("%d taken, %d dropped, %d bytes queued", taken, b.dropped.Load(), b.bytes.Load())
	}
	if !b.take(maxInboundBytes-taken*size) || b.take(1) {
		t.Errorf("the last bytes of the budget: %d queued", b.bytes.Load())
	}
	b.release(size)
	if !b.take(size) || b.dropped.Load() != 2 {
		t.Errorf("after a release: %d queued, %d dropped", b.bytes.Load(), b.dropped.Load())
	}
}
