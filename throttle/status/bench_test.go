package status

import (
	"encoding/binary"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/capture"
	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/throttle"
)

// A viewer at 5 Mbit/s in 1,000-byte datagrams: what the daemon measures
// in one of the page's periods (DefaultEvery).
const (
	benchBPS      = 5_000_000
	benchDatagram = 1000
)

var (
	benchViewer = netip.MustParseAddrPort("10.0.0.2:50000")
	benchSim    = netip.MustParseAddrPort("10.0.0.1:9000")
)

// benchLoop is a loop with one circuit that has received a few seconds
// of the region's stream and been decided on, and a function that feeds
// it one more datagram of the stream.
func benchLoop(b *testing.B) (*throttle.Loop, func(at time.Time)) {
	l, err := throttle.New(throttle.Config{Sims: []netip.AddrPort{benchSim}}, nil)
	if err != nil {
		b.Fatal(err)
	}
	agent := lludp.AgentData{AgentID: lludp.UUID{1}, SessionID: lludp.UUID{2}}
	var up, down uint32
	send := func(at time.Time, fromViewer bool, flags lludp.Flags, m lludp.Typed) {
		seq, src, dst := &down, benchSim, benchViewer
		if fromViewer {
			seq, src, dst = &up, benchViewer, benchSim
		}
		*seq++
		p, err := lludp.AppendMessage(nil, lludp.Header{Flags: flags, Sequence: *seq}, m, nil)
		if err != nil {
			b.Fatal(err)
		}
		l.Observe(capture.Datagram{At: at, Src: src, Dst: dst, Payload: p})
	}
	start := time.Unix(1_700_000_000, 0)
	send(start, true, lludp.FlagReliable, &lludp.UseCircuitCode{Code: 1, SessionID: agent.SessionID, AgentID: agent.AgentID})
	for i := range throttle.IdentityDatagrams {
		send(start.Add(time.Duration(i)*100*time.Millisecond), true, lludp.FlagZeroCoded, &lludp.AgentUpdate{AgentData: agent})
	}
	image := &lludp.ImagePacket{Data: make([]byte, benchDatagram-30)}
	at := start
	every := time.Second * benchDatagram * 8 / benchBPS
	for i := range 5 * benchBPS / 8 / benchDatagram {
		at = start.Add(time.Duration(i) * every)
		send(at, false, lludp.FlagReliable, image)
		if i%625 == 0 {
			l.Tick(at)
		}
	}
	// One datagram encoded once, its sequence number moved on each time:
	// the baseline is the measurement, not the encoding.
	p, err := lludp.AppendMessage(nil, lludp.Header{Flags: lludp.FlagReliable}, image, nil)
	if err != nil {
		b.Fatal(err)
	}
	next := func(at time.Time) {
		down++
		binary.BigEndian.PutUint32(p[1:], down)
		l.Observe(capture.Datagram{At: at, Src: benchSim, Dst: benchViewer, Payload: p})
	}
	return l, next
}

// BenchmarkStatusPage is what a browser with the page open costs the
// daemon: per op, one period of the page (DefaultEvery) — a sample of the
// loop, and the live part served with the circuit's chart drawn again —
// beside the baseline in the same run, the daemon's own work in that
// period at a viewer's 5 Mbit/s (Loop.Observe of each datagram).
// Reported: page_%core, the page's share of one core, and
// x_datagram_work, its cost over the datagrams'.
func BenchmarkStatusPage(b *testing.B) {
	l, next := benchLoop(b)
	perPeriod := int(DefaultEvery.Seconds() * benchBPS / 8 / benchDatagram)
	at := time.Unix(1_700_000_100, 0)
	// The baseline, timed here: testing.Benchmark cannot run inside a
	// benchmark.
	const baseline = 20_000
	began := time.Now()
	for range baseline {
		at = at.Add(time.Second * benchDatagram * 8 / benchBPS)
		next(at)
	}
	observeNs := float64(time.Since(began).Nanoseconds()) / baseline
	p, err := New(Config{Front: "proxy", Source: FromLoop(l)}, time.Now())
	if err != nil {
		b.Fatal(err)
	}
	req := httptest.NewRequest("GET", "/?live=1", nil)
	now := time.Now()
	for b.Loop() {
		now = now.Add(DefaultEvery)
		p.Sample(now)
		rec := httptest.NewRecorder()
		p.ServeHTTP(rec, req)
		if rec.Code != 200 {
			b.Fatal(rec.Code)
		}
	}
	pageNs := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	datagramsNs := observeNs * float64(perPeriod)
	b.ReportMetric(pageNs/float64(DefaultEvery.Nanoseconds())*100, "page_%core")
	b.ReportMetric(pageNs/datagramsNs, "x_datagram_work")
	b.ReportMetric(observeNs, "ns/datagram")
}
