package ratecalc

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// The rates a user may give, in bits/s. Every consumer of a configured or
// typed rate holds it as whole bytes per second in integer arithmetic: the
// link emulator's bottleneck (bytes/s, int64), the scheduler's buckets
// (nano-bytes in int64, which is why opensim.Config refuses more than 2³³
// B/s) and the region's client and scene maxima. So the smallest rate is one
// byte per second, and the largest the scheduler's 2³³ B/s (about 68.7
// Gbit/s, far above any viewer's link); anything outside would be silently
// truncated to "unlimited" or overflow downstream.
const (
	MinBits = 8
	MaxBits = 8 << 33
)

// CheckBits reports whether bps bits/s is a rate every consumer can
// represent: zero (for the settings where it means none or unlimited) or a
// finite value from MinBits to MaxBits. NaN, infinities and negative values
// are errors. The message is in bit/s, the unit of the caller's value.
func CheckBits(bps float64) error {
	return checkBits(bps, strconv.FormatFloat(bps, 'f', -1, 64), "", 1)
}

// checkBits checks bps; typed is the number as the user wrote it and unit
// its suffix (worth mult), so that a message speaks the user's units.
func checkBits(bps float64, typed, unit string, mult float64) error {
	switch {
	case math.IsNaN(bps):
		return fmt.Errorf("%s%s is not a rate", typed, unit)
	case bps < 0:
		return fmt.Errorf("%s%s bit/s is negative", typed, unit)
	case bps > MaxBits: // +Inf included
		return fmt.Errorf("%s%s bit/s is above the %s%s bit/s maximum", typed, unit, formatBits(MaxBits/mult), unit)
	case bps > 0 && bps < MinBits:
		return fmt.Errorf("%s%s bit/s is below the %s%s bit/s minimum (one byte per second)", typed, unit, formatBits(MinBits/mult), unit)
	}
	return nil
}

// formatBits prints x with up to one decimal when it is large, and as many
// as it needs when small (8 bit/s in G is 0.000000008G).
func formatBits(x float64) string {
	if x >= 10 {
		return strconv.FormatFloat(math.Floor(x*10)/10, 'f', -1, 64)
	}
	return strconv.FormatFloat(x, 'f', -1, 64)
}

// ParseBitRate reads a rate in bits/s: a decimal number with an optional k
// (or K), M or G multiplier and an optional unit "bit/s", "bit", "bps" or
// "/s" ("2M", "500k", "1536kbit/s", "2 Mbps", "2M/s"). It accepts zero,
// for the settings where zero means none or unlimited; a setting that
// needs a rate checks that the result is positive. Everything CheckBits refuses is an error in
// the units the user typed ("100G bit/s is above the 68.7G bit/s maximum").
func ParseBitRate(s string) (Rate, error) {
	v := strings.TrimSpace(s)
	for _, u := range []string{"bit/s", "bps", "bit", "/s"} {
		if strings.HasSuffix(v, u) {
			v = strings.TrimSpace(strings.TrimSuffix(v, u))
			break
		}
	}
	unit, mult := "", 1.0
	if n := len(v); n > 0 {
		switch v[n-1] {
		case 'k', 'K':
			unit, mult = "k", 1e3
		case 'M':
			unit, mult = "M", 1e6
		case 'G':
			unit, mult = "G", 1e9
		}
		if unit != "" {
			v = strings.TrimSpace(v[:n-1])
		}
	}
	x, err := strconv.ParseFloat(v, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) || v == "" || !plainDecimal(v) {
		return 0, fmt.Errorf("%q is not a rate: want bits/s such as 2M or 500k", s)
	}
	bps := x * mult
	if mantissa, _, _ := strings.Cut(strings.ToLower(v), "e"); x == 0 && strings.ContainsAny(mantissa, "123456789") {
		// Underflow ("1e-400"): too small for a float64, but not zero.
		bps = math.Copysign(math.SmallestNonzeroFloat64, x)
	}
	if err := checkBits(bps, v, unit, mult); err != nil {
		return 0, err
	}
	return RateFromBits(bps + 0), nil // + 0 turns -0 into 0
}

// plainDecimal rejects what strconv.ParseFloat accepts beyond decimal
// numbers: hexadecimal mantissas, underscores, and the words inf, infinity
// and nan, which would otherwise slip through as rates.
func plainDecimal(v string) bool {
	for _, c := range v {
		if !(c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') {
			return false
		}
	}
	return true
}

// ParseLoss reads a loss rate as a fraction ("0.03") or a percentage
// ("3%") from 0 to 1 (100 %). Zero is zero however it is written ("0",
// "0%", "0.0"); NaN, infinities, negative values and values above 1 are
// errors in the form the user typed.
func ParseLoss(s string) (float64, error) {
	v := strings.TrimSpace(s)
	pct := strings.HasSuffix(v, "%")
	num := strings.TrimSpace(strings.TrimSuffix(v, "%"))
	x, err := strconv.ParseFloat(num, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) || num == "" || !plainDecimal(num) {
		return 0, fmt.Errorf("%q is not a loss rate: want a fraction such as 0.03 or a percentage such as 3%%", s)
	}
	if pct {
		x /= 100
	}
	if !(x >= 0 && x <= 1) {
		if !pct && x > 1 && x <= 100 {
			// A number above 1 was surely meant as a percentage.
			return 0, fmt.Errorf("%s is outside 0 to 1 (0%% to 100%%); for %s %%, write %s%%", v, v, v)
		}
		return 0, fmt.Errorf("%s is outside 0 to 1 (0%% to 100%%)", v)
	}
	return x, nil
}

// BelowFloor is the error for a rate of bps bits/s, typed as s, below a
// setting's floor (floor says what it is, "8 kbit/s"). A bare number is
// taken for one that lacked its k, which the message suggests ("1000"
// for 1000k); with a unit it names the floor alone.
func BelowFloor(s string, bps float64, floor string) error {
	s = strings.TrimSpace(s)
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return fmt.Errorf("%.0f bit/s is below %s; rates are bits/s: did you mean %sk?", bps, floor, s)
	}
	return fmt.Errorf("%.0f bit/s is below %s", bps, floor)
}
