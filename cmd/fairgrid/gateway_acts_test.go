//go:build unix

package main

import (
	"fmt"
	"net/netip"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/opensim"
	"github.com/fairgrid/fairgrid/opensim/gateway"
	"github.com/fairgrid/fairgrid/opensim/gateway/gatewaytest"
	"github.com/fairgrid/fairgrid/ratecalc"
	"github.com/fairgrid/fairgrid/throttle"
	"github.com/prometheus/client_golang/prometheus"
)

// Each [gateway] key acting on a running gateway (gatewayKeyCases): a
// gateway on loopback built from the file's Config, in front of a stand-in
// region — a UDP socket that records what reaches it and sends what the
// case says — and test viewers sending LLUDP from sockets of their own
// (package gatewaytest).

// routesAct: the configured route is what the gateway serves: a viewer's
// UseCircuitCode at its public address reaches that region from a socket
// of the gateway's; with the default, no routes, there is no gateway.
func routesAct(t *testing.T, _, def gateway.Config) {
	region := gatewaytest.StartRegion(t)
	cfg := gatewayFileConfig(t, fmt.Sprintf(`routes = ["127.0.0.1:0=%v"]`, region.Addr()))
	u := gatewaytest.Start(t, cfg, region)
	v := gatewaytest.NewViewer(t, u.GW.Addr(0), 1, gatewaytest.Loopback)
	if from := u.LoggedIn(t, v, nil); from == v.Addr() || !from.IsValid() {
		t.Errorf("the region saw the viewer at %v, its own address %v", from, v.Addr())
	}
	if _, err := gateway.New(def, nil); err == nil {
		t.Error("the default configuration (no routes) made a gateway")
	}
}

// bindAct: the region sees every circuit from the bind address.
func bindAct(t *testing.T, changed, def gateway.Config) {
	if runtime.GOOS != "linux" {
		t.Skip("127.0.0.2 is local on Linux only")
	}
	for _, tc := range []struct {
		cfg  gateway.Config
		want netip.Addr
	}{{changed, netip.MustParseAddr("127.0.0.2")}, {def, gatewaytest.Loopback}} {
		u := gatewaytest.Start(t, tc.cfg, nil)
		if from := u.LoggedIn(t, gatewaytest.NewViewer(t, u.GW.Addr(0), 1, gatewaytest.Loopback), nil); from.Addr() != tc.want {
			t.Errorf("bind %v: the region saw the circuit from %v, want %v", tc.cfg.Bind, from, tc.want)
		}
	}
}

// askFast is an AgentThrottle asking 2 Mbit/s, the viewer's split.
var askFast = throttle.ViewerSplit(ratecalc.RateFromBits(2_000_000))

// rateCapAct (scene_bps, client_max_bps at 80 kbit/s, 10,000 B/s): a
// viewer asking 2 Mbit/s is sent eight 1,000-byte texture datagrams the
// region sent at once. Under the cap they leave over at least
// (8,000 − 1,500 bytes of bucket − one datagram of debt) / 10,000 B/s =
// 0.55 s (asserted: 0.4 s); at the default caps, in a fraction of that.
func rateCapAct(t *testing.T, changed, def gateway.Config) {
	span := func(cfg gateway.Config) time.Duration {
		u := gatewaytest.Start(t, cfg, nil)
		v := gatewaytest.NewViewer(t, u.GW.Addr(0), 1, gatewaytest.Loopback)
		at := u.LoggedIn(t, v, &askFast)
		for i := range 8 {
			u.Region.Send(t, at, gatewaytest.Datagram(lludp.ImagePacketID, uint32(10+i), lludp.FlagReliable, 1000, nil))
		}
		var first, last time.Time
		for i := 0; i < 8; {
			h, _, when := v.Recv(t)
			if h.ID != lludp.ImagePacketID {
				continue
			}
			if i == 0 {
				first = when
			}
			last = when
			i++
		}
		return last.Sub(first)
	}
	capped, free := span(changed), span(def)
	t.Logf("eight 1,000-byte datagrams left over %v under the cap, %v at the defaults", capped, free)
	if capped < 400*time.Millisecond {
		t.Errorf("under a 10,000 B/s cap, 8,000 bytes left within %v", capped)
	}
	if free >= capped/2 {
		t.Errorf("at the defaults they took %v, under the cap %v", free, capped)
	}
}

