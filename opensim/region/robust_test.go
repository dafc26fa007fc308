package region_test

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/internal/lab/viewer"
	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/opensim/region"
	"github.com/fairgrid/fairgrid/ratecalc"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// rawClient is a hand-driven client socket.
type rawClient struct {
	t    *testing.T
	conn *net.UDPConn
	seq  uint32
}

func dial(t *testing.T, sim netip.AddrPort) *rawClient {
	c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(sim))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawClient{t: t, conn: c}
}

func (c *rawClient) send(flags lludp.Flags, m lludp.Typed) {
	c.seq++
	b, err := lludp.AppendMessage(nil, lludp.Header{Flags: flags, Sequence: c.seq}, m, nil)
	if err != nil {
		c.t.Fatal(err)
	}
	c.conn.Write(b)
}

// TestHostileInput: garbage, oversized datagrams, a flood of wrong circuit
// codes, throttles from the wrong endpoint or with the wrong session, and a
// client that never acks are ignored and counted, while a valid viewer
// keeps being served at its throttle.
func TestHostileInput(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short: a long end-to-end run in real time")
	}
	good := viewer.Config{CircuitCode: 100}
	b := region.Login{Code: 200, AgentID: lludp.UUID{0xB}, SessionID: lludp.UUID{0xB, 1}}
	deaf := region.Login{Code: 300, AgentID: lludp.UUID{0xC}, SessionID: lludp.UUID{0xC, 1}}
	goodLogin := region.Login{Code: 100, AgentID: lludp.UUID{0xA6, 0, 0, 0, 100, 1}, SessionID: lludp.UUID{0x5E, 0, 0, 0, 100, 2}}
	sim, err := region.New(region.Config{Listen: netip.MustParseAddrPort("127.0.0.1:0"), Activity: region.Walking,
		Allowed: []region.Login{goodLogin, b, deaf}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { sim.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	good.Sim = sim.Addr()
	good.Throttle = ratecalc.RateFromBits(300_000)
	v, err := viewer.New(good, nil)
	if err != nil {
		t.Fatal(err)
	}
	vctx, vcancel := context.WithTimeout(ctx, 5*time.Second)
	defer vcancel()
	vdone := make(chan struct{})
	go func() { v.Run(vctx); close(vdone) }()

	attacker := dial(t, sim.Addr())
	attacker.conn.Write([]byte("GET / HTTP/1.1\r\n\r\n"))
	attacker.conn.Write(make([]byte, 9000))
	attacker.conn.Write([]byte{0x80, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0}) // a zero-coding bomb
	for i := range 200 {
		attacker.send(lludp.FlagReliable, &lludp.UseCircuitCode{Code: uint32(5000 + i), SessionID: lludp.UUID{9}, AgentID: lludp.UUID{9}})
	}
	// The good viewer's IDs, but from an endpoint with no circuit: an orphan.
	attacker.send(0, &lludp.AgentThrottle{AgentData: lludp.AgentData{AgentID: goodLogin.AgentID, SessionID: goodLogin.SessionID}})

	cb := dial(t, sim.Addr())
	cb.send(lludp.FlagReliable, &lludp.UseCircuitCode{Code: b.Code, SessionID: b.SessionID, AgentID: b.AgentID})
	cb.send(lludp.FlagReliable, &lludp.CompleteAgentMovement{AgentData: lludp.AgentData{AgentID: b.AgentID, SessionID: b.SessionID}, CircuitCode: b.Code})
	// Its own endpoint, the wrong session: ignored.
	cb.send(0, &lludp.AgentThrottle{AgentData: lludp.AgentData{AgentID: b.AgentID, SessionID: lludp.UUID{0xEE}}, Throttles: [7]float32{1e6, 1e6, 1e6, 1e6, 1e6, 1e6, 1e6}})

	// A client that logs in and then never acks anything, but stays alive.
	cd := dial(t, sim.Addr())
	cd.send(lludp.FlagReliable, &lludp.UseCircuitCode{Code: deaf.Code, SessionID: deaf.SessionID, AgentID: deaf.AgentID})
	cd.send(lludp.FlagReliable, &lludp.CompleteAgentMovement{AgentData: lludp.AgentData{AgentID: deaf.AgentID, SessionID: deaf.SessionID}, CircuitCode: deaf.Code})
	keepAlive := time.NewTicker(500 * time.Millisecond)
	defer keepAlive.Stop()
	for {
		select {
		case <-keepAlive.C:
			cd.send(0, &lludp.AgentUpdate{AgentData: lludp.AgentData{AgentID: deaf.AgentID, SessionID: deaf.SessionID}})
			continue
		case <-vdone:
		}
		break
	}

	rep := v.Report()
	k := sim.Counters()
	t.Logf("viewer %.0f bit/s for %.0f asked; region counters %+v", rep.RateBPS, rep.ThrottleBPS, k)
	if r := rep.RateBPS / rep.ThrottleBPS; r < 0.8 || r > 1.1 {
		t.Errorf("the valid viewer got %.0f bit/s of its %.0f", rep.RateBPS, rep.ThrottleBPS)
	}
	if k.Malformed < 3 || k.BadCircuitCodes != 200 || k.Orphans < 1 || k.BadIDs < 1 {
		t.Errorf("counters %+v", k)
	}
	var bInfo, deafInfo *region.ClientInfo
	clients := sim.Clients()
	for i := range clients {
		switch clients[i].AgentID {
		case b.AgentID:
			bInfo = &clients[i]
		case deaf.AgentID:
			deafInfo = &clients[i]
		}
	}
	// The valid viewer logged out when it stopped (it waits for LogoutReply).
	if len(clients) != 2 || bInfo == nil || deafInfo == nil || k.LoggedOut != 1 {
		t.Fatalf("clients %+v, logged out %d", clients, k.LoggedOut)
	}
	if bInfo.Throttles != 0 {
		t.Errorf("a throttle with the wrong session was applied")
	}
	// Producers stall past 50 unacked; what was already queued (8 packets
	// in each of 5 channels) may still leave.
	if deafInfo.Unacked > 50+8*5 || deafInfo.Resends == 0 {
		t.Errorf("the client that never acks: %d unacked, %d resends (want at most 90, and resends)", deafInfo.Unacked, deafInfo.Resends)
	}

	// The exported counters are the region's, reason by reason.
	want := fmt.Sprintf(`
# HELP fairgrid_sim_ignored_datagrams_total Datagrams the region ignored, by reason.
# TYPE fairgrid_sim_ignored_datagrams_total counter
fairgrid_sim_ignored_datagrams_total{reason="bad_circuit_code"} %d
fairgrid_sim_ignored_datagrams_total{reason="bad_ids"} %d
fairgrid_sim_ignored_datagrams_total{reason="duplicate"} %d
fairgrid_sim_ignored_datagrams_total{reason="malformed"} %d
fairgrid_sim_ignored_datagrams_total{reason="orphan"} %d
# HELP fairgrid_sim_clients Clients with an open circuit.
# TYPE fairgrid_sim_clients gauge
fairgrid_sim_clients 2
`, k.BadCircuitCodes, k.BadIDs, k.Duplicates, k.Malformed, k.Orphans)
	if err := testutil.CollectAndCompare(region.NewCollector(sim), strings.NewReader(want),
		"fairgrid_sim_ignored_datagrams_total", "fairgrid_sim_clients"); err != nil {
		t.Error(err)
	}
}
