package status

import (
	"bytes"
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// The chart's size: a phone's width at three quarters and a laptop's
// column at its own; CSS scales it to its box.
const (
	chartWidth  = 5 * vg.Inch
	chartHeight = 4.6 * vg.Inch
)

// Okabe–Ito colours, as the audit's figures: told apart with the common
// colour-vision deficiencies.
var (
	colReceived = color.RGBA{0, 0, 0, 255}
	colShare    = color.RGBA{0, 114, 178, 255}
	colViewer   = color.RGBA{230, 159, 0, 255}
	colAsked    = color.RGBA{213, 94, 0, 255}
	colLoss     = color.RGBA{0, 158, 115, 255}
	colRTT      = color.RGBA{204, 121, 167, 255}
)

// series is one line of a chart: a field of the samples.
type series struct {
	name  string
	col   color.RGBA
	dash  bool
	value func(sample) float32
	// none: 0 means "not known yet" (no request, no loss, no RTT
	// sample), a gap rather than a point.
	none bool
}

// drawChart draws the samples (oldest first) of the window before now
// (seconds since the page started) as three panels sharing the time axis,
// window seconds long at most: the rates, the loss event rate, the RTT.
// It returns a bare <svg> element.
func drawChart(ss []sample, now int32, window float64) ([]byte, error) {
	// A young circuit's chart spans its life, in whole minutes (one at
	// least), up to the window.
	if len(ss) > 0 {
		window = min(window, max(60, math.Ceil(float64(now-ss[0].at)/60)*60))
	}
	rates := panel("kbit/s", window, ss, now, []series{
		{"received", colReceived, false, func(s sample) float32 { return s.recv }, false},
		{"one TCP share", colShare, false, func(s sample) float32 { return s.share }, true},
		{"viewer asked", colViewer, true, func(s sample) float32 { return s.viewer }, true},
		{"fairgrid asks", colAsked, false, func(s sample) float32 { return s.asked }, true},
	})
	rates.Legend.Top, rates.Legend.Left = true, true
	rates.Legend.Padding = vg.Points(2)
	loss := panel("loss %", window, ss, now, []series{
		{"loss event rate", colLoss, false, func(s sample) float32 { return s.loss * 100 }, false},
	})
	rtt := panel("RTT ms", window, ss, now, []series{
		{"RTT", colRTT, false, func(s sample) float32 { return s.rtt }, true},
	})
	rtt.X.Label.Text = "minutes ago"
	c := vgsvg.New(chartWidth, chartHeight)
	dc := draw.New(c)
	// The rates get half the height; loss and RTT a quarter each.
	top := draw.Crop(dc, 0, 0, chartHeight/2, 0)
	bottom := draw.Crop(dc, 0, 0, 0, -chartHeight/2)
	rates.Draw(top)
	canvases := plot.Align([][]*plot.Plot{{loss}, {rtt}}, draw.Tiles{Rows: 2, Cols: 1, PadY: vg.Points(2)}, bottom)
	loss.Draw(canvases[0][0])
	rtt.Draw(canvases[1][0])
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return nil, fmt.Errorf("chart: %w", err)
	}
	out := b.Bytes()
	i := bytes.Index(out, []byte("<svg"))
	if i < 0 {
		return nil, fmt.Errorf("chart: no <svg> element in the plot's output")
	}
	return out[i:], nil
}

// panel is one panel of the chart: its series over the window, x in
// minutes before now.
func panel(ylabel string, window float64, ss []sample, now int32, lines []series) *plot.Plot {
	p := plot.New()
	p.X.Min, p.X.Max = -window/60, 0
	p.Y.Min = 0
	p.Y.Label.Text = ylabel
	// Sans-serif, as the page's text, and large enough to read on a
	// phone, where the chart is drawn at three quarters of its size.
	for _, f := range []*font.Font{&p.X.Label.TextStyle.Font, &p.Y.Label.TextStyle.Font, &p.X.Tick.Label.Font, &p.Y.Tick.Label.Font, &p.Legend.TextStyle.Font} {
		f.Variant, f.Size = "Sans", vg.Points(12)
	}
	p.Add(plotter.NewGrid())
	var ymax float64
	for _, l := range lines {
		xy := make(plotter.XYs, 0, len(ss))
		for _, s := range ss {
			x := float64(s.at-now) / 60
			if x < p.X.Min {
				continue
			}
			v := float64(l.value(s))
			if l.none && v == 0 {
				continue
			}
			xy = append(xy, plotter.XY{X: x, Y: v})
			ymax = max(ymax, v)
		}
		if len(xy) == 0 {
			continue
		}
		ln, err := plotter.NewLine(xy)
		if err != nil {
			continue // a NaN: the line is left out, not the chart
		}
		ln.Color = l.col
		ln.Width = vg.Points(1.5)
		if l.dash {
			ln.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		}
		p.Add(ln)
		if len(lines) > 1 {
			p.Legend.Add(l.name, ln)
		}
	}
	p.Y.Max = ymax * 1.1
	if !(p.Y.Max > 0) {
		p.Y.Max = 1
	}
	return p
}
