package sidecar

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// TestWarnIfSilent: a daemon that has captured nothing after half a minute
// says so once, naming the interface, the ports and the interfaces that
// are up; one that has traffic, or stops earlier, says nothing.
func TestWarnIfSilent(t *testing.T) {
	for _, tc := range []struct {
		name      string
		datagrams uint64
		stopAfter time.Duration
		carrying  func(context.Context) []string
		warned    bool
		want      []string // in the warning
	}{
		{"silent", 0, time.Minute, nil, true, []string{"viewers_here=\"not looked for\"", "hint=\"--interface NAME, or fairgrid proxy"}},
		{"silent, the viewer elsewhere", 0, time.Minute, func(context.Context) []string { return []string{"wlan1", "eth0"} }, true,
			[]string{"viewers_here=wlan1,eth0", "hint=\"--interface wlan1 (it carries simulator traffic), or fairgrid proxy"}},
		{"silent, no viewer anywhere", 0, time.Minute, func(context.Context) []string { return nil }, true, []string{"viewers_here=none"}},
		{"traffic", 12, time.Minute, nil, false, nil},
		{"stopped before the warning", 0, 10 * time.Second, nil, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var buf bytes.Buffer
				log := slog.New(slog.NewTextHandler(&buf, nil))
				ctx, cancel := context.WithTimeout(t.Context(), tc.stopAfter)
				defer cancel()
				err := WarnIfSilent(ctx, SilenceWarning, func() uint64 { return tc.datagrams }, tc.carrying, "wlan0", "9000-13100", log)
				if err != nil {
					t.Fatalf("WarnIfSilent = %v, want nil", err)
				}
				got := buf.String()
				if tc.warned != strings.Contains(got, "no simulator traffic seen on wlan0 after 30s") {
					t.Fatalf("warned=%v, log:\n%s", tc.warned, got)
				}
				if tc.warned && (!strings.Contains(got, "ports=9000-13100") || !strings.Contains(got, "interfaces_up=") || strings.Count(got, "\n") != 1) {
					t.Errorf("the warning lacks the ports or the interfaces, or came more than once:\n%s", got)
				}
				for _, w := range tc.want {
					if !strings.Contains(got, w) {
						t.Errorf("the warning lacks %s:\n%s", w, got)
					}
				}
			})
		})
	}
}
