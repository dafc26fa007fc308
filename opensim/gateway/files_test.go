package gateway

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

// fakeLimit is an RLIMIT_NOFILE of the test's: raising the soft limit
// works up to hard unless refuse is set.
type fakeLimit struct {
	soft, hard uint64
	refuse     bool
	err        error
}

func (f *fakeLimit) get() (uint64, uint64, error) { return f.soft, f.hard, f.err }
func (f *fakeLimit) set(soft uint64) error {
	if f.refuse || soft > f.hard {
		return errors.New("refused")
	}
	f.soft = soft
	return nil
}

// TestFitFiles (issue 34, item 6): at start, max_viewers circuits (a
// socket each), the routes' sockets and a reserve must fit RLIMIT_NOFILE:
// the soft limit is raised towards the hard one; if that is not enough
// max_viewers is lowered to fit, and logged; a limit that fits no circuit
// refuses to start. With max_viewers 4,096 (4,161 descriptors needed):
func TestFitFiles(t *testing.T) {
	for _, tc := range []struct {
		name               string
		lim                fakeLimit
		wantSoft           uint64
		wantViewers        int
		wantErr            bool
		wantLog            string
		reconfigureViewers int // what a reload asking 5,000 gets
	}{
		{"room enough", fakeLimit{soft: 65536, hard: 65536}, 65536, 4096, false, "", 5000},
		{"raised to need", fakeLimit{soft: 1024, hard: 1 << 20}, 4161, 4096, false, "raised the open-file limit", 5000},
		{"raised to hard, lowered", fakeLimit{soft: 300, hard: 2000}, 2000, 2000 - 65, false, "max_viewers lowered", 2000 - 65},
		{"not raisable, lowered (ulimit -n 300)", fakeLimit{soft: 300, hard: 300}, 300, 300 - 65, false, "max_viewers lowered", 300 - 65},
		{"the raise refused", fakeLimit{soft: 300, hard: 5000, refuse: true}, 300, 300 - 65, false, "max_viewers lowered", 300 - 65},
		{"no room at all", fakeLimit{soft: 40, hard: 40}, 40, 4096, true, "", 0},
		{"no limit to read", fakeLimit{err: errors.ErrUnsupported}, 0, 4096, false, "", 5000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			core, err := NewCore(Config{Routes: []Route{{Listen: testListen, Region: testRegion}}})
			if err != nil {
				t.Fatal(err)
			}
			var logs bytes.Buffer
			g := &Gateway{core: core, log: slog.New(slog.NewTextHandler(&logs, nil))}
			lim := tc.lim
			err = g.fitFiles(&lim)
			if (err != nil) != tc.wantErr || lim.soft != tc.wantSoft || core.cfg.MaxViewers != tc.wantViewers || !strings.Contains(logs.String(), tc.wantLog) {
				t.Errorf("err %v, soft limit %d, max_viewers %d, log %q; want error %v, %d, %d, %q", err, lim.soft, core.cfg.MaxViewers, logs.String(), tc.wantErr, tc.wantSoft, tc.wantViewers, tc.wantLog)
			}
			if err != nil {
				return
			}
			if _, err := core.Reconfigure(Config{Routes: core.cfg.Routes, MaxViewers: 5000}, simT0); err != nil || core.cfg.MaxViewers != tc.reconfigureViewers {
				t.Errorf("a reload asking 5000: max_viewers %d (%v), want %d", core.cfg.MaxViewers, err, tc.reconfigureViewers)
			}
		})
	}
}
