package fairness

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/internal/lab/demand"
	"github.com/fairgrid/fairgrid/internal/lab/kerneltcp"
	"github.com/fairgrid/fairgrid/internal/lab/link"
	"github.com/fairgrid/fairgrid/throttle"
)

// TestGrid: the centre is one cell; the axes design holds every value of
// every axis and differs from the centre in one axis per cell (13 distinct
// cells: the centre's own values and 20 packets = ½ BDP coincide); the
// cross product holds every combination once.
func TestGrid(t *testing.T) {
	ctls := []throttle.ControllerName{throttle.VirtualTCP, throttle.Window}
	tcps := []string{GVisorCUBIC, LinuxReno}
	if n := len(Grid(ctls, tcps, Centre)); n != 4 {
		t.Errorf("centre: %d cells, want 4", n)
	}
	axes := Grid(ctls[:1], tcps[:1], Axes)
	if len(axes) != 13 {
		t.Errorf("axes: %d cells, want 13", len(axes))
	}
	for _, c := range axes {
		if err := c.Validate(); err != nil {
			t.Errorf("%v: %v", c, err)
		}
		diff := 0
		for _, d := range []bool{c.Flows != Base.Flows, c.Buffer != Base.Buffer, c.Loss != Base.Loss, c.RTTms != Base.RTTms, c.LinkBPS != Base.LinkBPS} {
			if d {
				diff++
			}
		}
		if diff > 1 {
			t.Errorf("%v differs from the centre in %d axes", c, diff)
		}
	}
	for _, want := range []float64{1e6, 30e6} {
		if !slices.ContainsFunc(axes, func(c Cell) bool { return c.LinkBPS == want }) {
			t.Errorf("axes lack the %g bit/s link", want)
		}
	}
	cross := Grid(ctls[:1], tcps[:1], Cross)
	if len(cross) < 3*3*2*4*3 || len(cross) > 3*3*2*4*6 {
		t.Errorf("cross: %d cells", len(cross))
	}
	seen := map[Cell]bool{}
	for _, c := range cross {
		if seen[c] {
			t.Errorf("cross repeats %v", c)
		}
		seen[c] = true
	}
}

// TestSeats: the product seats' grid is the design's cells once per seat,
// then one application-limited row per seat and TCP kind at LimitedCell;
// every cell valid, the subset design the centre and its 3 % cell; a
// product cell the rig cannot run is refused, naming why.
func TestSeats(t *testing.T) {
	seats := []demand.FrontEnd{demand.Sidecar, demand.GatewaySidecar, demand.Stock}
	cells := Seats(seats, []string{GVisorCUBIC}, Axes, 2, "terrain")
	if len(cells) != 3*13+3 {
		t.Fatalf("%d cells, want %d", len(cells), 3*13+3)
	}
	for i, c := range cells {
		if err := c.Validate(); err != nil {
			t.Errorf("%v: %v", c, err)
		}
		saturating := i < 39 && c.Product == seats[i/13] && c.Demand == ""
		limited := i >= 39 && c.Product == seats[i-39] && c.Demand == "terrain" && c.Loss == LimitedCell.Loss
		if !saturating && !limited || c.Neighbours != 2 {
			t.Errorf("cell %d: %+v", i, c)
		}
	}
	if row := Summarize([]Result{{Cell: cells[40]}}); row.Seat != "gateway+sidecar" || row.Demand != "terrain" || row.Neighbours != 2 || row.Controller != string(throttle.DefaultController) {
		t.Errorf("row %+v", row)
	}
	if row := Summarize([]Result{{Cell: cells[41]}}); row.Seat != "stock" || row.Controller != "none" || row.Region != "opensim" {
		t.Errorf("stock's row %+v, want region opensim by default", row)
	}
	fg := cells[0]
	fg.Region = demand.FairgridRegion
	if row := Summarize([]Result{{Cell: fg}}); row.Region != "fairgrid" || !strings.Contains(fg.String(), "fairgrid region") {
		t.Errorf("the fairgrid region's row %+v, cell %v", row, fg)
	}
	var md bytes.Buffer
	if err := WriteMarkdown(&md, []Row{Summarize([]Result{{Cell: fg}})}, nil); err != nil || !strings.Contains(md.String(), "| sidecar | fairgrid | saturating") {
		t.Errorf("markdown %q, %v: want the region column", md.String(), err)
	}
	sub := Seats(seats[:1], []string{GVisorCUBIC}, Subset, 0, "")
	if len(sub) != 2 || sub[0].Loss != 0 || sub[1].Loss != 0.03 || sub[1].RTTms != Base.RTTms || sub[1].Buffer != Base.Buffer {
		t.Errorf("subset: %+v", sub)
	}
	ok := sub[0]
	for _, tc := range []struct {
		name string
		edit func(*Cell)
		want string
	}{
		{"unknown seat", func(c *Cell) { c.Product = "daemon" }, `product "daemon"`},
		{"a controller too", func(c *Cell) { c.Controller = throttle.VirtualTCP }, "a seat holds one"},
		{"a viewer", func(c *Cell) { c.Viewers = 1 }, "viewers 1"},
		{"saturating by name", func(c *Cell) { c.Demand = "flying" }, `demand "flying"`},
		{"unknown workload", func(c *Cell) { c.Demand = "dancing" }, `"dancing"`},
		{"too many neighbours", func(c *Cell) { c.Neighbours = 9 }, "neighbours 9"},
		{"a workload without a product", func(c *Cell) { c.Product, c.Controller, c.Demand = "", throttle.VirtualTCP, "terrain" }, "only a product seat"},
		{"unknown region", func(c *Cell) { c.Region = "secondlife" }, `region "secondlife"`},
		{"a region without a product", func(c *Cell) { c.Product, c.Controller, c.Region = "", throttle.VirtualTCP, demand.FairgridRegion }, "only a product seat"},
	} {
		c := ok
		tc.edit(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one naming %q", tc.name, err, tc.want)
		}
	}
}

