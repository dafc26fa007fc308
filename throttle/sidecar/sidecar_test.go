package sidecar

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fairgrid/fairgrid/capture"
	"github.com/fairgrid/fairgrid/internal/fakenet"
	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/ratecalc"
	"github.com/fairgrid/fairgrid/throttle"
	"github.com/fairgrid/fairgrid/throttle/circuit"
)

// circuitAt is a circuit's first second as a source delivers it, stamped
// from at: the viewer's login and AgentUpdates (its IDs, see
// IdentityDatagrams) and 100 simulator packets of 1000 bytes.
func circuitAt(t *testing.T, at time.Time) []capture.Datagram {
	t.Helper()
	var out []capture.Datagram
	var up, down uint32
	add := func(d time.Duration, fromViewer bool, flags lludp.Flags, m lludp.Typed) {
		seq, src, dst := &down, simEP, viewerEP
		if fromViewer {
			seq, src, dst = &up, viewerEP, simEP
		}
		*seq++
		b, err := lludp.AppendMessage(nil, lludp.Header{Flags: flags, Sequence: *seq}, m, nil)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, capture.Datagram{At: at.Add(d), Src: src, Dst: dst, Payload: b})
	}
	add(0, true, lludp.FlagReliable, &lludp.UseCircuitCode{Code: 1, SessionID: agent.SessionID, AgentID: agent.AgentID})
	for i := range throttle.IdentityDatagrams {
		add(time.Duration(i)*100*time.Millisecond, true, lludp.FlagZeroCoded, &lludp.AgentUpdate{AgentData: agent})
	}
	for i := range 100 {
		add(time.Duration(i)*10*time.Millisecond, false, lludp.FlagReliable, &lludp.ImagePacket{Data: make([]byte, 970)})
	}
	return out
}

var sidecarKey = circuit.Key{Sim: simEP, Viewer: viewerEP}

// recordingSender keeps what the sidecar sends.
type recordingSender struct {
	mu   sync.Mutex
	sent []throttle.Request
}

func (s *recordingSender) Send(_ context.Context, r throttle.Request) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent = append(s.sent, r)
	return nil
}

func (s *recordingSender) requests() []throttle.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]throttle.Request(nil), s.sent...)
}

// syncBuffer is a log the sidecar writes while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// rig is a sidecar on an in-memory source with a 1 s interval.
type rig struct {
	loop   *throttle.Loop
	src    *PushSource
	sender *recordingSender
	log    *syncBuffer
	cfg    Config
}

func newRig(t *testing.T) *rig {
	t.Helper()
	loop, err := throttle.New(throttle.Config{Sims: []netip.AddrPort{simEP}, Interval: time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{loop: loop, src: NewChanSource(1024), sender: &recordingSender{}, log: &syncBuffer{}}
	r.cfg = Config{Loop: loop, Source: r.src, Sender: r.sender, Log: slog.New(slog.NewTextHandler(r.log, nil))}
	return r
}

// start runs the sidecar; the returned channel gets Run's result.
func (r *rig) start(t *testing.T, ctx context.Context) (*Sidecar, <-chan error) {
	t.Helper()
	sc, err := New(r.cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- sc.Run(ctx) }()
	return sc, done
}

// TestSidecarLifecycle: started on an in-memory source, the sidecar
// measures what is pushed, decides at the first tick and sends through
// its Sender; Request answers with what was sent; cancelled, Run returns
// nil with every part stopped (synctest fails the test if a goroutine is
// left) and the source closed.
func TestSidecarLifecycle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		ctx, cancel := context.WithCancel(context.Background())
		sc, done := r.start(t, ctx)
		if _, ok := sc.Request(sidecarKey); ok {
			t.Error("a request before the first decision")
		}
		for _, d := range circuitAt(t, time.Now()) {
			if !r.src.Push(d) {
				t.Fatal("push refused")
			}
		}
		time.Sleep(time.Second) // the first tick
		synctest.Wait()
		sent := r.sender.requests()
		if len(sent) != 1 || sent[0].Circuit != sidecarKey || sent[0].Reason != throttle.Changed {
			t.Fatalf("sent %+v; want one changed request for %v", sent, sidecarKey)
		}
		if got, ok := sc.Request(sidecarKey); !ok || got != sent[0] {
			t.Errorf("Request = %+v, %v; want what was sent, %+v", got, ok, sent[0])
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run after cancel: %v", err)
		}
		if r.src.Push(capture.Datagram{}) {
			t.Error("the source takes datagrams after Run returned")
		}
	})
}

