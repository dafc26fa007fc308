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

// cited is every Figure the scenarios quote or refer to, in the order
// declared: the seed test finds each on its line.
var cited []Figure

// cite declares a published figure: quote must stand on line of file (the
// seed test checks it), and value, if not 0, must be written in quote,
// followed by unit as the document writes it (unitWords).
func cite(file string, line int, quote string, value float64, unit string) Figure {
	f := Figure{File: file, Line: line, Quote: quote, Value: value, Unit: unit}
	cited = append(cited, f)
	return f
}

// ref declares a line the lab's prose refers to (in a differs, an
// "ours:" source or a verdict) without publishing a figure from it, and
// returns its FILE:LINE: quote must stand on the line (the seed test
// checks it, as it checks every figure).
func ref(file string, line int, quote string) string {
	return cite(file, line, quote, 0, "").Source()
}

// Source is FILE:LINE.
func (f Figure) Source() string { return fmt.Sprintf("%s:%d", f.File, f.Line) }

// docTitles names each source document for a reader of the output: who
// wrote it and what it is.
var docTitles = map[string]string{
	docCoexistence:  `Saldana, Suznjevic, Sequeira et al., "The Effect of TCP Variants on the Coexistence of MMORPG and Best-Effort Traffic"`,
	docMultiplexing: "Saldana, preliminary NS2 results on multiplexed game TCP flows (tcmtf list)",
	docThesis:       "the thesis, chapters 7 and 8 (the Mongoose client)",
	docWireless:     `Ando, Murase, Oguchi, "Characteristics of QoS-Guaranteed TCP on Real Mobile Terminal in Wireless LAN" (CQR 2011)`,
}

// sourceShown is a source as the text and markdown show it: the
// document's title and line, then its FILE:LINE; ours as it is.
func sourceShown(source string) string {
	file, line, ok := strings.Cut(source, ":")
	title, known := docTitles[file]
	if !ok || !known || isOurs(source) {
		return source
	}
	return fmt.Sprintf("%s, line %s (%s)", title, line, source)
}

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

// The verdicts' one vocabulary: every verdict starts with one of these.
const (
	// Agrees: the document's own claim, judged over the seeds, holds.
	Agrees = "agrees"
	// Disagrees: it does not.
	Disagrees = "disagrees"
	// Reported: the figure is ours, or the document makes no claim we can
	// judge here; the reason says which.
	Reported = "reported"
)

// judge turns a comparison's samples (one per seed, in seed order) into
// a judgement (Agrees, Disagrees or Reported) and the reason, which
// states what was tested and, over several seeds, how many held.
type judge func(samples []float64) (judgement, reason string)

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
	// seeds is each sample's seed, counted from 0 (a seed that did not
	// measure the figure has none): pairs are made by seed.
	seeds []int
	// Unmeasured counts the seeds whose run could not give the figure
	// (mongoose: no loss event seen by the end of the run, so no fair rate):
	// they are left out of Samples, and the verdict says how many.
	Unmeasured int `json:"unmeasured,omitempty"`
	// Starved counts the seeds whose viewer received nothing in the
	// measured part: no fair rate either, but a sample of 0, not an
	// unmeasured one.
	Starved int `json:"starved,omitempty"`
	// loss is each sample's run's measured packet loss, where the
	// row's claim is read off a loss axis (lossJudge); merged by seed as
	// the samples are.
	loss []float64
	// lossJudge, if set, judges the samples beside their runs' loss
	// (figure 7.14's sentences speak of a loss on its axis, not of the
	// loss the link was set to); it replaces judge.
	lossJudge func(samples, loss []float64) (judgement, reason string)
	// Source is the figure's FILE:LINE in ../shared/seeds, or "ours: why"
	// when no document gives it; SourceTitle names the document.
	Source      string `json:"source"`
	SourceTitle string `json:"source_title,omitempty"`
	// Differs says how our set-up differs from the document's: what was
	// scaled down and what we chose where the document is silent.
	Differs string `json:"differs"`
	// Judgement is Agrees, Disagrees or Reported; Verdict is it with the
	// reason ("agrees: ...").
	Judgement string `json:"judgement"`
	Verdict   string `json:"verdict"`
	judge     judge
	// figure is the cited figure the row stands on (none for ours).
	figure Figure
	// pair, if set, judges the row beside another (pairCase, the same
	// scenario) once both have every seed: a claim that compares two of
	// the document's clients.
	pairCase string
	pair     func(self, other []float64) (judgement, reason string)
	// alsoCase and also, if set, judge the row beside a second row as
	// well (a claim against two of the document's clients): it agrees
	// only when both pairs do.
	alsoCase string
	also     func(self, other []float64) (judgement, reason string)
}

