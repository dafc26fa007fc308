package gateway

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestWatchLogs (issue 34, item 9): the operator sees the gateway work.
// Circuits opened and closed are logged, at most burst lines a period and
// then one summary of the rest; a region that leaves the gateway
// unanswered for RegionTimeout is logged once, and again when it answers.
func TestWatchLogs(t *testing.T) {
	t0 := time.Unix(1000, 0)
	c := newTestCore(t, Config{})
	var logs bytes.Buffer
	g := &Gateway{core: c, log: slog.New(slog.NewTextHandler(&logs, nil)), regions: make([]regionHealth, 1),
		logs: eventLog{every: time.Minute, burst: 2}}
	for i := range 5 {
		login(t, c, viewerAddr(192, 0, 2, byte(i+1), 1), uint32(i+1), t0)
	}
	g.watch(t0)
	if n := strings.Count(logs.String(), "circuit opened"); n != 2 || !strings.Contains(logs.String(), "circuit=1 viewer=-") {
		t.Errorf("%d lines of circuits opened, want 2 (the burst), viewers unnamed:\n%s", n, logs.String())
	}
	logs.Reset()
	g.watch(t0.Add(time.Minute))
	if !strings.Contains(logs.String(), "opened_unlogged=3") || !strings.Contains(logs.String(), "circuits=5") {
		t.Errorf("the period's summary: %q", logs.String())
	}
	// The region: sent to at t0+1m, silent for RegionTimeout, then heard.
	for _, tc := range []struct {
		at   time.Duration
		do   func()
		want string
	}{
		{time.Minute, func() { g.regions[0].waiting = t0.Add(time.Minute) }, ""},
		{time.Minute + DefaultRegionTimeout, nil, ""},
		{time.Minute + DefaultRegionTimeout + time.Second, nil, "region not answering"},
		{time.Minute + DefaultRegionTimeout + 2*time.Second, nil, ""}, // once
		{time.Minute + DefaultRegionTimeout + 3*time.Second, func() { g.regions[0].heard(t0) }, "region answers again"},
	} {
		logs.Reset()
		if tc.do != nil {
			tc.do()
		}
		g.watch(t0.Add(tc.at))
		if got := logs.String(); (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("at %v: logged %q, want %q", tc.at, got, tc.want)
		}
	}
}
