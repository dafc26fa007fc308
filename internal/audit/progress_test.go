package audit

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// fakeClock advances by step each time it is read.
type fakeClock struct {
	t    time.Time
	step time.Duration
}

func (c *fakeClock) now() time.Time {
	c.t = c.t.Add(c.step)
	return c.t
}

func TestProgress(t *testing.T) {
	for _, tc := range []struct {
		name    string
		step    time.Duration
		updates int
		read    int64
		total   int64
		want    []string // in the output; nil: nothing drawn
	}{
		{"quiet while short", 100 * time.Millisecond, 8, 50 << 20, 100 << 20, nil},
		{"slow without updates", 3 * time.Second, 0, 10 << 20, 100 << 20, []string{"10.0 MiB of 100.0 MiB ( 10 %)"}},
		{"half way", 500 * time.Millisecond, 4, 50 << 20, 100 << 20, []string{"50.0 MiB of 100.0 MiB ( 50 %)", "M datagrams/s", "ETA "}},
		{"a stream of unknown size", 500 * time.Millisecond, 4, 50 << 20, 0, []string{"50.0 MiB  ", "M datagrams/s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			clock := &fakeClock{t: time.Unix(1e9, 0), step: tc.step}
			p := NewProgress(&out, tc.total, clock.now)
			c := &CountingReader{N: tc.read}
			p.Track(c)
			for range tc.updates {
				p.Update()
			}
			p.Done()
			got := out.String()
			if tc.want == nil {
				if got != "" {
					t.Errorf("drew %q during the first second", got)
				}
				return
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("%q lacks %q", got, w)
				}
			}
			if !strings.HasPrefix(got, "\r") || !strings.HasSuffix(got, "\n") {
				t.Errorf("%q: want redraws from the line's start and a final newline", got)
			}
		})
	}
	var nilBar *Progress // what a caller without a terminal holds
	nilBar.Track(&CountingReader{})
	nilBar.Update()
	nilBar.Done()
}

// TestProgressRate: datagrams/s and the ETA follow from the counts and
// the clock.
func TestProgressRate(t *testing.T) {
	var out bytes.Buffer
	clock := &fakeClock{t: time.Unix(1e9, 0), step: time.Second}
	p := NewProgress(&out, 400<<20, clock.now)
	c := &CountingReader{N: 100 << 20}
	p.Track(c)
	p.Update() // 65,536 datagrams in 1 s; a quarter read in 1 s: 3 s left
	line := out.String()
	if !strings.Contains(line, "0.07 M datagrams/s") || !strings.Contains(line, "ETA 3s") {
		t.Errorf("%q", line)
	}
}
