package ratecalc

import (
	"math"
	"strconv"
	"strings"
	"testing"
)

func TestParseBitRate(t *testing.T) {
	for _, tc := range []struct {
		in      string
		bps     float64
		wantErr string // substring; empty: no error
	}{
		{"2M", 2e6, ""},
		{"500k", 500e3, ""},
		{"500K", 500e3, ""},
		{"1536k", 1536e3, ""},
		{"1G", 1e9, ""},
		{"64000", 64000, ""},
		{" 2M ", 2e6, ""},
		{"2Mbit/s", 2e6, ""},
		{"2Mbit", 2e6, ""},
		{"2 Mbps", 2e6, ""},
		{"2M/s", 2e6, ""},
		{"500k/s", 500e3, ""},
		{"1.5M", 1.5e6, ""},
		{"8", 8, ""},
		{"0", 0, ""},
		{"0k", 0, ""},
		{"0.0", 0, ""},
		{"-0", 0, ""},
		{"68.719476736G", MaxBits, ""},
		{"100G", 0, "100G bit/s is above the 68.7G bit/s maximum"},
		{"100000M", 0, "100000M bit/s is above the 68719.4M bit/s maximum"},
		{"1e11", 0, "1e11 bit/s is above the 68719476736 bit/s maximum"},
		{"1e400", 0, "above the"},
		{"1e308G", 0, "above the"},
		{"7", 0, "7 bit/s is below the 8 bit/s minimum"},
		{"0.001k", 0, "0.001k bit/s is below the 0.008k bit/s minimum"},
		{"1e-400", 0, "below the"},
		{"-1", 0, "-1 bit/s is negative"},
		{"-2M", 0, "-2M bit/s is negative"},
		{"NaN", 0, "not a rate"},
		{"nan", 0, "not a rate"},
		{"Inf", 0, "not a rate"},
		{"+Inf", 0, "not a rate"},
		{"infinity", 0, "not a rate"},
		{"InfM", 0, "not a rate"},
		{"0x1p20", 0, "not a rate"},
		{"1_000", 0, "not a rate"},
		{"", 0, "not a rate"},
		{"M", 0, "not a rate"},
		{"2m", 0, "not a rate"},
		{"2 MB/s", 0, "not a rate"},
		{"fast", 0, "not a rate"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			r, err := ParseBitRate(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseBitRate(%q) = %v, %v; want an error containing %q", tc.in, r, err, tc.wantErr)
				}
				return
			}
			if err != nil || r.BitsPerSecond() != tc.bps || math.Signbit(float64(r)) {
				t.Fatalf("ParseBitRate(%q) = %v bit/s, %v; want %v", tc.in, r.BitsPerSecond(), err, tc.bps)
			}
		})
	}
}

func TestCheckBits(t *testing.T) {
	for _, tc := range []struct {
		bps     float64
		wantErr string
	}{
		{0, ""},
		{8, ""},
		{64000, ""},
		{MaxBits, ""},
		{7.9, "7.9 bit/s is below the 8 bit/s minimum"},
		{1e11, "100000000000 bit/s is above the 68719476736 bit/s maximum"},
		{math.Inf(1), "above the"},
		{math.Inf(-1), "negative"},
		{-1, "-1 bit/s is negative"},
		{math.NaN(), "NaN is not a rate"},
	} {
		t.Run(strconv.FormatFloat(tc.bps, 'g', -1, 64), func(t *testing.T) {
			err := CheckBits(tc.bps)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("CheckBits(%v) = %v; want error %q", tc.bps, err, tc.wantErr)
			}
		})
	}
}