// TestSummarize: a row is the seeds' means; the JSON row has exactly the
// issue's fields; TCPPEquiv inverts Mathis.
func TestSummarize(t *testing.T) {
	c := Base
	c.Controller, c.TCP = throttle.VirtualTCP, GVisorCUBIC
	runs := []Result{
		{Cell: c, Seed: 1, ViewerBPS: []float64{3e6}, TCPBPS: []float64{3e6}, ViewerP: 0.001, TCPQueueMs: 20},
		{Cell: c, Seed: 2, ViewerBPS: []float64{2e6}, TCPBPS: []float64{4e6}, ViewerP: 0.003, TCPQueueMs: 20},
	}
	row := Summarize(runs)
	if row.ViewerOverTCP != 0.75 || row.ViewerBPS != 2.5e6 || row.TCPBPSPerFlow != 3.5e6 || row.ViewerP != 0.002 || row.Seeds != 2 {
		t.Errorf("row %+v", row)
	}
	// Mathis: X = 1.22·1460/(R·sqrt p) at R = 100 ms, X = 3 Mbit/s.
	x, r := 3e6/8, 0.1
	want := math.Pow(math.Sqrt(1.5)*1460/(r*x), 2)
	if got := runs[0].TCPPEquiv(); math.Abs(got/want-1) > 1e-9 {
		t.Errorf("TCPPEquiv %v, want %v", got, want)
	}
	sd, lo, hi := Spread(runs)
	if lo != 0.5 || hi != 1 || math.Abs(sd-math.Sqrt(0.125)) > 1e-12 {
		t.Errorf("spread %v %v %v", sd, lo, hi)
	}
	// A run whose TCP flow moved nothing has no ratio: left out of the
	// mean and the spread, not counted as 0 (its bytes still count).
	stalled := append(slices.Clone(runs), Result{Cell: c, Seed: 3, ViewerBPS: []float64{1e6}, TCPBPS: []float64{0}})
	if r := Summarize(stalled); r.ViewerOverTCP != 0.75 || r.Seeds != 3 || math.Abs(r.ViewerBPS-2e6) > 1e-6 {
		t.Errorf("with a stalled TCP run: row %+v, want the ratio 0.75 of the other two", r)
	}
	if sd2, lo2, hi2 := Spread(stalled); lo2 != lo || hi2 != hi || sd2 != sd {
		t.Errorf("with a stalled TCP run: spread %v %v %v, want %v %v %v", sd2, lo2, hi2, sd, lo, hi)
	}
	if sd0, lo0, hi0 := Spread(stalled[2:]); sd0 != 0 || lo0 != 0 || hi0 != 0 {
		t.Errorf("no ratio: spread %v %v %v, want 0s", sd0, lo0, hi0)
	}
	var b bytes.Buffer
	if err := WriteJSON(&b, []Row{row}); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want2 := []string{"buffer_packets", "controller", "link_bps", "loss", "rtt_ms", "seat", "seeds", "tcp", "tcp_bps_per_flow", "tcp_flows", "tcp_p_equiv", "viewer_bps", "viewer_over_tcp", "viewer_p"}
	if !slices.Equal(keys, want2) {
		t.Errorf("JSON fields %v, want %v", keys, want2)
	}
	b.Reset()
	if err := WriteMarkdown(&b, []Row{row}, [][]Result{runs}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "**0.75**") || !strings.Contains(b.String(), "0.50–1.00") {
		t.Errorf("markdown:\n%s", b.String())
	}
}

