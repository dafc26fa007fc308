package scenario

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fairgrid/fairgrid/internal/lab/link"
)

// realPackets are the first six packets of a tcpflow game flow as gVisor
// sent them (the handshake and the first updates each way), kept as
// tcpflow's FuzzClientPort seeds.
func realPackets(t testing.TB) [][]byte {
	t.Helper()
	files, err := filepath.Glob("../tcpflow/testdata/fuzz/FuzzClientPort/gvisor-*")
	if err != nil || len(files) == 0 {
		t.Fatalf("tcpflow's captured packets: %v (%d files)", err, len(files))
	}
	var out [][]byte
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.Lines(string(b)) {
			if quoted, ok := strings.CutPrefix(strings.TrimSpace(line), "[]byte("); ok {
				p, err := strconv.Unquote(strings.TrimSuffix(quoted, ")"))
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				out = append(out, []byte(p))
			}
		}
	}
	return out
}

func bundleOf(packets ...[]byte) []byte {
	var b []byte
	for _, p := range packets {
		b = appendBundled(b, p)
	}
	return b
}

func TestSplitBundle(t *testing.T) {
	real := realPackets(t)
	for _, tc := range []struct {
		name    string
		bundle  []byte
		want    [][]byte
		wantErr error
	}{
		{"one packet", bundleOf(real[0]), real[:1], nil},
		{"a round of six", bundleOf(real...), real, nil},
		{"empty", nil, nil, errBundleEmpty},
		{"half a separator", append(bundleOf(real[0]), 0), nil, errBundleTruncated},
		{"packet cut short", bundleOf(real...)[:40], nil, errBundleTruncated},
		{"zero-length packet", append(bundleOf(real[0]), 0, 0), nil, errBundleZero},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := splitBundle(tc.bundle)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("error %v, want %v", err, tc.wantErr)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("%d packets, want %d", len(got), len(tc.want))
			}
			for i := range got {
				if !bytes.Equal(got[i], tc.want[i]) {
					t.Errorf("packet %d: % x, want % x", i, got[i], tc.want[i])
				}
			}
		})
	}
}

// FuzzSplitBundle: any bytes give packets or an error, never a panic, and
// packets that parse re-bundle into the same bytes. Seeded with bundles of
// real gVisor packets.
func FuzzSplitBundle(f *testing.F) {
	real := realPackets(f)
	f.Add(bundleOf(real...))
	f.Add(bundleOf(real[2]))
	f.Add(bundleOf(real...)[:50])
	f.Add([]byte{0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		packets, err := splitBundle(b)
		if err != nil {
			return
		}
		for _, p := range packets {
			if len(p) == 0 {
				t.Fatal("an empty packet parsed")
			}
		}
		if again := bundleOf(packets...); !bytes.Equal(again, b) {
			t.Errorf("re-bundled % x, from % x", again, b)
		}
	})
}