// queueBoundAct (queue_bytes 8,192, queue_packets 4): twenty 1,000-byte
// texture datagrams arrive at once for a viewer asking 64 kbit/s; the
// texture queue's bound drops the excess at the tail (counted), where the
// default bounds (256 KiB, 512) hold them all. The region's StartPingCheck
// sent after them leaves at once (no channel) and, read on the same
// socket, is handled after them: when it reaches the viewer, they have
// all been queued or dropped.
func queueBoundAct(t *testing.T, changed, def gateway.Config) {
	refused := func(cfg gateway.Config) uint64 {
		u := gatewaytest.Start(t, cfg, nil)
		v := gatewaytest.NewViewer(t, u.GW.Addr(0), 1, gatewaytest.Loopback)
		slow := throttle.ViewerSplit(ratecalc.RateFromBits(64_000))
		at := u.LoggedIn(t, v, &slow)
		for i := range 20 {
			u.Region.Send(t, at, gatewaytest.Datagram(lludp.ImagePacketID, uint32(10+i), lludp.FlagReliable, 1000, nil))
		}
		u.Region.Send(t, at, gatewaytest.Datagram(lludp.StartPingCheckID, 30, 0, 18, nil))
		for {
			if h, _, _ := v.Recv(t); h.ID == lludp.StartPingCheckID {
				break
			}
		}
		c := u.GW.Circuits()
		if len(c) != 1 {
			t.Fatalf("%d circuits", len(c))
		}
		return c[0].Refused[opensim.Texture]
	}
	bounded, unbounded := refused(changed), refused(def)
	t.Logf("texture datagrams dropped at a full queue: %d of 20 bounded, %d at the defaults", bounded, unbounded)
	if bounded == 0 || unbounded != 0 {
		t.Errorf("dropped %d with the bound, %d at the defaults: want some, and none", bounded, unbounded)
	}
}

// avatarPriorityAct: a viewer whose Task category (the Avatar channel's
// rate is 0.8 of it) is a ninth of its Texture is sent twenty 1,000-byte
// texture datagrams, then ten 120-byte avatar updates. Fair queuing by
// rate lets about one texture datagram through per 1.3 avatar updates, so
// the last update leaves after several textures; with avatar priority the
// updates go first while the Avatar bucket (1,500 bytes: all ten) lasts.
func avatarPriorityAct(t *testing.T, changed, def gateway.Config) {
	var th [lludp.NumCategories]float32
	th[lludp.Task] = 40_000
	th[lludp.Texture] = 360_000
	texturesAhead := func(cfg gateway.Config) int {
		u := gatewaytest.Start(t, cfg, nil)
		v := gatewaytest.NewViewer(t, u.GW.Addr(0), 1, gatewaytest.Loopback)
		at := u.LoggedIn(t, v, &th)
		for i := range 20 {
			u.Region.Send(t, at, gatewaytest.Datagram(lludp.ImagePacketID, uint32(10+i), lludp.FlagReliable, 1000, nil))
		}
		for i := range 10 {
			u.Region.Send(t, at, gatewaytest.Datagram(lludp.ImprovedTerseObjectUpdateID, uint32(30+i), 0, 120, nil))
		}
		textures, ahead := 0, 0
		for avatars := 0; avatars < 10; {
			h, _, _ := v.Recv(t)
			switch h.ID {
			case lludp.ImagePacketID:
				textures++
			case lludp.ImprovedTerseObjectUpdateID:
				avatars++
				ahead = textures
			}
		}
		return ahead
	}
	prio, fair := texturesAhead(changed), texturesAhead(def)
	t.Logf("texture datagrams sent before the last avatar update: %d with avatar priority, %d without", prio, fair)
	if prio >= fair {
		t.Errorf("avatar priority let %d textures ahead of the last update, fair queuing %d", prio, fair)
	}
}

// capAct (max_viewers, max_pending, max_per_prefix at 2): two viewers
// from 127.0.0.1 send their UseCircuitCode and, unless probes is set,
// answer the gateway's probe (their circuits open); then a third sends
// its UseCircuitCode. Under the cap it is refused: two circuits (or, with
// probes, two probes younger than a second) leave it no room. At the
// defaults it is carried (probed).
func capAct(probes bool) func(t *testing.T, changed, def gateway.Config) {
	return func(t *testing.T, changed, def gateway.Config) {
		run := func(cfg gateway.Config) gateway.Counters {
			u := gatewaytest.Start(t, cfg, nil)
			for code := range uint32(2) {
				v := gatewaytest.NewViewer(t, u.GW.Addr(0), code+1, gatewaytest.Loopback)
				if probes {
					v.UseCircuitCode(t)
				} else {
					u.LoggedIn(t, v, nil)
				}
			}
			gatewaytest.NewViewer(t, u.GW.Addr(0), 3, gatewaytest.Loopback).UseCircuitCode(t)
			u.HandledFresh(t)
			return u.GW.Counters()
		}
		capped, free := run(changed), run(def)
		t.Logf("capped: %d circuits, %d probes, %d refused; defaults: %d circuits, %d probes, %d refused",
			capped.Viewers, capped.Probes, capped.Drops[gateway.Refused], free.Viewers, free.Probes, free.Drops[gateway.Refused])
		if free.Drops[gateway.Refused] != 0 || free.Viewers+free.Probes != 3 {
			t.Errorf("at the defaults the third viewer was not carried: %+v", free)
		}
		if capped.Drops[gateway.Refused] != 1 || capped.Viewers+capped.Probes != 2 {
			t.Errorf("under the cap the third viewer was not refused: %+v", capped)
		}
	}
}