// testSettings are a front-end's settings that are all the loop's, all
// applied live.
type testSettings struct{ cfg throttle.Config }

func (s testSettings) Throttle() throttle.Config { return s.cfg }
func (s testSettings) Merge(next testSettings) (testSettings, []string, []string, error) {
	return next, []string{"loop"}, nil, nil
}
func (testSettings) LogLevel() slog.Level    { return slog.LevelInfo }
func (testSettings) MetricsMaxCircuits() int { return 0 }

// TestSidecarReload: each SIGHUP on Reloads applies the configuration
// the Reloader (a Running) reads, then commits; a refused reload — by Reload or by the
// loop — changes nothing, commits nothing and is logged; ReloadStats
// counts each outcome.
func TestSidecarReload(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		hup := make(chan struct{}, 1)
		var next throttle.Config
		var loadErr error
		commits := 0
		r.cfg.Reloads = hup
		load := func() (testSettings, error) { return testSettings{next}, loadErr }
		r.cfg.Reloader = NewRunning(r.loop, testSettings{r.loop.Config()}, load, func(testSettings) { commits++ }, r.cfg.Log)
		ctx, cancel := context.WithCancel(context.Background())
		sc, done := r.start(t, ctx)
		base := r.loop.Config()

		for _, tc := range []struct {
			name    string
			next    throttle.Config
			loadErr error
			wantMax float64 // bits/s in force after
			commits int
			logged  string
			stats   ReloadStats // counted so far
		}{
			{"applied", throttle.Config{Sims: base.Sims, Interval: time.Second, Max: ratecalc.RateFromBits(2_000_000)}, nil, 2_000_000, 1, "", ReloadStats{Applied: 1}},
			{"refused by Reload", throttle.Config{Sims: base.Sims, Interval: time.Second, Max: ratecalc.RateFromBits(500_000)}, errors.New("control.interval: bad"), 2_000_000, 1, "control.interval: bad", ReloadStats{Applied: 1, Rejected: 1}},
			{"refused by the loop", throttle.Config{Sims: base.Sims, Interval: time.Second, Min: ratecalc.RateFromBits(300_000), Max: ratecalc.RateFromBits(200_000)}, nil, 2_000_000, 1, "want 0 < min ≤ max", ReloadStats{Applied: 1, Rejected: 2}},
		} {
			next, loadErr = tc.next, tc.loadErr
			hup <- struct{}{}
			synctest.Wait()
			if got := r.loop.Config().Max.BitsPerSecond(); got != tc.wantMax || commits != tc.commits {
				t.Errorf("%s: max %v bit/s, %d commits; want %v, %d", tc.name, got, commits, tc.wantMax, tc.commits)
			}
			if tc.logged != "" && (!strings.Contains(r.log.String(), "reload refused") || !strings.Contains(r.log.String(), tc.logged)) {
				t.Errorf("%s: the log lacks the refusal (%q):\n%s", tc.name, tc.logged, r.log.String())
			}
			if got := sc.ReloadStats(); got != tc.stats {
				t.Errorf("%s: reload stats %+v, want %+v", tc.name, got, tc.stats)
			}
		}
		// A closed channel ends reloads, not the sidecar.
		close(hup)
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("Run returned %v when the reload channel closed", err)
		default:
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

// scriptedSource yields its datagrams, then fails with err.
type scriptedSource struct {
	ds     []capture.Datagram
	err    error
	closed bool
}

func (s *scriptedSource) Next() (capture.Datagram, error) {
	if len(s.ds) == 0 {
		return capture.Datagram{}, s.err
	}
	d := s.ds[0]
	s.ds = s.ds[1:]
	return d, nil
}

func (s *scriptedSource) Close() error { s.closed = true; return nil }

// TestSidecarReopen: a source that fails is closed and reopened every
// ReopenEvery until Reopen succeeds, with one log line for the failure
// however many attempts it takes; the new source's datagrams reach the
// loop.
func TestSidecarReopen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		start := time.Now()
		old := &scriptedSource{ds: circuitAt(t, start)[:2], err: errors.New("interface went down")}
		r.cfg.Source = old
		var attempts []time.Duration
		r.cfg.Reopen = func() (Source, error) {
			attempts = append(attempts, time.Since(start))
			if len(attempts) < 3 {
				return nil, errors.New("no such device")
			}
			return r.src, nil
		}
		ctx, cancel := context.WithCancel(context.Background())
		sc, done := r.start(t, ctx)
		time.Sleep(2500 * time.Millisecond)
		synctest.Wait()
		want := []time.Duration{0, time.Second, 2 * time.Second}
		if len(attempts) != len(want) || attempts[0] != want[0] || attempts[1] != want[1] || attempts[2] != want[2] {
			t.Errorf("reopen attempts at %v, want %v", attempts, want)
		}
		if !old.closed || sc.Reopens() != 1 {
			t.Errorf("old source closed %v, %d reopens; want closed, 1", old.closed, sc.Reopens())
		}
		if n := strings.Count(r.log.String(), "source failed; reopening"); n != 1 {
			t.Errorf("the failure logged %d times, want once:\n%s", n, r.log.String())
		}
		for _, d := range circuitAt(t, time.Now()) {
			r.src.Push(d)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if sent := r.sender.requests(); len(sent) != 1 {
			t.Errorf("%d requests after the reopen, want 1", len(sent))
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

// TestSidecarFirstError: the first part to fail ends Run, with its error,
// without the caller cancelling, and every other part stops; a source
// that ends is no failure.
func TestSidecarFirstError(t *testing.T) {
	errBoom := errors.New("boom")
	for _, tc := range []struct {
		name    string
		setup   func(r *rig)
		wantErr error
		want    string
	}{
		{"source fails, no reopen", func(r *rig) { r.cfg.Source = &scriptedSource{err: errBoom} }, errBoom, "source: boom"},
		{"source ends", func(r *rig) { r.cfg.Source = &scriptedSource{err: io.EOF} }, nil, ""},
		{"source closed by its producer", func(r *rig) { r.src.Close() }, nil, ""},
		{"metrics listener fails", func(r *rig) {
			r.cfg.MetricsListener = fakenet.NewListener(errBoom)
			r.cfg.Metrics = http.NotFoundHandler()
		}, errBoom, "metrics: boom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newRig(t)
				tc.setup(r)
				sc, err := New(r.cfg)
				if err != nil {
					t.Fatal(err)
				}
				err = sc.Run(context.Background())
				if !errors.Is(err, tc.wantErr) || (tc.want != "" && err.Error() != tc.want) || (tc.want == "" && err != nil) {
					t.Errorf("Run = %v, want %q", err, tc.want)
				}
			})
		})
	}
}