// compare is figure f beside one measurement.
func (f Figure) compare(scenario, kase, metric, unit string, measured float64, differs string, j judge) Comparison {
	c := Comparison{Scenario: scenario, Case: kase, Metric: metric, Unit: unit, Published: f.Value, PublishedText: f.published(),
		Source: f.Source(), SourceTitle: docTitles[f.File], Differs: differs, judge: j, figure: f}
	return c.with(measured)
}

// ours is a measurement beside no document: the lab's own row, always
// reported (j, if set, says what we measured against our own bound).
func ours(scenario, kase, metric, unit, why string, published float64, measured float64, differs string, j judge) Comparison {
	c := Comparison{Scenario: scenario, Case: kase, Metric: metric, Unit: unit, Published: published, PublishedText: "-",
		Source: oursSource(why), Differs: differs, judge: oursJudge(j)}
	if published != 0 {
		// A target of ours, not a document's figure.
		c.PublishedText = "- (ours: " + num(published, unit) + ")"
	}
	return c.with(measured)
}

// oursJudge makes any judge's outcome a report: a bound of ours is not a
// document's claim, so it neither agrees nor disagrees.
func oursJudge(j judge) judge {
	return func(s []float64) (string, string) {
		if j == nil {
			return Reported, "ours, no claim to judge"
		}
		_, reason := j(s)
		return Reported, "ours: " + reason
	}
}

// with sets the comparison's samples to one measurement and judges it.
func (c Comparison) with(measured float64) Comparison {
	c.Samples, c.Unmeasured, c.seeds = []float64{measured}, 0, []int{0}
	return c.judged()
}

// unmeasured is c from a run that could not measure it: no sample.
func (c Comparison) unmeasured() Comparison {
	c.Samples, c.Unmeasured, c.seeds, c.loss = nil, 1, nil, nil
	return c.judged()
}

// starved is c from a run whose viewer received nothing: a sample of 0.
func (c Comparison) starved() Comparison {
	c = c.with(0)
	c.Starved = 1
	return c.judged()
}

// atLoss is c with its run's measured packet loss, for lossJudge.
func (c Comparison) atLoss(p float64) Comparison {
	c.loss = []float64{p}
	return c.judged()
}

// judged computes the median, the spread and the verdict of c.Samples.
func (c Comparison) judged() Comparison {
	s := slices.Clone(c.Samples)
	slices.Sort(s)
	c.Measured, c.Min, c.Max = 0, 0, 0
	if len(s) > 0 {
		c.Min, c.Max = s[0], s[len(s)-1]
		c.Measured = s[len(s)/2]
		if len(s)%2 == 0 {
			c.Measured = (s[len(s)/2-1] + s[len(s)/2]) / 2
		}
	}
	c.Judgement, c.Verdict = Reported, Reported+": no claim to judge"
	switch {
	case len(c.Samples) == 0 && c.Unmeasured > 0:
		c.setVerdict(Reported, fmt.Sprintf("no seed of %d measured it (%s)", c.Unmeasured, unmeasuredWhy))
	case c.lossJudge != nil && len(c.Samples) > 0 && len(c.loss) == len(c.Samples):
		c.setVerdict(c.lossJudge(c.Samples, c.loss))
	case c.judge != nil && len(c.Samples) > 0:
		c.setVerdict(c.judge(c.Samples))
	}
	if c.Starved > 0 {
		c.Verdict += fmt.Sprintf("; in %d of the seeds the viewer received nothing in the measured part (counted as 0)", c.Starved)
	}
	if len(c.Samples) > 0 && c.Unmeasured > 0 {
		c.Verdict += fmt.Sprintf("; %d more seeds did not measure it (%s)", c.Unmeasured, unmeasuredWhy)
	}
	return c
}

