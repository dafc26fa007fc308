package scenario

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// The source documents, as ../shared/seeds/README.md names them. Every
// figure a scenario quotes as published cites one of them by file and
// line (Figure), and the seed test finds it there.
const (
	// docCoexistence: Saldana, Suznjevic, Sequeira et al., "The Effect of
	// TCP Variants on the Coexistence of MMORPG and Best-Effort Traffic"
	// (NS2: WoW beside an FTP upload on an ADSL access link).
	docCoexistence = "000_6377d885c127798c.txt"
	// docMultiplexing: J. Saldana's message to the tcmtf list with
	// preliminary NS2 results (application-limited TCP game flows, one
	// branch with a sawtooth multiplexing delay).
	docMultiplexing = "001_e9d8247e49fbaed2.txt"
	// docThesis: the thesis, chapters 7 and 8 (the Mongoose client). It
	// names no author or year: cited as "the thesis, chapter 7".
	docThesis = "002_de6dcb7b65c28c7b.txt"
	// docWireless: Ando, Murase, Oguchi, "Characteristics of
	// QoS-Guaranteed TCP on Real Mobile Terminal in Wireless LAN" (CQR 2011
	// slides).
	docWireless = "003_0f0edd6803f39f4d.txt"
)

// Figure is what a document published, where it stands: its file, the
// line, and the words on that line (Quote) that state it. Value is the
// number the quote gives, if any (0 for a qualitative finding). Figures
// are made by cite only, which lists them for the seed test.
type Figure struct {
	File  string  `json:"file"`
	Line  int     `json:"line"`
	Quote string  `json:"quote"`
	Value float64 `json:"value,omitempty"`
	Unit  string  `json:"unit,omitempty"`
}

// cited is every Figure the scenarios quote, in the order declared.
var cited []Figure

// cite declares a published figure: quote must stand on line of file (the
// seed test checks it), and value, if not 0, must be written in quote.
func cite(file string, line int, quote string, value float64, unit string) Figure {
	f := Figure{File: file, Line: line, Quote: quote, Value: value, Unit: unit}
	cited = append(cited, f)
	return f
}

// Source is FILE:LINE.
func (f Figure) Source() string { return fmt.Sprintf("%s:%d", f.File, f.Line) }

// published is what a table prints in its "published" column.
func (f Figure) published() string {
	if f.Value != 0 {
		return num(f.Value, f.Unit)
	}
	return "\"" + f.Quote + "\""
}

// oursSource is the source of a figure no document gives: the word "ours",
// then why.
func oursSource(why string) string { return "ours: " + why }

// isOurs reports whether a source is ours rather than a document's.
func isOurs(source string) bool { return strings.HasPrefix(source, "ours") }

// judge turns a comparison's samples (one per seed) into a verdict, and
// whether the measurement is what the lab asserts (the document's result
// where we reproduce it, what we measure where we do not).
type judge func(samples []float64) (verdict string, ok bool)

// Comparison is one measured figure beside the published one, over one
// or more seeds.
type Comparison struct {
	Scenario string `json:"scenario"`
	// Case names the set-up as the document does (A to D for
	// multiplexing) or as the table's row does.
	Case   string `json:"case"`
	Metric string `json:"metric"`
	Unit   string `json:"unit"`
	// Published is the document's figure (0 for a qualitative finding or
	// ours); PublishedText is what the table prints for it.
	Published     float64 `json:"published,omitempty"`
	PublishedText string  `json:"published_text"`
	// Measured is the median over the seeds; Min and Max the spread;
	// Samples each seed's value in seed order.
	Measured float64   `json:"measured"`
	Min      float64   `json:"min"`
	Max      float64   `json:"max"`
	Samples  []float64 `json:"samples"`
	// Source is the figure's FILE:LINE in ../shared/seeds, or "ours: why"
	// when no document gives it.
	Source string `json:"source"`
	// Differs says how our set-up differs from the document's: what was
	// scaled down and what we chose where the document is silent.
	Differs string `json:"differs"`
	// Verdict says what the measurement shows against the document; OK
	// whether it is what the lab asserts.
	Verdict string `json:"verdict"`
	OK      bool   `json:"ok"`
	judge   judge
}

// compare is figure f beside one measurement.
func (f Figure) compare(scenario, kase, metric, unit string, measured float64, differs string, j judge) Comparison {
	c := Comparison{Scenario: scenario, Case: kase, Metric: metric, Unit: unit, Published: f.Value, PublishedText: f.published(),
		Source: f.Source(), Differs: differs, judge: j}
	return c.with(measured)
}