// TestMultiplexerRounds, on virtual time: packets wait for the end of the
// multiplexer's round (0 to T), a round's packets leave in one bundle of
// at most 1,500 bytes on the wire, a packet that would overflow the bundle
// sends it at once, and every packet reaches the far end intact and in
// order, a bundle's serialisation and the link's delay later.
func TestMultiplexerRounds(t *testing.T) {
	const period = 50 * time.Millisecond
	type hold struct {
		at   time.Duration // from the start
		size int
	}
	type bundle struct {
		at    time.Duration // when it reached the bottleneck
		sizes []int
	}
	for _, tc := range []struct {
		name  string
		holds []hold
		want  []bundle
	}{
		{"a round's packets share a bundle", []hold{{10 * time.Millisecond, 100}, {20 * time.Millisecond, 200}, {49 * time.Millisecond, 100}},
			[]bundle{{50 * time.Millisecond, []int{100, 200, 100}}}},
		{"a packet waits at most T; an empty round sends nothing", []hold{{0, 100}, {149 * time.Millisecond, 100}},
			[]bundle{{50 * time.Millisecond, []int{100}}, {150 * time.Millisecond, []int{100}}}},
		{"a full bundle leaves at once", []hold{{60 * time.Millisecond, 1400}, {70 * time.Millisecond, 200}},
			[]bundle{{70 * time.Millisecond, []int{1400}}, {100 * time.Millisecond, []int{200}}}},
		{"a packet larger than a bundle goes alone", []hold{{10 * time.Millisecond, 1480}},
			[]bundle{{50 * time.Millisecond, []int{1480}}}},
		// Sizes below 0 go up; a round ends up first, then down.
		{"directions are bundled apart", []hold{{10 * time.Millisecond, 100}, {10 * time.Millisecond, -300}},
			[]bundle{{50 * time.Millisecond, []int{-300}}, {50 * time.Millisecond, []int{100}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const rate, delay = 125_000, 20 * time.Millisecond // 1 Mbit/s
				start := time.Now()
				var mu sync.Mutex
				var got []bundle
				tap := func(e link.Event) {
					if e.Kind != link.Arrived {
						return
					}
					packets, err := splitBundle(e.Packet)
					if err != nil {
						t.Errorf("bundle at %v: %v", e.At.Sub(start), err)
						return
					}
					b := bundle{at: e.At.Sub(start)}
					for _, p := range packets {
						size := len(p)
						if e.Dir == link.Up {
							size = -size
						}
						b.sizes = append(b.sizes, size)
					}
					mu.Lock()
					got = append(got, b)
					mu.Unlock()
				}
				pc := link.PipeConfig{Rate: rate, Delay: delay, Buffer: 50}
				shared, err := link.NewBottleneck(link.BottleneckConfig{Up: pc, Down: pc, Tap: tap}, nil)
				if err != nil {
					t.Fatal(err)
				}
				type arrival struct {
					at     time.Duration
					packet []byte
				}
				var arrived [2][]arrival
				m, err := newMultiplexer(shared, period, func(dir link.Direction, p []byte) {
					mu.Lock()
					arrived[dir] = append(arrived[dir], arrival{time.Since(start), p})
					mu.Unlock()
				}, nil)
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(t.Context())
				var wg sync.WaitGroup
				wg.Go(func() { shared.Run(ctx) })
				wg.Go(func() { m.Run(ctx) })
				var sent [2][][]byte
				for i, h := range tc.holds {
					time.Sleep(h.at - time.Since(start))
					dir, size := link.Down, h.size
					if size < 0 {
						dir, size = link.Up, -size
					}
					p := bytes.Repeat([]byte{byte(i + 1)}, size)
					sent[dir] = append(sent[dir], p)
					m.hold(dir, bytes.Clone(p))
				}
				time.Sleep(time.Second)
				cancel()
				wg.Wait()

				if len(got) != len(tc.want) {
					t.Fatalf("bundles %v, want %v", got, tc.want)
				}
				for i := range got {
					if got[i].at != tc.want[i].at || !equalInts(got[i].sizes, tc.want[i].sizes) {
						t.Errorf("bundle %d: %+v, want %+v", i, got[i], tc.want[i])
					}
				}
				for dir := range sent {
					if len(arrived[dir]) != len(sent[dir]) {
						t.Fatalf("%v: %d packets arrived, %d sent", link.Direction(dir), len(arrived[dir]), len(sent[dir]))
					}
					for i, a := range arrived[dir] {
						if !bytes.Equal(a.packet, sent[dir][i]) {
							t.Errorf("%v packet %d differs", link.Direction(dir), i)
						}
					}
				}
				// The first bundle is alone on its link: it arrives its
				// serialisation (tunnel headers, separators and packets at
				// the rate) and the delay after it left.
				first := tc.want[0]
				wire := bundleTunnel
				for _, s := range first.sizes {
					wire += bundleSeparator + max(s, -s)
				}
				dir := link.Down
				if first.sizes[0] < 0 {
					dir = link.Up
				}
				want := first.at + time.Duration(wire)*time.Second/rate + delay
				if at := arrived[dir][0].at; at != want {
					t.Errorf("first packet arrived at %v, want %v (%d bytes on the wire)", at, want, wire)
				}
			})
		})
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestBranchPackets: a branch's packets on the shared link are summed
// over its flows: rates over the run's seconds, sizes and drops per packet
// arrived, queueing per packet forwarded.
func TestBranchPackets(t *testing.T) {
	report := func(arrived, dropped, bytes uint64, waits ...time.Duration) link.FlowReport {
		r := link.FlowReport{FlowStats: link.FlowStats{Arrived: arrived, DroppedQueue: dropped, ArrivedBytes: bytes}}
		for _, w := range waits {
			r.QueueDelay.Add(w)
		}
		return r
	}
	for _, tc := range []struct {
		name    string
		reports []link.FlowReport
		seconds float64
		want    branchResult
	}{
		{"nothing", nil, 10, branchResult{GoodputKbps: 5}},
		{"one flow", []link.FlowReport{report(4, 1, 2000, 100*time.Millisecond, 200*time.Millisecond, 300*time.Millisecond)}, 2,
			branchResult{GoodputKbps: 5, PacketsPerSecond: 2, MeanPacketBytes: 500, DropRate: 0.25, QueueDelayMeanMs: 200}},
		{"two flows weighed by their packets", []link.FlowReport{report(1, 0, 100, 400*time.Millisecond), report(4, 1, 900, 0, 0, 0)}, 5,
			branchResult{GoodputKbps: 5, PacketsPerSecond: 1, MeanPacketBytes: 200, DropRate: 0.2, QueueDelayMeanMs: 100}},
		{"all dropped", []link.FlowReport{report(2, 2, 300)}, 1,
			branchResult{GoodputKbps: 5, PacketsPerSecond: 2, MeanPacketBytes: 150, DropRate: 1}},
	} {
		var p branchPackets
		for _, r := range tc.reports {
			p.add(r)
		}
		if got := p.result(5, tc.seconds); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
