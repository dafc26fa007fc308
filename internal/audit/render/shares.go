package render

import (
	"bufio"
	"errors"
	"fmt"
	"html/template"
	"io"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// SharePanel is one panel of a share figure: a controller's viewer ÷ TCP
// ratio in each cell of a grid.
type SharePanel struct {
	Title string
	Cells []ShareCell
}

// ShareCell is one cell's ratio, with the spread of its seeds.
type ShareCell struct {
	Label         string
	Ratio, Lo, Hi float64
}

// The band the project promises: 0.8–1.25× one TCP flow's bytes/s.
const (
	shareLow  = 0.8
	shareHigh = 1.25
)

// WriteSharesHTML writes one self-contained HTML page of panels, one
// figure each (viewer ÷ TCP per cell on a log axis, the seeds' range as a
// bar, the 0.8–1.25 band dashed), and a table of the cells: the figure of
// fairgrid lab fairness, drawn as the audit draws its own.
func WriteSharesHTML(w io.Writer, title string, panels []SharePanel) error {
	if len(panels) == 0 {
		return errors.New("html: no panels")
	}
	type shown struct {
		Title string
		SVG   template.HTML
		Cells []ShareCell
	}
	var pg struct {
		Title  string
		Panels []shown
	}
	pg.Title = title
	for _, p := range panels {
		svg, err := shareFigure(p)
		if err != nil {
			return fmt.Errorf("html: %s: %w", p.Title, err)
		}
		pg.Panels = append(pg.Panels, shown{Title: p.Title, SVG: svg, Cells: p.Cells})
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	if err := sharesTemplate.Execute(bw, pg); err != nil {
		return fmt.Errorf("html: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("html: %w", err)
	}
	return nil
}

func shareFigure(p SharePanel) (template.HTML, error) {
	pl := newPlot(p.Title, "cell (see the table)", "viewer ÷ TCP flow (bytes/s)")
	logAxes(pl, false, true)
	var pts plotter.XYs
	lo, hi := shareLow, shareHigh
	for i, c := range p.Cells {
		if !(c.Ratio > 0) || !loggable(c.Ratio) {
			continue
		}
		x := float64(i + 1)
		pts = append(pts, plotter.XY{X: x, Y: c.Ratio})
		lo, hi = math.Min(lo, c.Ratio), math.Max(hi, c.Ratio)
		if c.Lo > 0 && c.Hi >= c.Lo && loggable(c.Lo) && loggable(c.Hi) {
			bar, err := line(plotter.XYs{{X: x, Y: c.Lo}, {X: x, Y: c.Hi}}, okBlue, vg.Points(1))
			if err != nil {
				return "", err
			}
			pl.Add(bar)
			lo, hi = math.Min(lo, c.Lo), math.Max(hi, c.Hi)
		}
	}
	n := float64(max(len(p.Cells), 1))
	var band, fair *plotter.Line
	for _, y := range []float64{shareLow, 1, shareHigh} {
		dashes := []vg.Length{vg.Points(4), vg.Points(3)}
		if y == 1 {
			dashes = nil
		}
		l, err := line(plotter.XYs{{X: 0.5, Y: y}, {X: n + 0.5, Y: y}}, okVermil, vg.Points(0.8), dashes...)
		if err != nil {
			return "", err
		}
		pl.Add(l)
		if y == 1 {
			fair = l
		} else {
			band = l
		}
	}
	if len(pts) > 0 {
		s, err := scatter(pts, okBlue, draw.CircleGlyph{}, vg.Points(3))
		if err != nil {
			return "", err
		}
		pl.Add(s)
		pl.Legend.Add("mean over the seeds (bar: their range)", s)
	}
	pl.Legend.Add("1: one TCP flow's bytes/s", fair)
	pl.Legend.Add(fmt.Sprintf("%s and %s: the promised band", tickLabel(shareLow), tickLabel(shareHigh)), band)
	pl.X.Min, pl.X.Max = 0.5, n+0.5
	pl.Y.Min, pl.Y.Max = lo/1.2, hi*1.2
	pl.X.Tick.Marker = cellTicks(len(p.Cells))
	return svgOf(pl)
}

// cellTicks marks each cell by its number in the table, and nothing
// between cells.
func cellTicks(n int) plot.ConstantTicks {
	var ts plot.ConstantTicks
	for i := 1; i <= n; i++ {
		ts = append(ts, plot.Tick{Value: float64(i), Label: strconv.Itoa(i)})
	}
	return ts
}

// tickLabel writes v in the fewest digits that read back as v.
func tickLabel(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

var sharesTemplate = template.Must(template.New("shares").Funcs(template.FuncMap{"inc": func(i int) int { return i + 1 }}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body { font-family: "Liberation Sans", Arial, Helvetica, sans-serif; margin: 1.5em; color: #111; max-width: 1400px; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0 1.5em; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.5em; text-align: right; }
th { background: #f0f0f0; }
td.text, th.text { text-align: left; }
svg { max-width: 100%; height: auto; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<p>Each cell: the viewer's bytes/s ÷ one TCP flow's on the same bottleneck, the mean over its seeds; the bar is their range; the dashed lines are 0.8 and 1.25, the promise.</p>
{{range .Panels}}
<h2>{{.Title}}</h2>
<figure>{{.SVG}}</figure>
<table>
<tr><th>#</th><th class="text">cell</th><th>viewer ÷ TCP</th><th>min</th><th>max</th></tr>
{{range $i, $c := .Cells}}<tr><td>{{$i | inc}}</td><td class="text">{{$c.Label}}</td><td>{{printf "%.2f" $c.Ratio}}</td><td>{{printf "%.2f" $c.Lo}}</td><td>{{printf "%.2f" $c.Hi}}</td></tr>
{{end}}</table>
{{end}}
</body>
</html>
`))