// ours is a measurement beside no document: the lab's own row.
func ours(scenario, kase, metric, unit, why string, published float64, measured float64, differs string, j judge) Comparison {
	c := Comparison{Scenario: scenario, Case: kase, Metric: metric, Unit: unit, Published: published, PublishedText: "-",
		Source: oursSource(why), Differs: differs, judge: j}
	if published != 0 {
		c.PublishedText = num(published, unit)
	}
	return c.with(measured)
}

// with sets the comparison's samples to one measurement and judges it.
func (c Comparison) with(measured float64) Comparison {
	c.Samples = []float64{measured}
	return c.judged()
}

// judged computes the median, the spread and the verdict of c.Samples.
func (c Comparison) judged() Comparison {
	s := slices.Clone(c.Samples)
	slices.Sort(s)
	if len(s) > 0 {
		c.Min, c.Max = s[0], s[len(s)-1]
		c.Measured = s[len(s)/2]
		if len(s)%2 == 0 {
			c.Measured = (s[len(s)/2-1] + s[len(s)/2]) / 2
		}
	}
	c.Verdict, c.OK = "-", true
	if c.judge != nil {
		c.Verdict, c.OK = c.judge(c.Samples)
	}
	return c
}

// Judges. Each states its bound in its verdict, so that the table shows
// what was asserted.

// allAtMost: every sample at most limit.
func allAtMost(limit float64, yes, no string) judge {
	return func(s []float64) (string, bool) {
		if m := slices.Max(s); m <= limit {
			return fmt.Sprintf("%s (every seed ≤ %.2f)", yes, limit), true
		}
		return fmt.Sprintf("%s (a seed above %.2f: %.2f)", no, limit, slices.Max(s)), false
	}
}

// allBelow: every sample below limit.
func allBelow(limit float64, yes, no string) judge {
	return func(s []float64) (string, bool) {
		if m := slices.Max(s); m < limit {
			return fmt.Sprintf("%s (every seed < %.2f)", yes, limit), true
		}
		return fmt.Sprintf("%s (a seed at %.2f, not < %.2f)", no, slices.Max(s), limit), false
	}
}

// allAtLeast: every sample at least limit.
func allAtLeast(limit float64, yes, no string) judge {
	return func(s []float64) (string, bool) {
		if m := slices.Min(s); m >= limit {
			return fmt.Sprintf("%s (every seed ≥ %s)", yes, num(limit, "")), true
		}
		return fmt.Sprintf("%s (a seed at %s, under %s)", no, num(slices.Min(s), ""), num(limit, "")), false
	}
}

// allWithin: every sample in [lo, hi].
func allWithin(lo, hi float64, yes, no string) judge {
	return func(s []float64) (string, bool) {
		if slices.Min(s) >= lo && slices.Max(s) <= hi {
			return fmt.Sprintf("%s (every seed in %.3g–%.3g)", yes, lo, hi), true
		}
		return fmt.Sprintf("%s (seeds %.3g–%.3g, outside %.3g–%.3g)", no, slices.Min(s), slices.Max(s), lo, hi), false
	}
}

// logged: reported, not judged.
func logged(what string) judge {
	return func([]float64) (string, bool) { return what, true }
}

// spread prints a comparison's measurement: the median, and with several
// seeds the range and their number.
func (c Comparison) spread() string {
	if len(c.Samples) <= 1 {
		return num(c.Measured, c.Unit)
	}
	return fmt.Sprintf("%s (%s–%s, %d seeds)", num(c.Measured, c.Unit), num(c.Min, ""), num(c.Max, ""), len(c.Samples))
}

// mergeSeeds joins one result per seed (the same runs, in the same order,
// with other seeds) into one: every comparison's samples in seed order,
// with median, spread and verdict over them; the first seed's tables; all
// runs.
func mergeSeeds(rs []Result) (Result, error) {
	if len(rs) == 0 {
		return Result{}, nil
	}
	out := rs[0]
	out.Comparisons = slices.Clone(out.Comparisons)
	out.Runs = slices.Clone(out.Runs)
	for _, r := range rs[1:] {
		if len(r.Comparisons) != len(out.Comparisons) {
			return Result{}, fmt.Errorf("scenario: %s: %d comparisons in one seed, %d in another", r.Scenario, len(r.Comparisons), len(out.Comparisons))
		}
		for i, c := range r.Comparisons {
			out.Comparisons[i].Samples = append(out.Comparisons[i].Samples, c.Samples...)
		}
		out.Runs = append(out.Runs, r.Runs...)
	}
	for i := range out.Comparisons {
		out.Comparisons[i] = out.Comparisons[i].judged()
	}
	if len(rs) > 1 {
		for i := range out.Tables {
			out.Tables[i].Title += " (first seed)"
		}
	}
	return out, nil
}

// median of xs; NaN if empty.
func medianOf(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	c := Comparison{Samples: xs}.judged()
	return c.Measured
}