// unmeasuredWhy is why a run measures no figure: the one case there is.
const unmeasuredWhy = "no loss event seen by the end of the run, so no fair rate"

func (c *Comparison) setVerdict(judgement, reason string) {
	c.Judgement, c.Verdict = judgement, judgement+": "+reason
}

// judgePairs judges the rows that compare themselves with another row,
// once every seed is in.
func judgePairs(cs []Comparison) {
	for i, c := range cs {
		if c.pair == nil || c.lossJudge != nil && len(c.loss) == len(c.Samples) && c.Judgement == Reported && !strings.HasPrefix(c.Verdict, Reported+": judged beside") {
			continue // off the loss axis, or at a loss the sentence does not speak of
		}
		for _, o := range cs {
			if len(c.Samples) == 0 || len(o.Samples) == 0 {
				continue // unmeasured: judged() said so
			}
			if o.Scenario == c.Scenario && o.Case == c.pairCase && o.Metric == c.Metric {
				cs[i].setVerdict(c.pair(bySeed(c, o)))
				if c.lossJudge != nil && len(c.loss) == len(c.Samples) && len(c.loss) > 0 {
					cs[i].Verdict += "; " + lossText(c.loss)
				}
			}
		}
		if c.also == nil || cs[i].Judgement == Reported {
			continue
		}
		for _, o := range cs {
			if len(c.Samples) > 0 && len(o.Samples) > 0 && o.Scenario == c.Scenario && o.Case == c.alsoCase && o.Metric == c.Metric {
				j, why := c.also(bySeed(c, o))
				_, first, _ := strings.Cut(cs[i].Verdict, ": ")
				switch {
				case cs[i].Judgement == Agrees && j != Agrees:
					// Say which test failed, and put it first.
					first, why = outcome(j)+why, "holds: "+first
					cs[i].Judgement = j
				case cs[i].Judgement != Agrees && j == Agrees:
					first, why = outcome(cs[i].Judgement)+first, "holds: "+why
				case cs[i].Judgement != Agrees:
					first, why = outcome(cs[i].Judgement)+first, outcome(j)+why
				}
				cs[i].Verdict = cs[i].Judgement + ": " + first + "; " + why
			}
		}
	}
}

// outcome names a failed test of a row judged on two (judgePairs).
func outcome(judgement string) string {
	if judgement == Disagrees {
		return "fails: "
	}
	return "not judged: "
}

// bySeed is the samples of a and b from the seeds that measured both,
// in seed order: a pair's judge compares them seed by seed.
func bySeed(a, b Comparison) (as, bs []float64) {
	if len(a.seeds) != len(a.Samples) || len(b.seeds) != len(b.Samples) {
		return a.Samples, b.Samples // made by hand (tests): already paired
	}
	at := map[int]float64{}
	for i, s := range b.seeds {
		at[s] = b.Samples[i]
	}
	for i, s := range a.seeds {
		if x, ok := at[s]; ok {
			as, bs = append(as, a.Samples[i]), append(bs, x)
		}
	}
	return as, bs
}

// Judges. Each tests a document's claim on the seeds' central half (their
// 25th to 75th percentile) and says, in its reason, what was tested and
// how many seeds held.

// seedCount is "in k of n seeds" (or "in the one seed").
func seedCount(k, n int) string {
	if n == 1 {
		if k == 1 {
			return "in the one seed run (--seeds N judges the spread)"
		}
		return "not in the one seed run (--seeds N judges the spread)"
	}
	return fmt.Sprintf("in %d of %d seeds", k, n)
}

// count is how many samples satisfy ok.
func count(s []float64, ok func(float64) bool) int {
	n := 0
	for _, x := range s {
		if ok(x) {
			n++
		}
	}
	return n
}