func TestParseLoss(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    float64
		wantErr string
	}{
		{"0", 0, ""},
		{"0%", 0, ""},
		{"0.0", 0, ""},
		{"0.0%", 0, ""},
		{"0.03", 0.03, ""},
		{"3%", 0.03, ""},
		{" 3 % ", 0.03, ""},
		{"1", 1, ""},
		{"100%", 1, ""},
		{"1e-400", 0, ""},
		{"101%", 0, "101% is outside 0 to 1"},
		{"1.5", 0, "1.5 is outside 0 to 1 (0% to 100%); for 1.5 %, write 1.5%"},
		{"3", 0, "3 is outside 0 to 1 (0% to 100%); for 3 %, write 3%"},
		{"100", 0, "for 100 %, write 100%"},
		{"-0.1", 0, "-0.1 is outside"},
		{"-1%", 0, "-1% is outside"},
		{"1e400", 0, "outside"},
		{"NaN", 0, "not a loss rate"},
		{"NaN%", 0, "not a loss rate"},
		{"Inf", 0, "not a loss rate"},
		{"", 0, "not a loss rate"},
		{"%", 0, "not a loss rate"},
		{"3%%", 0, "not a loss rate"},
		{"0x1p-4", 0, "not a loss rate"},
		{"some", 0, "not a loss rate"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			x, err := ParseLoss(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseLoss(%q) = %v, %v; want an error containing %q", tc.in, x, err, tc.wantErr)
				}
				return
			}
			if err != nil || math.Abs(x-tc.want) > 1e-15 {
				t.Fatalf("ParseLoss(%q) = %v, %v; want %v", tc.in, x, err, tc.want)
			}
		})
	}
}

// TestBelowFloor: a bare number below a rate floor is taken for a missing k
// and suggested with one; a rate with its unit is told the floor alone
// (never "4kk").
func TestBelowFloor(t *testing.T) {
	for _, tc := range []struct {
		v    string
		bps  float64
		want string
	}{
		{"1000", 1000, "1000 bit/s is below 8 kbit/s; rates are bits/s: did you mean 1000k?"},
		{" 2.5 ", 2.5, "2 bit/s is below 8 kbit/s; rates are bits/s: did you mean 2.5k?"},
		{"4k", 4000, "4000 bit/s is below 8 kbit/s"},
		{"4000bit/s", 4000, "4000 bit/s is below 8 kbit/s"},
	} {
		if got := BelowFloor(tc.v, tc.bps, "8 kbit/s").Error(); got != tc.want {
			t.Errorf("BelowFloor(%q) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

// FuzzParseBitRate checks that no input panics and that whatever is
// accepted is a rate every consumer can hold, which parses back to itself.
func FuzzParseBitRate(f *testing.F) {
	for _, s := range []string{"2M", "500k", "1536kbit/s", "0", "7", "100G", "NaN", "-1", "1e400", "0x10", "2 Mbps", "1e-400"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseBitRate(s)
		if err != nil {
			if r != 0 {
				t.Fatalf("ParseBitRate(%q) = %v with error %v", s, r, err)
			}
			return
		}
		bps := r.BitsPerSecond()
		if err := CheckBits(bps); err != nil {
			t.Fatalf("ParseBitRate(%q) accepted %v bit/s, which CheckBits refuses: %v", s, bps, err)
		}
		if math.Signbit(bps) {
			t.Fatalf("ParseBitRate(%q) = -0", s)
		}
		back, err := ParseBitRate(strconv.FormatFloat(bps, 'g', -1, 64))
		if err != nil || back != r {
			t.Fatalf("ParseBitRate(%q) = %v bit/s, which reads back as %v, %v", s, bps, back.BitsPerSecond(), err)
		}
	})
}

// FuzzParseLoss checks that no input panics and that every accepted loss
// rate is a probability.
func FuzzParseLoss(f *testing.F) {
	for _, s := range []string{"0", "0%", "0.0", "3%", "0.03", "100%", "101%", "NaN", "-0", "Inf%"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		x, err := ParseLoss(s)
		if err == nil && !(x >= 0 && x <= 1) {
			t.Fatalf("ParseLoss(%q) = %v, outside [0, 1]", s, x)
		}
	})
}