// TestCellErrors: a cell the rig cannot run is refused before anything
// starts, every problem named.
func TestCellErrors(t *testing.T) {
	c := Cell{Controller: "cubic", TCP: "vegas", Flows: 1, Buffer: 1, Loss: 1, RTTms: 0, LinkBPS: 10}
	err := c.Validate()
	for _, want := range []string{"controller", "tcp \"vegas\"", "buffer 1", "loss 1", "rtt 0", "link 10"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
	ok := Base
	ok.TCP, ok.Reference = GVisorCUBIC, LinuxCUBIC
	if err := ok.Validate(); err != nil {
		t.Errorf("%v: %v", ok, err)
	}
	for _, tc := range []struct {
		name string
		edit func(*Cell)
		want string
	}{
		{"unknown reference", func(c *Cell) { c.Reference = "vegas" }, `reference "vegas"`},
		{"a controller too", func(c *Cell) { c.Controller = throttle.VirtualTCP }, "not both"},
		{"a viewer", func(c *Cell) { c.Viewers = 1 }, "viewers 1"},
	} {
		c := ok
		tc.edit(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one naming %q", tc.name, err, tc.want)
		}
	}
}

// TestReferences: the reference grid is the design's cells, once per
// reference kind (a kind named twice runs once), with the seat's name in
// the row.
func TestReferences(t *testing.T) {
	refs := References([]string{GVisorCUBIC, LinuxReno}, []string{GVisorCUBIC}, Axes)
	if len(refs) != 26 {
		t.Fatalf("%d reference cells, want 26 (13 per kind)", len(refs))
	}
	for i, c := range refs {
		want := Grid([]throttle.ControllerName{""}, []string{GVisorCUBIC}, Axes)[i%13]
		want.Reference = []string{GVisorCUBIC, LinuxReno}[i/13]
		if c != want || c.Validate() != nil {
			t.Errorf("reference cell %d: %+v (%v), want %+v", i, c, c.Validate(), want)
		}
	}
	if n := len(References([]string{GVisorCUBIC, GVisorCUBIC}, []string{GVisorCUBIC}, Axes)); n != 13 {
		t.Errorf("a kind named twice: %d reference cells, want 13", n)
	}
	if row := Summarize([]Result{{Cell: refs[13]}}); row.Controller != "tcp:linux-reno" {
		t.Errorf("a reference row's controller %q, want tcp:linux-reno", row.Controller)
	}
}

// TestSplitSeat: Linux's results go to the seat or to the cell's flows by
// their spec, wherever the seat stands among them.
func TestSplitSeat(t *testing.T) {
	at := time.Unix(1000, 0)
	result := func(bytes uint64) kerneltcp.FlowResult {
		return kerneltcp.FlowResult{Data: link.FlowStats{Start: at, At: at.Add(time.Second), DeliveredBytes: bytes}}
	}
	results := []kerneltcp.FlowResult{result(100), result(200), result(300)}
	for seatAt := range 3 {
		specs := make([]tcpSpec, 3)
		specs[seatAt].seat = true
		seat, cellFlows := splitSeat(specs, results)
		if len(seat) != 1 || seat[0] != float64(8*100*(seatAt+1)) || len(cellFlows) != 2 {
			t.Errorf("seat at %d: seat %v, %d cell flows; want [%d] and 2", seatAt, seat, len(cellFlows), 8*100*(seatAt+1))
		}
		for _, f := range cellFlows {
			if f.Data.DeliveredBytes == uint64(100*(seatAt+1)) {
				t.Errorf("seat at %d: the seat's result is among the cell's flows too", seatAt)
			}
		}
	}
	if seat, cellFlows := splitSeat(make([]tcpSpec, 3), results); len(seat) != 0 || len(cellFlows) != 3 {
		t.Errorf("no seat: %v, %d cell flows", seat, len(cellFlows))
	}
}

// TestReferenceSeat runs the control for real: a TCP flow in the viewer's
// seat beside the cell's, gVisor's CUBIC beside gVisor's CUBIC and, as
// root, every mix of the two stacks (Linux's reno beside gVisor's CUBIC,
// gVisor's CUBIC beside Linux's reno, Linux's CUBIC beside Linux's reno).
// The seat's bytes are the reference flow's and the cell's TCP flows are
// the others: together they fill the link, each moves, and the seat's
// rate and its per-second series (read from the bottleneck by the seat's
// name) agree.
func TestReferenceSeat(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time TCP runs (about 15 s): not in -short")
	}
	if raceEnabled {
		t.Skip("under the race detector gVisor's TCP runs slower than real time and cannot fill the link")
	}
	// Beside TestShares: both wait on real time (TestShares says why
	// TestProductSeats does not join them).
	t.Parallel()
	base := Cell{Reference: GVisorCUBIC, TCP: GVisorCUBIC, Flows: 1, Buffer: 30, RTTms: 40, LinkBPS: 2_000_000}
	cells := []Cell{base}
	if err := kerneltcp.Supported(); err != nil {
		t.Logf("the mixes with Linux's TCP not run: network namespaces need root, /dev/net/tun and iproute2 (CI runs as root): %v", err)
	} else {
		for _, mix := range [][2]string{{LinuxReno, GVisorCUBIC}, {GVisorCUBIC, LinuxReno}, {LinuxCUBIC, LinuxReno}} {
			c := base
			c.Reference, c.TCP, c.Flows = mix[0], mix[1], 2
			cells = append(cells, c)
		}
	}
	const warmup, duration = 5 * time.Second, 10 * time.Second
	results := make([]Result, len(cells))
	errs := make([]error, len(cells))
	var wg sync.WaitGroup
	for i, c := range cells {
		wg.Go(func() {
			results[i], errs[i] = Run(t.Context(), c, Options{Warmup: warmup, Duration: duration, Seed: 1})
		})
	}
	// Alongside, in the same wall time: the seat's gVisor flow alone for
	// late seconds, then a newcomer (the responsiveness control).
	const late = 5 * time.Second
	var lateRes Result
	var lateErr error
	wg.Go(func() {
		lateRes, lateErr = Run(t.Context(), base, Options{Duration: warmup + duration, TCPStart: late, Seed: 1})
	})
	wg.Wait()
	checkLateNewcomer(t, base, lateRes, lateErr, late)
	for i, r := range results {
		c := cells[i]
		if errs[i] != nil {
			t.Errorf("%v: %v", c, errs[i])
			continue
		}
		t.Logf("%v: seat %.0f kbit/s, TCP %.0f kbit/s per flow, ratio %.2f", c, r.MeanViewer()/1000, r.MeanTCP()/1000, Ratio(r))
		if len(r.ViewerBPS) != 1 || len(r.TCPBPS) != c.Flows {
			t.Errorf("%v: %d seat rates and %d TCP rates, want 1 and %d", c, len(r.ViewerBPS), len(r.TCPBPS), c.Flows)
			continue
		}
		total := r.ViewerBPS[0]
		for _, x := range r.TCPBPS {
			total += x
			if x < 0.05*c.LinkBPS {
				t.Errorf("%v: a TCP flow beside the reference moved %.0f bit/s", c, x)
			}
		}
		// Each flow is measured over its own window of the run (Linux's
		// from its receiver on its own timer, gVisor's from the stacks),
		// whose edges need not meet the others': a full queue (30
		// datagrams, 1.8 % of the link over the 10 s measured) or a flow
		// ramping at an edge falls inside one window and outside another.
		// Fresh clones' runs went 1.1, 1.3, 1.6 and 2.3 % over (issue 35;
		// the last with the lab's other packages beside it). 5 % is twice
		// the largest; a flow counted twice would be 30 % or more.
		slack := 0.05 * c.LinkBPS
		if r.ViewerBPS[0] < 0.05*c.LinkBPS || total < 0.7*c.LinkBPS || total > c.LinkBPS+slack {
			t.Errorf("%v: seat %.0f bit/s, all flows %.0f bit/s on a %.0f bit/s link: want the seat moving and the link filled", c, r.ViewerBPS[0], total, c.LinkBPS)
		}
		// The per-second series over the measured part: the same flow as
		// the seat's rate, give or take the kernel's own measuring window
		// and a second's edges.
		from := int(warmup / time.Second)
		if len(r.ViewerPerSecond) < from+int(duration/time.Second)-1 {
			t.Errorf("%v: %d seconds of the seat's series", c, len(r.ViewerPerSecond))
			continue
		}
		measured := r.ViewerPerSecond[from:]
		if m := sum(measured) / float64(len(measured)); math.Abs(m-r.ViewerBPS[0]) > 0.2*r.ViewerBPS[0] {
			t.Errorf("%v: the seat's per-second series averages %.0f bit/s over the measured part, its rate %.0f", c, m, r.ViewerBPS[0])
		}
	}
}

