package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/fairgrid/fairgrid/internal/cli"
	"github.com/fairgrid/fairgrid/ratecalc"
)

func runRate(args []string, s stdio) int {
	fs := newFlagSet("rate", cli.RateSynopsis, s)
	lossFlag := fs.String("loss", "", "loss event rate: a fraction (0.03) or a percentage (3%)")
	rtt := fs.Duration("rtt", 0, "round-trip time, for example 100ms")
	size := fs.Float64("size", 1460, "segment size in bytes")
	format := formatFlag(fs, "output format: `text` or json")
	if code, ok := parseFlags(fs, cli.RateSynopsis, args, s); !ok {
		return code
	}
	var problems []string
	loss, err := ratecalc.ParseLoss(*lossFlag)
	switch {
	case *lossFlag == "":
		problems = append(problems, "--loss: required, for example 0.03 or 3%")
	case err != nil:
		problems = append(problems, "--loss: "+err.Error())
	case loss == 0:
		problems = append(problems, fmt.Sprintf("--loss %s: want a loss event rate above 0 (a lossless path has no TCP-fair rate)", *lossFlag))
	}
	if *rtt <= 0 {
		problems = append(problems, fmt.Sprintf("--rtt: %v: want a positive duration such as 100ms", *rtt))
	}
	if !(*size >= 1 && *size <= 65535) {
		problems = append(problems, fmt.Sprintf("--size: %v: want 1 to 65535 bytes", *size))
	}
	if len(problems) > 0 {
		fmt.Fprintf(s.err, "fairgrid rate: %s\n", strings.Join(problems, "; "))
		return exitUsage
	}
	// The equations clamp what they cannot use (ratecalc, "Bad input"):
	// the numbers printed are those they computed with, and a clamp is
	// said, with what was given.
	_, usedRTT, usedLoss := ratecalc.EquationInputs(*size, *rtt, loss)
	tfrc := ratecalc.TFRCRate(*size, usedRTT, usedLoss)
	padhye := ratecalc.PadhyeModel{}.Rate(*size, usedRTT, usedLoss)
	mathis := ratecalc.MathisRate(*size, usedRTT, usedLoss)
	share := ratecalc.TCPShareRate(*size, usedRTT, usedLoss)
	out := &cli.ResultWriter{W: s.out}
	if *format == "json" {
		var clamped []string
		if usedLoss != loss {
			clamped = append(clamped, fmt.Sprintf("\"loss_event_rate\":%s", strconv.FormatFloat(usedLoss, 'g', -1, 64)))
		}
		if usedRTT != *rtt {
			clamped = append(clamped, fmt.Sprintf("\"rtt_s\":%s", strconv.FormatFloat(usedRTT.Seconds(), 'g', -1, 64)))
		}
		note := ""
		if len(clamped) > 0 {
			note = ",\"clamped\":{" + strings.Join(clamped, ",") + "}"
		}
		fmt.Fprintf(out, "{\"tfrc_bps\":%s,\"padhye_bps\":%s,\"mathis_bps\":%s,\"tcp_share_bps\":%s%s}\n",
			jsonNumber(tfrc.BitsPerSecond()), jsonNumber(padhye.BitsPerSecond()), jsonNumber(mathis.BitsPerSecond()),
			jsonNumber(share.BitsPerSecond()), note)
		return out.Finish(s.err, "rate", exitOK)
	}
	fmt.Fprintf(out, "path: loss event rate %g, RTT %v, segment %g B\n", usedLoss, usedRTT, *size)
	if usedLoss != loss {
		fmt.Fprintf(out, "  (loss event rate clamped from %g to the equations' minimum, %g)\n", loss, usedLoss)
	}
	if usedRTT != *rtt {
		fmt.Fprintf(out, "  (RTT clamped from %v to the equations' range [%v, %v])\n", *rtt, ratecalc.MinRTT, ratecalc.MaxRTT)
	}
	fmt.Fprintf(out, "  TFRC (RFC 5348)     %12.1f kbit/s\n", tfrc.BitsPerSecond()/1000)
	fmt.Fprintf(out, "  Padhye (64 KiB win) %12.1f kbit/s\n", padhye.BitsPerSecond()/1000)
	fmt.Fprintf(out, "  Mathis (no timeouts)%12.1f kbit/s\n", mathis.BitsPerSecond()/1000)
	fmt.Fprintf(out, "  one share (TCP flow)%12.1f kbit/s\n", share.BitsPerSecond()/1000)
	return out.Finish(s.err, "rate", exitOK)
}

func jsonNumber(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "null"
	}
	return strconv.FormatFloat(x, 'f', 1, 64)
}
