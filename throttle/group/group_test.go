package group

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fairgrid/fairgrid/internal/fakenet"
)

func TestGroup(t *testing.T) {
	failure := errors.New("member failed")
	tests := []struct {
		name    string
		members []func(context.Context) error
		cancel  bool // cancel the caller's context after a second
		want    error
	}{
		{name: "empty", want: nil},
		{name: "first error wins and stops the others", members: []func(context.Context) error{
			func(context.Context) error { time.Sleep(time.Second); return failure },
			func(ctx context.Context) error { <-ctx.Done(); return nil },
			func(ctx context.Context) error { <-ctx.Done(); time.Sleep(time.Second); return errors.New("later") },
		}, want: failure},
		{name: "a member that ends stops the group", members: []func(context.Context) error{
			func(context.Context) error { time.Sleep(time.Second); return nil },
			func(ctx context.Context) error { <-ctx.Done(); return nil },
		}, want: nil},
		{name: "an error on the way out is not lost", members: []func(context.Context) error{
			func(context.Context) error { time.Sleep(time.Second); return nil },
			func(ctx context.Context) error { <-ctx.Done(); return failure },
		}, want: failure},
		{name: "caller cancels", cancel: true, members: []func(context.Context) error{
			func(ctx context.Context) error { <-ctx.Done(); return nil },
		}, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				if tt.cancel {
					time.AfterFunc(time.Second, cancel)
				}
				var g Group
				for _, m := range tt.members {
					g.Add(m, nil)
				}
				if err := g.Run(ctx); !errors.Is(err, tt.want) || (tt.want == nil && err != nil) {
					t.Fatalf("Run = %v, want %v", err, tt.want)
				}
			})
		})
	}
}

// A member blocked in a call that ignores contexts is released by its
// interrupt, and Run waits for it.
func TestGroupInterrupt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		returned := false
		var g Group
		g.Add(func(context.Context) error { <-release; returned = true; return nil }, func() { close(release) })
		g.Add(func(context.Context) error { time.Sleep(time.Second); return errors.New("stop") }, nil)
		if err := g.Run(t.Context()); err == nil || err.Error() != "stop" {
			t.Fatalf("Run = %v, want stop", err)
		}
		if !returned {
			t.Fatal("Run returned before the interrupted member")
		}
	})
}

// A metrics server that fails stops the front-end with its error, named;
// one that is stopped with the group is no failure.
func TestGroupAddHTTP(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var g Group
		g.AddHTTP("metrics", fakenet.NewListener(errors.New("accept: broken")), http.NotFoundHandler())
		g.Add(func(ctx context.Context) error { <-ctx.Done(); return nil }, nil)
		err := g.Run(t.Context())
		if err == nil || !strings.Contains(err.Error(), "metrics: accept: broken") {
			t.Fatalf("Run = %v, want the metrics server's failure", err)
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var g Group
	g.AddHTTP("metrics", ln, http.NotFoundHandler())
	g.Add(func(context.Context) error { return nil }, nil) // ends at once: the group stops
	if err := g.Run(t.Context()); err != nil {
		t.Fatalf("Run = %v, want nil for a server stopped with its group", err)
	}
}