// centralHalf is the seeds' spread a verdict stands on: their 25th and
// 75th percentiles (linear interpolation between the sorted samples, as
// R's type 7), the middle half of the seeds. One seed is its own.
func centralHalf(s []float64) (q25, q75 float64) {
	x := slices.Clone(s)
	slices.Sort(x)
	at := func(q float64) float64 {
		h := q * float64(len(x)-1)
		i := int(h)
		if i+1 >= len(x) {
			return x[len(x)-1]
		}
		return x[i] + (h-float64(i))*(x[i+1]-x[i])
	}
	return at(0.25), at(0.75)
}

// halfText is the central half as a verdict's reason prints it: "the
// seeds' central half 0.72–0.85" (or the one seed's value).
func halfText(s []float64) string {
	if len(s) == 1 {
		return "the one seed's " + num(s[0], "") + " (--seeds N judges the spread)"
	}
	lo, hi := centralHalf(s)
	return fmt.Sprintf("the seeds' central half (25–75 %%) %s–%s", num(lo, ""), num(hi, ""))
}

// publishedInRange: the document's figure, known to its printed
// precision as lo–hi, meets the seeds' central half: a verdict over the
// seeds stands on their spread, not on whichever seed comes nearest. No
// bound of ours: one seed must itself fall within lo–hi. what names the
// figure; asPrinted says how lo–hi was read from it.
func publishedInRange(lo, hi float64, what, asPrinted string) judge {
	bounds := fmt.Sprintf("%s–%s %s", num(lo, ""), num(hi, ""), asPrinted)
	return func(s []float64) (string, string) {
		q25, q75 := centralHalf(s)
		below := count(s, func(x float64) bool { return x < lo })
		above := count(s, func(x float64) bool { return x > hi })
		switch {
		case q25 <= hi && q75 >= lo:
			return Agrees, fmt.Sprintf("the published %s (%s) meets %s", what, bounds, halfText(s))
		case q75 < lo:
			return Disagrees, fmt.Sprintf("%s lies below the published %s (%s); below it %s", halfText(s), what, bounds, seedCount(below, len(s)))
		default:
			return Disagrees, fmt.Sprintf("%s lies above the published %s (%s); above it %s", halfText(s), what, bounds, seedCount(above, len(s)))
		}
	}
}

// noDifference: the document's claim that two figures do not differ
// (their ratio 1, printed as lo–hi) holds when the seeds' central half
// contains 1 and their median lies within lo–hi; it fails when the
// central half lies wholly on one side of 1 or the median outside lo–hi.
// A central half that merely meets lo–hi is not "no difference".
func noDifference(lo, hi float64, asPrinted string) judge {
	hi = max(hi, 1)
	return func(s []float64) (string, string) {
		q25, q75 := centralHalf(s)
		m := medianOf(s)
		below := count(s, func(x float64) bool { return x < lo })
		why := fmt.Sprintf("no difference (the ratio 1; published %s–%s %s): %s, median %s; below %s %s", num(lo, ""), num(hi, ""), asPrinted, halfText(s), num(m, ""), num(lo, ""), seedCount(below, len(s)))
		if q25 <= 1 && q75 >= 1 && m >= lo && m <= hi {
			return Agrees, why
		}
		return Disagrees, why
	}
}

// over: the document's claim that the figure is over line holds when the
// seeds' central half lies wholly over it. claim says what is claimed.
func over(claim string, line float64) judge {
	return func(s []float64) (string, string) {
		q25, _ := centralHalf(s)
		k := count(s, func(x float64) bool { return x > line })
		where := "lies wholly over"
		if q25 <= line {
			where = "reaches or lies under"
		}
		why := fmt.Sprintf("%s: %s %s %s; over it %s", claim, halfText(s), where, num(line, ""), seedCount(k, len(s)))
		if q25 > line {
			return Agrees, why
		}
		return Disagrees, why
	}
}

// under: the document's claim that the figure is under line holds when
// the seeds' central half lies wholly under it.
func under(claim string, line float64) judge {
	return func(s []float64) (string, string) {
		_, q75 := centralHalf(s)
		k := count(s, func(x float64) bool { return x < line })
		where := "lies wholly under"
		if q75 >= line {
			where = "reaches or lies over"
		}
		why := fmt.Sprintf("%s: %s %s %s; under it %s", claim, halfText(s), where, num(line, ""), seedCount(k, len(s)))
		if q75 < line {
			return Agrees, why
		}
		return Disagrees, why
	}
}

