package tcpflow

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/internal/lab/link"
)

// TestAddFlowVia: a game flow whose packets the bottleneck hands to a via
// (here one that passes each straight to Receive, as a multiplexer does
// after its round) opens and carries its updates both ways intact (the
// sinks check every byte), though nothing reaches its stacks but through
// the via. Real time, until a few updates have crossed each way (about a
// second).
func TestAddFlowVia(t *testing.T) {
	b, err := link.NewBottleneck(link.BottleneckConfig{Seed: 3}, nil) // the access link: unlimited, no delay
	if err != nil {
		t.Fatal(err)
	}
	n, err := New(b, Config{Seed: 3}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	var passed [2]atomic.Uint64
	var f *Flow
	done := make(chan struct{})
	var once sync.Once
	f, err = n.AddFlowVia(FlowConfig{Name: "game", CC: Reno, App: &AppConfig{UpRate: 1470 / 8, DownRate: 18130 / 8}}, func(dir link.Direction, p []byte) {
		passed[dir].Add(1)
		n.Receive(dir, p)
		if f.Read(link.Down) >= 2000 && f.Read(link.Up) >= 200 {
			once.Do(func() { close(done) })
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 2)
	go func() { errc <- b.Run(ctx) }()
	go func() { errc <- n.Run(ctx) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Errorf("after 20 s: %d bytes read down, %d up; %d and %d packets through the via", f.Read(link.Down), f.Read(link.Up), passed[link.Down].Load(), passed[link.Up].Load())
	}
	cancel()
	for range 2 {
		if err := <-errc; err != nil {
			t.Error(err)
		}
	}
	st := b.Stats()
	for _, dir := range []link.Direction{link.Up, link.Down} {
		r, _ := st.Flow("game " + dir.String())
		t.Logf("%v: %d bytes written, %d read; %d packets delivered to the via", dir, f.Written(dir), f.Read(dir), passed[dir].Load())
		// The link counts a packet delivered at its time; the last ones
		// may be due when Run stops, before their Deliver runs.
		if got := passed[dir].Load(); got == 0 || got > r.Delivered {
			t.Errorf("%v: the access link delivered %d packets, the via saw %d", dir, r.Delivered, got)
		}
		if f.Read(dir) > f.Written(dir) {
			t.Errorf("%v: %d bytes read of %d written", dir, f.Read(dir), f.Written(dir))
		}
	}
}

func TestAddFlowViaErrors(t *testing.T) {
	b, err := link.NewBottleneck(link.BottleneckConfig{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	n, err := New(b, Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	pass := func(link.Direction, []byte) {}
	if _, err := n.AddFlowVia(FlowConfig{Name: "first"}, pass); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		cfg  FlowConfig
		via  func(link.Direction, []byte)
		want string
	}{
		{"no via", FlowConfig{Name: "a"}, nil, `flow "a": no via`},
		{"no name", FlowConfig{}, pass, "no name"},
		{"same name", FlowConfig{Name: "first"}, pass, `flow "first" already exists`},
		{"bad congestion control", FlowConfig{Name: "b", CC: "vegas"}, pass, `congestion control "vegas"`},
	} {
		if _, err := n.AddFlowVia(tc.cfg, tc.via); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one saying %q", tc.name, err, tc.want)
		}
	}
}
