package scenario

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/fairgrid/fairgrid/capture"
)

// TestViewerReportAgrees: the lab's HTML report of a viewer's datagrams
// (the real OpenSim capture, handed over as the rig's tap does) counts
// every datagram it was given, in its text and its files table alike, and
// draws the per-second figures instead of saying no second had traffic.
func TestViewerReportAgrees(t *testing.T) {
	path, _ := filepath.Abs("../../../../shared/testdata/real/opensim-0922-captures/testclient-2x-10min.pcap")
	ds, err := capture.ReadFile(path, nil)
	if errors.Is(err, fs.ErrNotExist) {
		t.Skipf("skipped: the real capture is not beside the repository: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	var l viewerLog
	for _, d := range ds {
		l.add(d)
	}
	dir := t.TempDir()
	if err := l.writeAudit(dir, "buffer=90 floor=512k"); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, "buffer_90_floor_512k.html"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(page)
	n := len(l.ds)
	want := regexp.MustCompile(`1 file\(s\), ([0-9\x{2009}]+) datagrams`).FindStringSubmatch(text)
	if want == nil || strings.ReplaceAll(want[1], "\u2009", "") != strconv.Itoa(n) {
		t.Errorf("the page states %q, want %d datagrams", want, n)
	}
	if !strings.Contains(text, "<td>"+thinNumber(n)+"</td>") {
		t.Errorf("the files table does not count %d datagrams", n)
	}
	for _, bad := range []string{"no second has traffic", "no per-second", "No figure over time"} {
		if strings.Contains(text, bad) {
			t.Errorf("the page says %q of a capture with 600 s of traffic", bad)
		}
	}
	if !strings.Contains(text, `id="fig-loss-levels"`) || !strings.Contains(text, `id="fig-rate-0"`) {
		t.Error("the per-second figures are missing")
	}
}

// thinNumber writes n as the report does: thousands set off by a thin
// space.
func thinNumber(n int) string {
	d := strconv.Itoa(n)
	var b strings.Builder
	for i, c := range d {
		if i > 0 && (len(d)-i)%3 == 0 {
			b.WriteString("\u2009")
		}
		b.WriteRune(c)
	}
	return b.String()
}