// onOrUnder: the document's claim that the figure is on or under line
// holds when the seeds' central half reaches the line or lies under it
// (the line within the spread is on it); it fails when the central half
// lies wholly over it. No tolerance of ours.
func onOrUnder(claim string, line float64) judge {
	return func(s []float64) (string, string) {
		q25, _ := centralHalf(s)
		k := count(s, func(x float64) bool { return x <= line })
		where := "lies wholly over"
		if q25 <= line {
			where = "reaches or lies under"
		}
		why := fmt.Sprintf("%s: %s %s %s; on or under it %s", claim, halfText(s), where, num(line, ""), seedCount(k, len(s)))
		if q25 <= line {
			return Agrees, why
		}
		return Disagrees, why
	}
}

// pairedLess: the document's claim that a figure is smaller in this row
// than in another (paired by seed) holds when the central half of the
// per-seed differences (this minus the other) lies below 0. claim says
// what is compared.
func pairedLess(claim string, self, other []float64) (string, string) {
	n := min(len(self), len(other))
	if n == 0 {
		return Reported, claim + ": no seed measured both"
	}
	d := make([]float64, n)
	for i := range n {
		d[i] = self[i] - other[i]
	}
	q25, q75 := centralHalf(d)
	k := count(d, func(x float64) bool { return x < 0 })
	why := fmt.Sprintf("%s (medians %s against %s): smaller %s; the differences' central half %s to %s", claim, num(medianOf(self), ""), num(medianOf(other), ""),
		seedCount(k, n), num(q25, ""), num(q75, ""))
	if q75 < 0 {
		return Agrees, why
	}
	return Disagrees, why
}

// everySeed counts the seeds in which ok holds: for our own rows, whose
// verdict is reported with the count (oursJudge).
func everySeed(claim string, ok func(float64) bool) judge {
	return func(s []float64) (string, string) {
		k := count(s, ok)
		if k == len(s) {
			return Agrees, claim + " " + seedCount(k, len(s))
		}
		return Disagrees, claim + " only " + seedCount(k, len(s))
	}
}

// reportedAs: no claim to judge, for the reason given.
func reportedAs(why string) judge {
	return func([]float64) (string, string) { return Reported, why }
}

// spread prints a comparison's measurement: the median, and with several
// seeds the range and their number.
func (c Comparison) spread() string {
	var out string
	switch {
	case len(c.Samples) == 0:
		out = "none"
	case len(c.Samples) == 1:
		out = num(c.Measured, c.Unit)
	default:
		out = fmt.Sprintf("%s (%s–%s, %d seeds)", num(c.Measured, c.Unit), num(c.Min, ""), num(c.Max, ""), len(c.Samples))
	}
	if c.Unmeasured > 0 {
		out += fmt.Sprintf(", %d unmeasured", c.Unmeasured)
	}
	return out
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
	for k, r := range rs[1:] {
		if len(r.Comparisons) != len(out.Comparisons) {
			return Result{}, fmt.Errorf("scenario: %s: %d comparisons in one seed, %d in another", r.Scenario, len(r.Comparisons), len(out.Comparisons))
		}
		for i, c := range r.Comparisons {
			oc := &out.Comparisons[i]
			oc.Samples = append(slices.Clone(oc.Samples), c.Samples...)
			oc.loss = append(slices.Clone(oc.loss), c.loss...)
			oc.Starved += c.Starved
			oc.seeds = slices.Clone(oc.seeds)
			for range c.Samples {
				oc.seeds = append(oc.seeds, k+1)
			}
			oc.Unmeasured += c.Unmeasured
		}
		out.Runs = append(out.Runs, r.Runs...)
	}
	for i := range out.Comparisons {
		out.Comparisons[i] = out.Comparisons[i].judged()
	}
	judgePairs(out.Comparisons)
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
