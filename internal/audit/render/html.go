package render

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"html/template"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fairgrid/fairgrid/internal/audit"
)

// maxTableRows bounds the circuits table; the full table is in the CSV,
// JSON and Parquet outputs.
const maxTableRows = 500

// maxMessageRows bounds the message-type table to the types that carry
// most bytes.
const maxMessageRows = 40

type page struct {
	Report     *audit.Report
	Circuits   []audit.Circuit
	Hidden     int // circuits not in the table
	Segment    string
	Jain       string
	Across     []figure
	Missing    []missing
	Busy       []busyCircuit
	BusyOf     int
	Messages   []audit.MessageType
	MoreTypes  int
	Datagrams  int64
	Incomplete int
	MaxSeries  int
}

type busyCircuit struct {
	Circuit *audit.Circuit
	Figures []figure
	Missing []missing
}

// WriteHTML writes r as one self-contained HTML page: the files read, the
// circuits table with the verdict first, and the figures as inline SVG.
// The page needs no network and no JavaScript.
func WriteHTML(w io.Writer, r *audit.Report) error {
	if r == nil {
		return errors.New("html: nil report")
	}
	pg := &page{Report: r, Circuits: r.Circuits, Segment: segmentName(r), MaxSeries: maxSeriesPoints, Jain: "unknown: fewer than two circuits with a known fair rate"}
	if len(pg.Circuits) > maxTableRows {
		pg.Hidden = len(pg.Circuits) - maxTableRows
		pg.Circuits = pg.Circuits[:maxTableRows]
	}
	if r.JainIndex != nil && finite(*r.JainIndex) {
		pg.Jain = strconv.FormatFloat(*r.JainIndex, 'f', 3, 64)
	}
	for _, f := range r.Files {
		pg.Datagrams += f.Datagrams
		if f.StoppedAt != nil {
			pg.Incomplete++
		}
	}
	pg.Messages = slices.Clone(r.Messages)
	slices.SortStableFunc(pg.Messages, func(a, b audit.MessageType) int { return cmp.Compare(b.Bytes, a.Bytes) })
	if len(pg.Messages) > maxMessageRows {
		pg.MoreTypes = len(pg.Messages) - maxMessageRows
		pg.Messages = pg.Messages[:maxMessageRows]
	}

	for i, draw := range []func(*audit.Report) (*figure, *missing, error){perSecondFigure, perConnectionFigure, lossFigure, boxFigure} {
		f, m, err := draw(r)
		if m != nil && len(r.Seconds) == 0 && i != 1 { // all but the per-connection figure draw seconds
			// said once for what it is, not as "no second has traffic"
			m.Reason = "the report holds no per-second rows (fairgrid audit keeps them with --html, --csv, --parquet or --seconds)."
		}
		if err != nil {
			return fmt.Errorf("html: %w", err)
		}
		if f != nil {
			pg.Across = append(pg.Across, *f)
		}
		if m != nil {
			pg.Missing = append(pg.Missing, *m)
		}
	}
	picked, of := busiest(r, busiestCircuits)
	pg.BusyOf = of
	for i := range picked {
		s := &picked[i]
		b := busyCircuit{Circuit: s.circuit}
		rate, err := rateFigure(r, s, i)
		if err != nil {
			return fmt.Errorf("html: %w", err)
		}
		channels, err := channelFigure(s, i)
		if err != nil {
			return fmt.Errorf("html: %w", err)
		}
		b.Figures = append(b.Figures, *rate, *channels)
		rtt, m, err := rttFigure(s, i)
		if err != nil {
			return fmt.Errorf("html: %w", err)
		}
		if rtt != nil {
			b.Figures = append(b.Figures, *rtt)
		}
		if m != nil {
			b.Missing = append(b.Missing, *m)
		}
		loss, err := lossRateFigure(s, i)
		if err != nil {
			return fmt.Errorf("html: %w", err)
		}
		b.Figures = append(b.Figures, *loss)
		pg.Busy = append(pg.Busy, b)
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	if err := pageTemplate.Execute(bw, pg); err != nil {
		return fmt.Errorf("html: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("html: %w", err)
	}
	return nil
}

// Cell formatting: a value the audit could not measure is said in words,
// never shown as 0.
var funcs = template.FuncMap{
	"kbit": func(bps float64) string { return number(bps/1000, 1) },
	"optKbit": func(bps *float64, unknown string) string {
		if bps == nil || !finite(*bps) {
			return unknown
		}
		return number(*bps/1000, 1)
	},
	// the verdict's TCP estimate, which a known fair rate can still lack
	// (no whole segment's worth of bytes lost): said as the verdict says it
	"tcpKbit": func(bps *float64, state string) string {
		if bps == nil || !finite(*bps) {
			return tcpUnknown(state)
		}
		return number(*bps/1000, 1)
	},
	"tcpRatio": func(x *float64, state string) string {
		if x == nil || !finite(*x) {
			return tcpUnknown(state)
		}
		return strconv.FormatFloat(*x, 'f', 2, 64)
	},
	"ratio": func(x *float64, unknown string) string {
		if x == nil || !finite(*x) {
			return unknown
		}
		return strconv.FormatFloat(*x, 'f', 2, 64)
	},
	"ms": func(x *float64, unknown string) string {
		if x == nil || !finite(*x) {
			return unknown
		}
		return strconv.FormatFloat(*x, 'f', 1, 64)
	},
	"pct": func(p float64) string { return strconv.FormatFloat(p*100, 'g', 3, 64) + " %" },
	"int": func(n int64) string { return number(float64(n), 0) },
	"sec": func(s float64) string { return strconv.FormatFloat(s, 'f', 1, 64) },
	"fairState": func(c *audit.Circuit) string {
		if c.FairState == "" {
			return "unknown"
		}
		return c.FairState
	},
	"stop": func(f audit.FileResult) string {
		if f.StoppedAt == nil {
			return "read to the end"
		}
		return fmt.Sprintf("stopped at byte %s: %s", number(float64(*f.StoppedAt), 0), f.StopReason)
	},
	"reasons": func(by map[string]int64) string {
		keys := slices.Sorted(maps.Keys(by))
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = k + ": " + number(float64(by[k]), 0)
		}
		return strings.Join(parts, ", ")
	},
	"span": func(f audit.FileResult) string {
		if f.FirstUnixMs == 0 && f.LastUnixMs == 0 {
			return "no datagram"
		}
		const layout = "2006-01-02 15:04:05.000"
		return time.UnixMilli(f.FirstUnixMs).UTC().Format(layout) + " to " + time.UnixMilli(f.LastUnixMs).UTC().Format(layout)
	},
	"agent": func(c *audit.Circuit) string {
		if c.AgentID == "" {
			return "not seen"
		}
		return c.AgentID
	},
}

func tcpUnknown(state string) string {
	if state == audit.FairKnown {
		return audit.FairNoData
	}
	return state
}

// number writes x with thousands separated by a thin space, which reads
// the same in every locale.
func number(x float64, decimals int) string {
	if !finite(x) {
		return "unknown"
	}
	s := strconv.FormatFloat(math.Abs(x), 'f', decimals, 64)
	whole, frac, _ := strings.Cut(s, ".")
	var b strings.Builder
	if x < 0 {
		b.WriteByte('-')
	}
	for i, d := range whole {
		if i > 0 && (len(whole)-i)%3 == 0 {
			b.WriteString("\u2009")
		}
		b.WriteRune(d)
	}
	if frac != "" {
		b.WriteByte('.')
		b.WriteString(frac)
	}
	return b.String()
}

var pageTemplate = template.Must(template.New("page").Funcs(funcs).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>fairgrid audit: TCP-fairness of LLUDP circuits</title>
<style>
body { font-family: "Liberation Sans", Arial, Helvetica, sans-serif; margin: 1.5em; color: #111; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0 1.5em; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.5em; text-align: right; vertical-align: top; }
th { background: #f0f0f0; }
td.text, th.text { text-align: left; }
td.text { white-space: nowrap; }
td.wrap { text-align: left; max-width: 30em; overflow-wrap: anywhere; }
td.verdict { text-align: left; font-weight: bold; white-space: nowrap; }
td.circuit { text-align: left; min-width: 14em; }
.scroll { overflow-x: auto; max-width: 100%; }
details { margin: 0 0 1.5em; }
summary { cursor: pointer; font-size: 0.9em; }
.figures { display: grid; grid-template-columns: repeat(auto-fill, minmax(min(100%, 36em), 1fr)); gap: 1em 1.5em; margin-bottom: 1.5em; }
figure { margin: 0; min-width: 0; }
figure svg { display: block; box-sizing: border-box; width: 100%; height: auto; border: 1px solid #eee; }
figcaption { font-size: 0.85em; }
p.note { font-size: 0.9em; color: #333; max-width: 60em; }
ul.warnings { color: #8a2b00; font-weight: bold; max-width: 70em; overflow-wrap: anywhere; }
</style>
</head>
<body>
<h1>fairgrid audit</h1>
<p>{{len .Report.Files}} file(s), {{int .Datagrams}} datagrams, {{len .Report.Circuits}} circuit directions.
Jain's fairness index of received/fair over the circuits with a known fair rate: <b>{{.Jain}}</b>.
The figures' TCP-fair rate is TFRC's with s = {{.Segment}}; the circuits table says what the verdicts compare with.</p>

<h2 id="files">Files</h2>
<div class="scroll"><table id="file-table">
<thead><tr><th class="text">file</th><th>bytes</th><th>datagrams</th><th>not LLUDP</th><th>undecoded</th><th class="text">not decoded, by reason</th><th class="text">first and last datagram (UTC)</th><th class="text">where reading stopped</th></tr></thead>
<tbody>
{{range .Report.Files}}<tr><td class="wrap">{{.Name}}</td><td>{{int .Bytes}}</td><td>{{int .Datagrams}}</td><td>{{int .NotLLUDP}}</td><td>{{int .Undecoded}}</td><td class="wrap">{{reasons .UndecodedBy}}</td><td class="wrap">{{span .}}</td><td class="wrap">{{stop .}}</td></tr>
{{end}}</tbody>
</table></div>
{{if .Report.Warnings}}<ul class="warnings">
{{range .Report.Warnings}}<li>{{.}}</li>
{{end}}</ul>
{{end}}{{if .Incomplete}}<p class="note">{{.Incomplete}} file(s) could not be read to the end: the report covers everything before the damage.</p>{{end}}

<h2 id="circuits">Circuits</h2>
<p class="note">One row per circuit and direction. The verdict compares what the simulator sent with the rate a TCP flow would get at the circuit's loss and ping RTT (losses counted by bytes, 1460-byte segments); the viewer throttles only that direction, so upstream rows have none. Where RTT or loss could not be measured the rate is unknown, and with no loss it is unbounded: both are said in words, never given as a number. Every other column, TFRC's fair rate with s = the circuit's mean datagram payload and with TFRC-SP's nominal s = 1460 B (RFC 5348 §3.1, RFC 4828) among them, is in the full table below.{{if .Hidden}} The tables show the first {{len .Circuits}}; the other {{.Hidden}} are in the CSV, JSON and Parquet outputs.{{end}}</p>
<div class="scroll"><table id="circuit-table">
<thead><tr><th class="text">verdict</th><th class="text">circuit</th><th class="text">direction</th><th>packets</th><th>mean (kbit/s)</th><th>loss event rate</th><th>RTT, pings (ms)</th><th>TCP flow's rate, est. (kbit/s)</th><th>received / TCP est.</th><th>last request (kbit/s)</th></tr></thead>
<tbody>
{{range .Circuits}}{{$state := fairState .}}<tr><td class="verdict">{{.Verdict}}</td><td class="circuit">{{.Circuit}}</td><td class="text">{{.Direction}}</td><td>{{int .Packets}}</td><td>{{kbit .MeanBitPerS}}</td><td>{{pct .LossEventRate}}</td><td>{{ms .RTTMs "unknown: no ping pairs"}}</td><td>{{tcpKbit .FairTCP $state}}</td><td>{{tcpRatio .ReceivedOverTCP $state}}</td><td>{{if eq .Direction "down"}}{{optKbit .LastRequestBitPerS "none seen"}}{{end}}</td></tr>
{{end}}</tbody>
</table></div>
<details id="circuit-details"><summary>Every column ({{len .Circuits}} rows): agent, file, peak rate, loss rate, spurious resends, duplicates, RTT from acks, the fair rates by TFRC and Mathis, the per-second ratios and the requests</summary>
<div class="scroll"><table id="circuit-table-full">
<thead><tr><th class="text">verdict</th><th class="text">circuit</th><th class="text">direction</th><th class="text">agent</th><th class="text">file</th><th>duration (s)</th><th>packets</th><th>mean (kbit/s)</th><th>peak 1 s (kbit/s)</th><th>loss rate</th><th>loss event rate</th><th>spurious resends</th><th>duplicates</th><th>RTT, pings (ms)</th><th>RTT, acks (ms)</th><th>TCP flow's rate, est. (kbit/s)</th><th>received / TCP est.</th><th>fair, mean s (kbit/s)</th><th>fair, s = 1460 B (kbit/s)</th><th>Mathis (kbit/s)</th><th>received / fair</th><th>per-second ratio: median [25 %, 75 %]</th><th>requests</th><th>last request (kbit/s)</th><th>requested / fair</th></tr></thead>
<tbody>
{{range .Circuits}}{{$state := fairState .}}<tr><td class="verdict">{{.Verdict}}</td><td class="text">{{.Circuit}}</td><td class="text">{{.Direction}}</td><td class="text">{{agent .}}</td><td class="text">{{.File}}</td><td>{{sec .DurationS}}</td><td>{{int .Packets}}</td><td>{{kbit .MeanBitPerS}}</td><td>{{kbit .PeakBitPerS}}</td><td>{{pct .LossRate}}</td><td>{{pct .LossEventRate}}</td><td>{{int .SpuriousResends}}</td><td>{{int .Duplicates}}</td><td>{{ms .RTTMs "unknown: no ping pairs"}}</td><td>{{ms .AckRTTMs "not measured"}}</td><td>{{tcpKbit .FairTCP $state}}</td><td>{{tcpRatio .ReceivedOverTCP $state}}</td><td>{{optKbit .FairMeanS $state}}</td><td>{{optKbit .FairNominal $state}}</td><td>{{optKbit .Mathis $state}}</td><td>{{ratio .ReceivedOverFair $state}}</td><td>{{ratio .RatioMedian $state}}{{if .RatioMedian}} [{{ratio .RatioP25 "?"}}, {{ratio .RatioP75 "?"}}]{{end}}</td><td>{{.Requests}}</td><td>{{optKbit .LastRequestBitPerS "none seen"}}</td><td>{{ratio .RequestedOverFair (or (and .LastRequestBitPerS $state) "no request")}}</td></tr>
{{end}}</tbody>
</table></div>
</details>

<h2 id="across">Across circuits</h2>
{{if .Across}}<div class="figures">
{{range .Across}}<figure id="fig-{{.ID}}">
{{.SVG}}<figcaption><b>{{.Title}}.</b> {{.Caption}}</figcaption>
</figure>
{{end}}</div>
{{end}}{{range .Missing}}<p class="note"><b>{{.Title}}:</b> no figure, {{.Reason}}</p>
{{end}}
<h2 id="over-time">Over time: the busiest circuits</h2>
{{if .Busy}}<p class="note">The {{len .Busy}} downstream circuit(s) that carried most bytes, of {{.BusyOf}} with per-second data; the others are in the seconds and requests tables of the CSV, JSON and Parquet outputs. Long captures are averaged over consecutive seconds so each line keeps at most {{.MaxSeries}} points; the captions say where.</p>
{{else}}<p class="note">No figure over time: the report has no per-second data for a downstream circuit.</p>
{{end}}{{range .Busy}}<h3>{{.Circuit.Circuit}} ({{.Circuit.Direction}}): {{.Circuit.Verdict}}</h3>
<div class="figures">
{{range .Figures}}<figure id="fig-{{.ID}}">
{{.SVG}}<figcaption><b>{{.Title}}.</b> {{.Caption}}</figcaption>
</figure>
{{end}}</div>
{{range .Missing}}<p class="note"><b>{{.Title}}:</b> no figure, {{.Reason}}</p>
{{end}}{{end}}
<h2 id="messages">Message types</h2>
<table>
<thead><tr><th class="text">message</th><th>packets</th><th>bytes</th></tr></thead>
<tbody>
{{range .Messages}}<tr><td class="text">{{.Name}}</td><td>{{int .Packets}}</td><td>{{int .Bytes}}</td></tr>
{{end}}</tbody>
</table>
{{if .MoreTypes}}<p class="note">{{.MoreTypes}} more message types carried fewer bytes; they are in the JSON output.</p>{{end}}
</body>
</html>
`))

// WriteHTMLFile writes the HTML report into the file at path; a file
// left half-written by an error is removed.
func WriteHTMLFile(path string, r *audit.Report) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("html: %w", err)
	}
	bw := bufio.NewWriterSize(f, 256<<10)
	err = WriteHTML(bw, r)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("html %s: %w", path, err)
	}
	return nil
}
