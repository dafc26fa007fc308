package audit

import (
	"fmt"
	"time"

	"github.com/fairgrid/fairgrid/internal/lab/viewer"
	"github.com/fairgrid/fairgrid/ratecalc"
)

// ViewerVerdict judges what a synthetic viewer received as the audit
// judges a circuit:
// against the rate a TCP flow would get at its loss (counted by bytes,
// per 1,460-byte segment) and ping RTT.
func ViewerVerdict(r viewer.Report) string {
	switch {
	case !r.LoggedIn:
		return "did not log in: nothing to judge"
	case r.Received == 0:
		return "nothing received: nothing to judge"
	case r.RTTms == nil:
		return Verdict(FairNoRTT, nil)
	case r.LossEvents == 0:
		return "no loss: the path had room to spare, so no TCP-fair rate bounds it"
	}
	rtt := time.Duration(*r.RTTms * float64(time.Millisecond))
	p := ratecalc.SegmentLossEventRateOver(float64(r.Bytes), float64(r.Lost), float64(r.LossEvents), float64(r.Bytes)/float64(r.Received))
	if !(p > 0) || rtt <= 0 {
		return Verdict(FairNoData, nil)
	}
	fair := ratecalc.TCPShareRate(NominalSegmentBytes, rtt, p)
	ratio := r.RateBPS / fair.BitsPerSecond()
	return fmt.Sprintf("%s (one share, what a TCP flow would get here: about %s)", Verdict(FairKnown, &ratio), fair)
}