// checkLateNewcomer: with TCPStart, the seat's flow has the link to
// itself until the cell's flow starts, and the newcomer moves after.
func checkLateNewcomer(t *testing.T, c Cell, r Result, err error, late time.Duration) {
	t.Helper()
	if err != nil {
		t.Errorf("%v, TCP starting at %v: %v", c, late, err)
		return
	}
	at := int(late / time.Second)
	t.Logf("%v, TCP starting at %v: seat per second %.0f, TCP %.0f kbit/s", c, late, kbits(r.ViewerPerSecond), kbits(r.TCPPerSecond))
	if len(r.ViewerPerSecond) < at+5 || len(r.TCPPerSecond) < at+5 {
		t.Errorf("%d and %d seconds of the seat's and the TCP flow's series, want at least %d", len(r.ViewerPerSecond), len(r.TCPPerSecond), at+5)
		return
	}
	// The second before the start is left out: the bottleneck's
	// per-second tick and the flow's start timer are separate clocks.
	if before := sum(r.TCPPerSecond[:at-1]); before != 0 {
		t.Errorf("the cell's TCP moved %.0f bits in the %d s before it started", before, at-1)
	}
	if alone := sum(r.ViewerPerSecond[at-2:at]) / 2; alone < 0.7*c.LinkBPS {
		t.Errorf("the seat alone moved %.0f bit/s on a %.0f bit/s link, want it filling the link", alone, c.LinkBPS)
	}
	if after := sum(r.TCPPerSecond[at+1 : at+5]); after < 0.05*c.LinkBPS*4 {
		t.Errorf("the newcomer moved %.0f bits in the 4 s after its first second, want it moving", after)
	}
}

