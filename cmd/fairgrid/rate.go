package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/fairgrid/fairgrid/ratecalc"
)

const rateSynopsis = `--loss P --rtt D [--size BYTES] [--format text|json]

Prints the TCP-fair rate of a path with loss event rate P and round-trip
time D, by the TFRC equation (RFC 5348), the Padhye model (64 KiB window)
and the Mathis simplification. P is a fraction or a percentage (0.03 or 3%);
D a duration (100ms). JSON gives bits per second:
{"tfrc_bps":…,"padhye_bps":…,"mathis_bps":…}.`

func runRate(args []string, s stdio) int {
	fs := newFlagSet("rate", rateSynopsis, s)
	lossFlag := fs.String("loss", "", "loss event rate: a fraction (0.03) or a percentage (3%)")
	rtt := fs.Duration("rtt", 0, "round-trip time, for example 100ms")
	size := fs.Float64("size", 1460, "segment size in bytes")
	format := formatFlag(fs, "output format: `text` or json")
	if code, ok := parseFlags(fs, rateSynopsis, args, s); !ok {
		return code
	}
	var problems []string
	loss, err := parseLoss(*lossFlag)
	if err != nil {
		problems = append(problems, "--loss: "+err.Error())
	}
	if *rtt <= 0 {
		problems = append(problems, fmt.Sprintf("--rtt: %v: want a positive duration such as 100ms", *rtt))
	}
	if !(*size >= 1 && *size <= 65535) {
		problems = append(problems, fmt.Sprintf("--size: %v: want 1 to 65535 bytes", *size))
	}
	if fs.NArg() > 0 {
		problems = append(problems, fmt.Sprintf("unexpected arguments: %q", fs.Args()))
	}
	if len(problems) > 0 {
		fmt.Fprintf(s.err, "fairgrid rate: %s\n", strings.Join(problems, "; "))
		return exitUsage
	}
	tfrc := ratecalc.TFRCRate(*size, *rtt, loss)
	padhye := ratecalc.PadhyeModel{}.Rate(*size, *rtt, loss)
	mathis := ratecalc.MathisRate(*size, *rtt, loss)
	if *format == "json" {
		fmt.Fprintf(s.out, "{\"tfrc_bps\":%s,\"padhye_bps\":%s,\"mathis_bps\":%s}\n",
			jsonNumber(tfrc.BitsPerSecond()), jsonNumber(padhye.BitsPerSecond()), jsonNumber(mathis.BitsPerSecond()))
		return exitOK
	}
	fmt.Fprintf(s.out, "path: loss event rate %g, RTT %v, segment %g B\n", loss, *rtt, *size)
	fmt.Fprintf(s.out, "  TFRC (RFC 5348)     %12.1f kbit/s\n", tfrc.BitsPerSecond()/1000)
	fmt.Fprintf(s.out, "  Padhye (64 KiB win) %12.1f kbit/s\n", padhye.BitsPerSecond()/1000)
	fmt.Fprintf(s.out, "  Mathis (no timeouts)%12.1f kbit/s\n", mathis.BitsPerSecond()/1000)
	return exitOK
}

// parseLoss reads a loss rate as a fraction (0.03) or a percentage (3%).
func parseLoss(v string) (float64, error) {
	if v == "" {
		return 0, fmt.Errorf("required, for example 0.03 or 3%%")
	}
	pct := strings.HasSuffix(v, "%")
	x, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(v, "%")), 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number", v)
	}
	if pct {
		x /= 100
	}
	if !(x > 0 && x <= 1) {
		return 0, fmt.Errorf("%q: want a rate above 0 and at most 1 (100%%)", v)
	}
	return x, nil
}

func jsonNumber(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "null"
	}
	return strconv.FormatFloat(x, 'f', 1, 64)
}
