package region

import (
	"math"
	"net/netip"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/lludp"
)

// TestChildThrottleFactor: OpenSim's factor for the neighbour at each
// offset (ScenePresence.cs:4843-4855), worked by hand.
func TestChildThrottleFactor(t *testing.T) {
	for _, tc := range []struct {
		name   string
		pos    lludp.Vector3
		dx, dy int
		want   float32
	}{
		{"centre, east", lludp.Vector3{128, 128, 25}, 1, 0, 0.85},      // (−128, 128): 1 − 0.3·½
		{"centre, west", lludp.Vector3{128, 128, 25}, -1, 0, 0.85},     // x 384 wraps to 128
		{"centre, north-east", lludp.Vector3{128, 128, 0}, 1, 1, 0.85}, // (−128, −128)
		{"at the east edge, east", lludp.Vector3{250, 128, 0}, 1, 0, 1 - 0.3*(36+16384)/65536.0},
		{"at the east edge, west", lludp.Vector3{250, 128, 0}, -1, 0, 1 - 0.3*(62500+16384)/65536.0},
		{"at the neighbour's corner", lludp.Vector3{256, 0, 0}, 1, 0, 1},
		{"far corner", lludp.Vector3{0, 0, 0}, -1, -1, 0.4}, // (256, 256) does not wrap
		{"floor", lludp.Vector3{1000, 1000, 0}, 1, 0, 0.2},
	} {
		if got := ChildThrottleFactor(tc.pos, tc.dx, tc.dy); math.Abs(float64(got-tc.want)) > 1e-6 {
			t.Errorf("%s: factor %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestChildRegionThrottle: a child region applies its root's throttle
// times the factor to the agent's circuit, whether the circuit is open
// when the throttle comes or opens after; other agents keep the default.
func TestChildRegionThrottle(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	root, err := New(Config{Listen: netip.MustParseAddrPort("127.0.0.1:0"), Position: lludp.Vector3{250, 128, 25}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer root.conn.Close()
	child, err := New(Config{Listen: netip.MustParseAddrPort("127.0.0.1:0"), Child: &ChildConfig{OffsetX: -1}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer child.conn.Close()
	if err := root.AddChild(child); err != nil {
		t.Fatal(err)
	}
	open := func(agent byte, port uint16) *client {
		addr := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port)
		c := &client{addr: addr, login: Login{AgentID: lludp.UUID{agent}}, moved: true, unacked: map[uint32]*outPacket{}}
		c.id = child.sched.AddClient(now)
		child.clients[addr], child.byID[c.id] = c, c
		child.applyRootThrottle(c, now)
		return c
	}
	a, other := open(1, 1), open(2, 2)
	_, defaultTotal, _ := child.sched.Rates(other.id)
	req := lludp.ViewerSplit(1536 * 1024)
	root.rootThrottleAll(lludp.UUID{1}, req, now)
	b := open(1, 3) // the same agent's circuit, opened after the throttle

	want := float64(ChildThrottleFactor(lludp.Vector3{250, 128, 25}, -1, 0))
	var sum float64
	for _, v := range req {
		sum += float64(v) / 8
	}
	for _, c := range []*client{a, b} {
		_, total, _ := child.sched.Rates(c.id)
		if got := float64(total) / sum; math.Abs(got-want) > 0.005 {
			t.Errorf("circuit %v: total %d B/s = %.4f of the root's %.0f, want the factor %.4f", c.addr, total, got, sum, want)
		}
		if c.stats.Throttles != 1 {
			t.Errorf("circuit %v: %d throttles applied, want 1", c.addr, c.stats.Throttles)
		}
	}
	if _, total, _ := child.sched.Rates(other.id); total != defaultTotal {
		t.Errorf("another agent's circuit: total %d B/s, want the default %d", total, defaultTotal)
	}
}

// TestChildConfigErrors: bad neighbour set-ups are refused with an error.
func TestChildConfigErrors(t *testing.T) {
	for _, cfg := range []Config{
		{Child: &ChildConfig{}},
		{Child: &ChildConfig{OffsetX: 2}},
		{Position: lludp.Vector3{float32(math.NaN()), 1, 1}},
		{Position: lludp.Vector3{-1, 1, 1}},
	} {
		cfg.Listen = netip.MustParseAddrPort("127.0.0.1:0")
		if s, err := New(cfg, nil); err == nil {
			s.conn.Close()
			t.Errorf("New(%+v): no error", cfg)
		}
	}
	root, err := New(Config{Listen: netip.MustParseAddrPort("127.0.0.1:0")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer root.conn.Close()
	other, err := New(Config{Listen: netip.MustParseAddrPort("127.0.0.1:0")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer other.conn.Close()
	if root.AddChild(other) == nil || root.AddChild(root) == nil {
		t.Error("AddChild took a region without Config.Child")
	}
}