// TestCheckTiming: TCPStart and TCPStop go only where the run honours
// them.
func TestCheckTiming(t *testing.T) {
	viewer := Base
	viewer.Controller, viewer.TCP = "vtcp", GVisorCUBIC
	ref := viewer
	ref.Controller, ref.Reference = "", GVisorCUBIC
	linux := viewer
	linux.TCP = LinuxCUBIC
	linuxSeat := ref
	linuxSeat.Reference = LinuxReno
	noFlows := linux
	noFlows.Flows = 0
	s := 5 * time.Second
	for _, tc := range []struct {
		name      string
		cell      Cell
		opt       Options
		wantError string
	}{
		{"a viewer, TCP starting late", viewer, Options{TCPStart: s}, ""},
		{"a viewer, TCP stopping", viewer, Options{TCPStop: s}, ""},
		{"a reference, TCP starting late", ref, Options{TCPStart: s}, ""},
		{"a reference, TCP stopping", ref, Options{TCPStop: s}, "stop the seat's flow too"},
		{"Linux's TCP starting late", linux, Options{TCPStart: s}, "Linux's flows start and end with the run"},
		{"Linux's TCP stopping", linux, Options{TCPStop: s}, "Linux's flows start and end with the run"},
		{"Linux's TCP in the seat", linuxSeat, Options{TCPStart: s}, "Linux's flows start and end with the run"},
		{"Linux's TCP, on time", linux, Options{}, ""},
		{"Linux's TCP kind, no flows", noFlows, Options{TCPStart: s}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkTiming(tc.cell, tc.opt)
			switch {
			case tc.wantError == "" && err != nil:
				t.Errorf("checkTiming: %v, want nil", err)
			case tc.wantError != "" && (err == nil || !strings.Contains(err.Error(), tc.wantError)):
				t.Errorf("checkTiming: %v, want an error saying %q", err, tc.wantError)
			}
		})
	}
	// Run refuses them before anything starts.
	if _, err := Run(t.Context(), linux, Options{Duration: time.Second, TCPStart: s}); err == nil || !strings.Contains(err.Error(), "Linux's flows") {
		t.Errorf("Run with Linux's TCP starting late: %v, want the refusal", err)
	}
	if _, err := Run(t.Context(), ref, Options{Duration: time.Second, TCPStop: s}); err == nil || !strings.Contains(err.Error(), "seat's flow too") {
		t.Errorf("Run with a reference and TCPStop: %v, want the refusal", err)
	}
}

