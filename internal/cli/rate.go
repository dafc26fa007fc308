package cli

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/fairgrid/fairgrid/ratecalc"
)

// RateProblems checks fairgrid rate's --loss (as given), --rtt and
// --size: the loss event rate, and what is wrong with them, each a
// phrase naming its flag.
func RateProblems(lossFlag string, rtt time.Duration, size float64) (float64, []string) {
	var problems []string
	loss, err := ratecalc.ParseLoss(lossFlag)
	switch {
	case lossFlag == "":
		problems = append(problems, "--loss: required, for example 0.03 or 3%")
	case err != nil:
		problems = append(problems, "--loss: "+err.Error())
	case loss == 0:
		problems = append(problems, fmt.Sprintf("--loss %s: want a loss event rate above 0 (a lossless path has no TCP-fair rate)", lossFlag))
	}
	if rtt <= 0 {
		problems = append(problems, fmt.Sprintf("--rtt: %v: want a positive duration such as 100ms", rtt))
	}
	if !(size >= 1 && size <= 65535) {
		problems = append(problems, fmt.Sprintf("--size: %v: want 1 to 65535 bytes", size))
	}
	return loss, problems
}

// WriteRates is fairgrid rate's output: a path's TCP-fair rates by each
// equation, as text or one JSON object.
func WriteRates(w io.Writer, size float64, rtt time.Duration, loss float64, asJSON bool) {
	// The equations clamp what they cannot use (ratecalc, "Bad input"):
	// the numbers printed are those they computed with, and a clamp is
	// said, with what was given.
	_, usedRTT, usedLoss := ratecalc.EquationInputs(size, rtt, loss)
	tfrc := ratecalc.TFRCRate(size, usedRTT, usedLoss)
	padhye := ratecalc.PadhyeModel{}.Rate(size, usedRTT, usedLoss)
	mathis := ratecalc.MathisRate(size, usedRTT, usedLoss)
	share := ratecalc.TCPShareRate(size, usedRTT, usedLoss)
	if asJSON {
		var clamped []string
		if usedLoss != loss {
			clamped = append(clamped, fmt.Sprintf("\"loss_event_rate\":%s", strconv.FormatFloat(usedLoss, 'g', -1, 64)))
		}
		if usedRTT != rtt {
			clamped = append(clamped, fmt.Sprintf("\"rtt_s\":%s", strconv.FormatFloat(usedRTT.Seconds(), 'g', -1, 64)))
		}
		note := ""
		if len(clamped) > 0 {
			note = ",\"clamped\":{" + strings.Join(clamped, ",") + "}"
		}
		fmt.Fprintf(w, "{\"tfrc_bps\":%s,\"padhye_bps\":%s,\"mathis_bps\":%s,\"tcp_share_bps\":%s%s}\n",
			jsonNumber(tfrc.BitsPerSecond()), jsonNumber(padhye.BitsPerSecond()), jsonNumber(mathis.BitsPerSecond()),
			jsonNumber(share.BitsPerSecond()), note)
		return
	}
	fmt.Fprintf(w, "path: loss event rate %g, RTT %v, segment %g B\n", usedLoss, usedRTT, size)
	if usedLoss != loss {
		fmt.Fprintf(w, "  (loss event rate clamped from %g to the equations' minimum, %g)\n", loss, usedLoss)
	}
	if usedRTT != rtt {
		fmt.Fprintf(w, "  (RTT clamped from %v to the equations' range [%v, %v])\n", rtt, ratecalc.MinRTT, ratecalc.MaxRTT)
	}
	fmt.Fprintf(w, "  TFRC (RFC 5348)     %12.1f kbit/s\n", tfrc.BitsPerSecond()/1000)
	fmt.Fprintf(w, "  Padhye (64 KiB win) %12.1f kbit/s\n", padhye.BitsPerSecond()/1000)
	fmt.Fprintf(w, "  Mathis (no timeouts)%12.1f kbit/s\n", mathis.BitsPerSecond()/1000)
	fmt.Fprintf(w, "  one share (TCP flow)%12.1f kbit/s\n", share.BitsPerSecond()/1000)
}

func jsonNumber(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "null"
	}
	return strconv.FormatFloat(x, 'f', 1, 64)
}
