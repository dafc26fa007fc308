package audit

import (
	"testing"

	"github.com/fairgrid/fairgrid/internal/lab/viewer"
)

// TestViewerVerdict: the viewer's verdict in each case, the lossy one
// against the TCP equation at 1,460-byte segments.
func TestViewerVerdict(t *testing.T) {
	rtt := 100.0
	for _, tc := range []struct {
		r    viewer.Report
		want string
	}{
		{viewer.Report{}, "did not log in: nothing to judge"},
		{viewer.Report{LoggedIn: true}, "nothing received: nothing to judge"},
		{viewer.Report{LoggedIn: true, Received: 100, Bytes: 100_000}, "unknown: no RTT"},
		{viewer.Report{LoggedIn: true, Received: 100, Bytes: 100_000, RTTms: &rtt}, "no loss: the path had room to spare, so no TCP-fair rate bounds it"},
		// 3 % of 1,460-byte segments lost, one event each: TFRC gives
		// 646.4 kbit/s at 100 ms (ratecalc's reference value)
		{viewer.Report{LoggedIn: true, Received: 10_000, Bytes: 14_600_000, Lost: 300, LossEvents: 300, RTTms: &rtt, RateBPS: 2 * 646_400},
			"2.0× its TCP-fair rate (one share, what a TCP flow would get here: about 646.4 kbit/s)"},
	} {
		if got := ViewerVerdict(tc.r); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.r, got, tc.want)
		}
	}
}