func sum(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s
}

// TestRunGridInterrupted: when the grid's context ends, the runs that
// finished come back with an *Interrupted naming how many of how many,
// cells with none left out; a run's own failure is an error, not an
// interruption, and returns nothing.
func TestRunGridInterrupted(t *testing.T) {
	cells := []Cell{{Controller: "vtcp", Loss: 0.01}, {Controller: "vtcp", Loss: 0.03}, {Controller: "vtcp", Loss: 0.10}}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	// Seed 1 of the first two cells finishes; every other run waits for
	// the end. The grid is cancelled once both have finished.
	var quick atomic.Int32
	run := func(ctx context.Context, c Cell, o Options) (Result, error) {
		if o.Seed == 1 && c.Loss < 0.05 {
			return Result{Cell: c, Seed: o.Seed}, nil
		}
		<-ctx.Done()
		return Result{}, ctx.Err()
	}
	progress := func(Result) {
		if quick.Add(1) == 2 {
			cancel()
		}
	}
	runs, err := runGrid(ctx, cells, 2, Options{}, 6, progress, run)
	var ir *Interrupted
	if !errors.As(err, &ir) || ir.Finished != 2 || ir.Total != 6 || !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v; want an *Interrupted after 2 of 6 runs, wrapping context.Canceled", err)
	}
	if len(runs) != 2 || len(runs[0]) != 1 || runs[0][0].Cell != cells[0] || len(runs[1]) != 1 || runs[1][0].Cell != cells[1] {
		t.Errorf("runs %+v; want the first two cells' seed 1 each", runs)
	}

	failing := func(ctx context.Context, c Cell, o Options) (Result, error) {
		if o.Seed == 2 {
			return Result{}, errors.New("the rig failed")
		}
		return Result{Cell: c, Seed: o.Seed}, nil
	}
	runs, err = runGrid(t.Context(), cells, 2, Options{}, 1, nil, failing)
	if err == nil || errors.As(err, &ir) || runs != nil {
		t.Errorf("a run's failure: runs %v, err %v; want no runs and the failure, not an interruption", runs, err)
	}
	runs, err = runGrid(t.Context(), cells, 2, Options{}, 2, nil, func(_ context.Context, c Cell, o Options) (Result, error) {
		return Result{Cell: c, Seed: o.Seed}, nil
	})
	if err != nil || len(runs) != 3 || len(runs[2]) != 2 || runs[2][1].Seed != 2 {
		t.Errorf("an uninterrupted grid: %v, %+v", err, runs)
	}
	runs, err = runGrid(t.Context(), cells, 2, Options{Seed: 3}, 2, nil, func(_ context.Context, c Cell, o Options) (Result, error) {
		return Result{Cell: c, Seed: o.Seed}, nil
	})
	if err != nil || runs[0][0].Seed != 3 || runs[2][1].Seed != 4 {
		t.Errorf("a grid from seed 3: %v, %+v; want seeds 3 and 4", err, runs)
	}
}