// TestSidecarMetricsStop: the metrics server stops with Run.
func TestSidecarMetricsStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		ln := fakenet.NewListener(nil)
		r.cfg.MetricsListener, r.cfg.Metrics = ln, http.NotFoundHandler()
		ctx, cancel := context.WithCancel(context.Background())
		_, done := r.start(t, ctx)
		synctest.Wait()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		if !ln.Closed() {
			t.Error("the metrics listener is still open")
		}
	})
}

// TestNewSidecarRefuses: what a sidecar cannot run without is named, all
// at once.
func TestNewSidecarRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want []string
	}{
		{"empty", Config{}, []string{"no loop", "no source", "no sender"}},
		{"half metrics", Config{Loop: &throttle.Loop{}, Source: NewChanSource(1), Sender: &recordingSender{}, Metrics: http.NotFoundHandler()}, []string{"metrics need both"}},
		{"half reload", Config{Loop: &throttle.Loop{}, Source: NewChanSource(1), Sender: &recordingSender{}, Reloads: make(chan struct{})}, []string{"reloads need both a channel and a Reloader"}},
		{"negative reopen", Config{Loop: &throttle.Loop{}, Source: NewChanSource(1), Sender: &recordingSender{}, ReopenEvery: -time.Second}, []string{"reopen every -1s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg)
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("New: %v, want %q", err, w)
				}
			}
		})
	}
}