// upAct (up_bps at 8,000: 1,000 bytes a second): a viewer sends 50
// AgentUpdates at once; each costs at least 100 bytes of its upstream
// bound, so about ten pass and the rest are dropped. At the default
// (1 Mbit/s) all pass.
func upAct(t *testing.T, changed, def gateway.Config) {
	run := func(cfg gateway.Config) gateway.Counters {
		u := gatewaytest.Start(t, cfg, nil)
		v := gatewaytest.NewViewer(t, u.GW.Addr(0), 1, gatewaytest.Loopback)
		u.LoggedIn(t, v, nil)
		for range 50 {
			v.Send(t, &lludp.AgentUpdate{AgentData: v.Agent()}, 0)
		}
		v.Send(t, &lludp.CompletePingCheck{}, 0)
		gatewaytest.WaitUntil(t, "the gateway handled the 51 datagrams", func() bool {
			k := u.GW.Counters()
			return k.Drops[gateway.Passed]+k.Drops[gateway.UpLimited] >= 52 // and the probe's ack
		})
		return u.GW.Counters()
	}
	capped, free := run(changed), run(def)
	t.Logf("up_bps 8000: %d passed, %d limited; default: %d passed, %d limited", capped.Drops[gateway.Passed], capped.Drops[gateway.UpLimited], free.Drops[gateway.Passed], free.Drops[gateway.UpLimited])
	if free.Drops[gateway.UpLimited] != 0 || capped.Drops[gateway.UpLimited] < 30 {
		t.Errorf("up_bps did not bound the viewer: %d limited (default %d)", capped.Drops[gateway.UpLimited], free.Drops[gateway.UpLimited])
	}
}

// identifyAct (metrics_identify_viewers): the viewer's endpoint is in the
// gateway's metrics only when asked for.
func identifyAct(t *testing.T, changed, def gateway.Config) {
	shows := func(cfg gateway.Config) bool {
		u := gatewaytest.Start(t, cfg, nil)
		v := gatewaytest.NewViewer(t, u.GW.Addr(0), 1, gatewaytest.Loopback)
		u.LoggedIn(t, v, nil)
		reg := prometheus.NewRegistry()
		reg.MustRegister(gateway.NewCollector(u.GW, 0))
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if strings.Contains(mf.String(), v.Addr().String()) {
				return true
			}
		}
		return false
	}
	if !shows(changed) || shows(def) {
		t.Errorf("the viewer's endpoint in the metrics: %v asked, %v by default; want true, false", shows(changed), shows(def))
	}
}

// What a viewer does before it falls silent, for the timeout keys.
type silence int

const (
	stayPending  silence = iota // UseCircuitCode and the probe's ack only: pending_timeout
	goSilent                    // and an ack of the region's: idle_timeout
	closeCircuit                // and CloseCircuit: linger
)

// timeoutAct (pending_timeout, idle_timeout, linger at 300 ms): the same
// viewer behaviour at two gateways at once, one changed and one at the
// defaults (10 s, 60 s, 2 s). The changed one closes the circuit no
// sooner than 300 ms after the viewer's last datagram reached the region;
// when it has, the default one still carries it.
func timeoutAct(s silence) func(t *testing.T, changed, def gateway.Config) {
	return func(t *testing.T, changed, def gateway.Config) {
		var us [2]*gatewaytest.Gateway
		var last [2]time.Time
		for i, cfg := range []gateway.Config{changed, def} {
			u := gatewaytest.Start(t, cfg, nil)
			v := gatewaytest.NewViewer(t, u.GW.Addr(0), 1, gatewaytest.Loopback)
			// The clock starts before the viewer's last datagram is sent:
			// the gateway's timeout runs from no earlier.
			last[i] = time.Now()
			at := u.LoggedIn(t, v, nil)
			if s >= goSilent {
				last[i] = time.Now()
				u.Establish(t, v, at)
			}
			if s == closeCircuit {
				last[i] = time.Now()
				v.Send(t, &lludp.CloseCircuit{}, 0)
				u.Region.NextOf(t, lludp.CloseCircuitID)
			}
			us[i] = u
		}
		gatewaytest.WaitUntil(t, "the changed timeout closes the circuit", func() bool { return us[0].GW.Counters().Expired == 1 })
		took := time.Since(last[0])
		other := us[1].GW.Counters()
		t.Logf("closed %v after the viewer's last datagram; the default gateway carries %d circuits", took, other.Viewers)
		if took < 300*time.Millisecond {
			t.Errorf("closed after %v, before its 300 ms", took)
		}
		if other.Viewers != 1 || other.Expired != 0 {
			t.Errorf("at the defaults the circuit closed as soon: %+v", other)
		}
	}
}
