// Package tcpflow runs real TCP flows, without root, across the lab's
// shared bottleneck: two userspace TCP/IP stacks from gVisor
// (gvisor.dev/gvisor/pkg/tcpip, the stack gVisor, Tailscale and
// wireguard-go ship), a client at 10.77.0.1 and a server at 10.77.0.2,
// whose NICs are joined through a link.Bottleneck. Nothing of TCP is
// simulated here: handshakes, windows, SACK, fast retransmit, RTO and the
// congestion controls are gVisor's.
//
// # Wiring
//
// Each stack's NIC is a channel endpoint (link/channel). When the stack
// writes a packet, the endpoint notifies us on the writer's goroutine; the
// packet's bytes (a whole IPv4 packet) go to Bottleneck.Send, labelled with
// their flow, up for the client's and down for the server's. When the
// bottleneck delivers a packet, it is injected into the other stack's NIC
// as if received. Flow i binds the client's port 40000+i and the server's
// 5000+i, so a packet's client-side port names its flow; its packets cross
// the bottleneck as "NAME up" and "NAME down". Anything else (a reset
// after a flow's end) crosses as "tcpflow other up/down".
//
//	b, _ := link.NewBottleneck(link.BottleneckConfig{Up: up, Down: down, Seed: seed}, log)
//	n, _ := tcpflow.New(b, tcpflow.Config{Seed: seed}, log)
//	defer n.Close()
//	f, _ := n.AddFlow(tcpflow.FlowConfig{Name: "cubic download", CC: tcpflow.CUBIC, Dir: tcpflow.Download})
//	var g group.Group // its first error ends every member's run
//	g.Add(b.Run, nil)
//	g.Add(n.Run, nil)
//	err := g.Run(ctx)
//	// … meanwhile: f.Read(link.Down) bytes arrived; b.Stats().Flow("cubic download down")
//
// A viewer joins the same queue through link.Relay with Config.Shared set
// to the same bottleneck.
//
// # Flows
//
// A bulk flow (FlowConfig.Dir: Download or Upload) writes as fast as TCP
// takes it and the other end reads everything; an application-limited flow
// (FlowConfig.App) writes fixed rates both ways in messages, optionally
// gathered into rounds of a period T, which gives each message a sawtooth
// multiplexing delay between 0 and T before TCP sees it, as in the
// application-limited TCP study (client→server 1.47 kbit/s, server→client
// 18.13 kbit/s per flow). Every stream is a known byte pattern that the
// receiving end checks, so a recovery that delivers wrong bytes fails the
// flow (ErrCorrupt). Congestion control is per connection: Reno (NewReno
// with SACK; RFC 5681, RFC 6675) or CUBIC (RFC 8312), set on both ends
// before the first data. SACK is on (RFC 2018) with RFC 6675's recovery
// (gVisor's RACK-TLP is off: it sometimes left a connection at a window of
// 0 with no timer armed, for seconds: 3 CUBIC pairs in 9 at 4 Mbit/s, and
// at 30 Mbit/s one flow in 20 pairs sent nothing for 8 s; without it a
// retransmission lost to a full queue waits for the RTO, 200 ms at least,
// which is most of what makes two flows' shares drift apart over
// seconds), window scaling is on (listeners keep a backlog
// above 1, or gVisor answers with SYN cookies, which carry neither SACK nor
// window scaling), the MTU is Ethernet's 1,500 bytes (MSS 1,460, RFC 894;
// 1,448 bytes of data beside the timestamps option, RFC 7323), socket
// buffers are 4 MiB without auto-tuning so the window does not limit a flow
// before the network does (bufferbloat is what the lab studies), and
// Nagle's algorithm is off (gVisor's default, and what games set).
//
// # gVisor's Reno
//
// gVisor's Reno (at the pseudo-version go.mod pins, 20250205023644, and
// still at 20260905035102) does not do RFC 5681's congestion avoidance.
// reno.go's updateCongestionAvoidance adds the acknowledged segments to a
// count and, once the count reaches the window, adds count/window to the
// window and then keeps the count modulo the window it has just enlarged: a
// count equal to the old window stays, one below the new one, and every
// later ACK of one segment grows the window again. gVisor's receiver has no
// delayed ACKs (RFC 5681 §4.2): it acknowledges each batch of segments it
// processes, one segment unless it falls behind, and after its first
// increase the window grows by a segment per ACK, doubling every round trip
// as in slow start, until a loss: each cycle overshoots the queue by up to a
// window, and the burst of losses that follows often ends in a
// retransmission timeout (the retransmissions meet the same full queue, and
// without RACK only the RTO finds a lost one). A Reno flow here is that, not
// NewReno's sawtooth: pairs of them starve one flow now and then
// (TestTwoFlowsShare says how often). CUBIC grows by its own formula
// (cubic.go) and is unaffected. Taking the remainder modulo the window
// before enlarging it would fix it upstream.
//
// # Time
//
// The stacks run on the real clock: gVisor's timers (RTO, keepalive)
// are tcpip's standard clock, that is time.Now and time.AfterFunc, and
// the bottleneck stamps arrivals with time.Now and delivers on timers, so
// both sides read one clock. testing/synctest cannot stand in: gVisor
// parks its packet processors in a way the bubble does not count as
// durably blocked, so the bubble's clock never moves. The bottleneck's
// decisions and statistics are exact for the arrival times it sees; what
// the host adds is scheduling delay (timers and goroutines running late),
// which real TCP measures as RTT, as it would on a busy router. Seeds make
// the stacks' random choices (initial sequence numbers, ports' hashes)
// and the link's losses repeatable; real TCP's timing still varies from
// run to run, so scenarios and tests compare with tolerances.
package tcpflow
