package fairness

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/fairgrid/fairgrid/internal/lab/demand"
	"github.com/fairgrid/fairgrid/throttle"
)

// Row is one cell's result over its seeds: the fields of issue #20's
// grid, exactly.
type Row struct {
	// Seat is who sat in the viewer's seat (Cell.Seat): a controller's
	// name (the rig's own viewer), a product front-end (sidecar, proxy,
	// gateway, gateway+sidecar, stock), or tcp:KIND for a reference
	// cell's TCP flow.
	Seat string `json:"seat"`
	// Demand is a product seat's application-limited workload, empty for
	// saturating demand; Neighbours its viewer's child circuits.
	Demand     string `json:"demand,omitempty"`
	Neighbours int    `json:"neighbours,omitempty"`
	// Region is a product seat's kind of region (Cell.Region: opensim
	// or fairgrid), empty for the others, which have none.
	Region string `json:"region,omitempty"`
	// Controller is who decided the seat's rate: the rig's controller,
	// the product's (throttle.DefaultController; "none" for stock), or
	// tcp:KIND for a reference.
	Controller    string  `json:"controller"`
	TCP           string  `json:"tcp"`
	TCPFlows      int     `json:"tcp_flows"`
	BufferPackets int     `json:"buffer_packets"`
	Loss          float64 `json:"loss"`
	RTTms         float64 `json:"rtt_ms"`
	LinkBPS       float64 `json:"link_bps"`
	// ViewerBPS and TCPBPSPerFlow are means over the seeds, on the wire.
	ViewerBPS     float64 `json:"viewer_bps"`
	TCPBPSPerFlow float64 `json:"tcp_bps_per_flow"`
	// ViewerOverTCP is the mean over the seeds of each run's viewer ÷ mean
	// TCP flow.
	ViewerOverTCP float64 `json:"viewer_over_tcp"`
	// ViewerP is the controller's loss event rate per 1,460-byte segment
	// (virtual TCP) or per packet (the others), mean over the seeds.
	ViewerP float64 `json:"viewer_p"`
	// TCPPEquiv is the Mathis-inverted loss event rate of the TCP flows'
	// rate at their RTT (Result.TCPPEquiv), mean over the seeds.
	TCPPEquiv float64 `json:"tcp_p_equiv"`
	Seeds     int     `json:"seeds"`
}

// Summarize folds a cell's runs into its row.
func Summarize(runs []Result) Row {
	if len(runs) == 0 {
		return Row{}
	}
	c := runs[0].Cell
	row := Row{Seat: c.Seat(), Demand: c.Demand, Neighbours: c.Neighbours, Controller: c.Seat(), TCP: c.TCP, TCPFlows: c.Flows, BufferPackets: c.Buffer, Loss: c.Loss,
		RTTms: c.RTTms, LinkBPS: c.LinkBPS, Seeds: len(runs)}
	switch {
	case c.Product == demand.Stock:
		row.Controller = "none"
	case c.Product != "":
		row.Controller = string(throttle.DefaultController)
	}
	if c.Product != "" {
		row.Region = string(cmp.Or(c.Region, demand.OpenSimRegion))
	}
	n := float64(len(runs))
	var ratios float64
	for _, r := range runs {
		row.ViewerBPS += r.MeanViewer() / n
		row.TCPBPSPerFlow += r.MeanTCP() / n
		if r.MeanTCP() > 0 {
			row.ViewerOverTCP += Ratio(r)
			ratios++
		}
		row.ViewerP += r.ViewerP / n
		row.TCPPEquiv += r.TCPPEquiv() / n
	}
	if ratios > 0 {
		row.ViewerOverTCP /= ratios
	}
	return row
}

// Ratio is a run's viewer ÷ mean TCP flow (the first viewer's), 0 when no
// TCP flow moved: such a run (at 10 % loss gVisor's TCP can spend a whole
// measured part in back-off) has no ratio, and Summarize and Spread leave
// it out of theirs rather than count it as a viewer that got nothing.
func Ratio(r Result) float64 {
	if t := r.MeanTCP(); t > 0 && len(r.ViewerBPS) > 0 {
		return r.ViewerBPS[0] / t
	}
	return 0
}

// AuditOverTCP is the audit's estimate of a TCP flow's rate on the path
// (Result.AuditTCPBPS) over the TCP flows' real mean, pooled over the
// runs: Σ estimate ÷ Σ TCP; 0 when either is missing.
func AuditOverTCP(runs []Result) float64 {
	var est, tcp float64
	for _, r := range runs {
		if r.AuditTCPBPS > 0 && r.MeanTCP() > 0 {
			est += r.AuditTCPBPS
			tcp += r.MeanTCP()
		}
	}
	if tcp == 0 {
		return 0
	}
	return est / tcp
}

// Spread is the sample standard deviation of the runs' ratios, and their
// minimum and maximum (0s when no run has a ratio).
func Spread(runs []Result) (sd, lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	var sum, sq, n float64
	for _, r := range runs {
		if r.MeanTCP() <= 0 {
			continue
		}
		x := Ratio(r)
		sum += x
		sq += x * x
		n++
		lo, hi = min(lo, x), max(hi, x)
	}
	if n == 0 {
		return 0, 0, 0
	}
	if n > 1 {
		sd = math.Sqrt(max(sq-sum*sum/n, 0) / (n - 1))
	}
	return sd, lo, hi
}

// Base is the grid's centre: 6 Mbit/s, 80 ms, 100 packets, no random
// loss, one flow — the coexistence study's downlink at the mongoose
// scenario's RTT.
var Base = Cell{Flows: 1, Buffer: 100, Loss: 0, RTTms: 80, LinkBPS: 6_000_000}

// The grid's axes (issue #20).
var (
	FlowCounts    = []int{1, 4}
	BufferPackets = []int{20, 100, 200}
	BufferBDPs    = []float64{0.5, 1, 2}
	Losses        = []float64{0, 0.005, 0.03, 0.1}
	RTTs          = []float64{20, 80, 200}
	Links         = []float64{1_000_000, 6_000_000, 30_000_000}
)

// bdpBuffer is a buffer of f bandwidth-delay products, at least 2
// packets.
func bdpBuffer(c Cell, f float64) int { return max(int(math.Round(c.BDPPackets()*f)), 2) }

// Design says which cells of the axes a grid runs.
type Design string

const (
	// Centre is the base cell alone.
	Centre Design = "centre"
	// Axes is the base cell and every cell that differs from it in one
	// axis: each value of each axis once, 13 cells per controller and TCP
	// kind.
	Axes Design = "axes"
	// Cross is the whole cross product of the axes.
	Cross Design = "cross"
	// Subset is the centre and its 3 % cell (the loss axis): the cells of
	// the product seats' make test check (TestProductSeats).
	Subset Design = "subset"
)

// Grid lists the cells of the design for the controllers and TCP kinds.
func Grid(controllers []throttle.ControllerName, tcps []string, design Design) []Cell {
	var cells []Cell
	add := func(c Cell) {
		if !slices.Contains(cells, c) {
			cells = append(cells, c)
		}
	}
	for _, ctl := range controllers {
		for _, tcp := range tcps {
			base := Base
			base.Controller, base.TCP = ctl, tcp
			if design == Cross {
				for _, l := range Links {
					for _, rtt := range RTTs {
						for _, f := range FlowCounts {
							for _, loss := range Losses {
								c := base
								c.LinkBPS, c.RTTms, c.Flows, c.Loss = l, rtt, f, loss
								for _, b := range BufferPackets {
									c.Buffer = b
									add(c)
								}
								for _, b := range BufferBDPs {
									c.Buffer = bdpBuffer(c, b)
									add(c)
								}
							}
						}
					}
				}
				continue
			}
			add(base)
			if design == Centre {
				continue
			}
			if design == Subset {
				c := base
				c.Loss = 0.03
				add(c)
				continue
			}
			for _, f := range FlowCounts {
				c := base
				c.Flows = f
				add(c)
			}
			for _, b := range BufferPackets {
				c := base
				c.Buffer = b
				add(c)
			}
			for _, b := range BufferBDPs {
				c := base
				c.Buffer = bdpBuffer(c, b)
				add(c)
			}
			for _, l := range Losses {
				c := base
				c.Loss = l
				add(c)
			}
			for _, r := range RTTs {
				c := base
				c.RTTms = r
				add(c)
			}
			for _, l := range Links {
				c := base
				c.LinkBPS = l
				add(c)
			}
		}
	}
	return cells
}

// References lists the design's cells for the TCP kinds with, in the
// viewer's seat, a TCP flow of each kind of refs instead of a viewer:
// the control beside the controllers' cells (Cell.Reference).
func References(refs, tcps []string, design Design) []Cell {
	var cells []Cell
	for _, ref := range refs {
		for _, c := range Grid([]throttle.ControllerName{""}, tcps, design) {
			c.Reference = ref
			if !slices.Contains(cells, c) {
				cells = append(cells, c)
			}
		}
	}
	return cells
}

// Seats lists the design's cells for the TCP kinds with each product
// front-end of seats in the viewer's seat, saturating, and its viewer
// opening neighbours child circuits; then, for each seat, one cell with
// the application-limited workload limited (if not empty) at LimitedCell.
func Seats(seats []demand.FrontEnd, tcps []string, design Design, neighbours int, limited string) []Cell {
	var cells []Cell
	for _, seat := range seats {
		for _, c := range Grid([]throttle.ControllerName{""}, tcps, design) {
			c.Product, c.Neighbours = seat, neighbours
			cells = append(cells, c)
		}
	}
	if limited == "" {
		return cells
	}
	for _, seat := range seats {
		for _, tcp := range tcps {
			c := LimitedCell
			c.Product, c.Neighbours, c.TCP, c.Demand = seat, neighbours, tcp, limited
			cells = append(cells, c)
		}
	}
	return cells
}

// LimitedCell is where a seat's application-limited row is measured: the
// grid's centre at 3 % random loss, the loss at which issue 33 saw a real
// OpenSim's terrain collapse to one segment per round trip behind the
// gateway and the sidecar.
var LimitedCell = Cell{Flows: 1, Buffer: 100, Loss: 0.03, RTTms: 80, LinkBPS: 6_000_000}

// Interrupted is RunGrid's error when its context ended before every run
// had: the runs it returns are those that finished.
type Interrupted struct {
	Finished, Total int
	Cause           error
}

func (e *Interrupted) Error() string {
	return fmt.Sprintf("fairness: interrupted after %d of %d runs: %v", e.Finished, e.Total, e.Cause)
}

func (e *Interrupted) Unwrap() error { return e.Cause }

// RunGrid runs every cell with seeds opt.Seed..opt.Seed+seeds-1 (opt.Seed
// 0 is 1: a later batch can add seeds to an earlier one's), parallel runs
// at once, and
// returns each cell's runs in the order of cells. progress, if set, is
// called after each run. A run's error ends the grid. When ctx ends first
// the error is an *Interrupted, and the runs returned are those that
// finished, the cells without any left out.
func RunGrid(ctx context.Context, cells []Cell, seeds int, opt Options, parallel int, progress func(Result)) ([][]Result, error) {
	return runGrid(ctx, cells, seeds, opt, parallel, progress, Run)
}

func runGrid(parent context.Context, cells []Cell, seeds int, opt Options, parallel int, progress func(Result),
	run func(context.Context, Cell, Options) (Result, error)) ([][]Result, error) {
	out := make([][]Result, len(cells))
	finished := make([][]bool, len(cells))
	for i := range out {
		out[i] = make([]Result, seeds)
		finished[i] = make([]bool, seeds)
	}
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	sem := make(chan struct{}, max(parallel, 1))
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i, c := range cells {
		for s := range seeds {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
			}
			if ctx.Err() != nil {
				break
			}
			wg.Go(func() {
				defer func() { <-sem }()
				o := opt
				o.Seed = max(opt.Seed, 1) + uint64(s)
				r, err := run(ctx, c, o)
				if err != nil {
					cancel(fmt.Errorf("%v, seed %d: %w", c, o.Seed, err))
					return
				}
				mu.Lock()
				defer mu.Unlock()
				out[i][s], finished[i][s] = r, true
				if progress != nil {
					progress(r)
				}
			})
		}
	}
	wg.Wait()
	if parent.Err() != nil {
		var done [][]Result
		n := 0
		for i := range out {
			var rs []Result
			for s, ok := range finished[i] {
				if ok {
					rs = append(rs, out[i][s])
				}
			}
			if len(rs) > 0 {
				done = append(done, rs)
				n += len(rs)
			}
		}
		return done, &Interrupted{Finished: n, Total: len(cells) * seeds, Cause: context.Cause(parent)}
	}
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	return out, nil
}

// WriteJSON writes one row per line.
func WriteJSON(w io.Writer, rows []Row) error {
	enc := json.NewEncoder(w)
	for _, r := range rows {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return nil
}

// WriteMarkdown writes the rows as a markdown table, sorted by
// controller, then TCP, then the grid's order, with each row's spread
// when runs are given (runs[i] are rows[i]'s).
func WriteMarkdown(w io.Writer, rows []Row, runs [][]Result) error {
	var b strings.Builder
	b.WriteString("| seat | region | demand | controller | TCP | flows | buffer (packets) | loss | RTT (ms) | link (Mbit/s) | viewer (kbit/s) | TCP per flow (kbit/s) | viewer ÷ TCP | min–max | viewer p | TCP p (Mathis) | audit ÷ TCP | seeds |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	idx := make([]int, len(rows))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool {
		ra, rb := rows[idx[a]], rows[idx[b]]
		if ra.Seat != rb.Seat {
			return ra.Seat < rb.Seat
		}
		if ra.Controller != rb.Controller {
			return ra.Controller < rb.Controller
		}
		return ra.TCP < rb.TCP
	})
	for _, i := range idx {
		r := rows[i]
		spread, audit := "", ""
		if i < len(runs) && len(runs[i]) > 1 {
			_, lo, hi := Spread(runs[i])
			spread = fmt.Sprintf("%.2f–%.2f", lo, hi)
		}
		if i < len(runs) {
			if a := AuditOverTCP(runs[i]); a > 0 {
				audit = fmt.Sprintf("%.2f", a)
			}
		}
		dem := cmp.Or(r.Demand, "saturating")
		if r.Neighbours > 0 {
			dem += fmt.Sprintf(", %d neighbours", r.Neighbours)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %d | %d | %g %% | %g | %g | %.0f | %.0f | **%.2f** | %s | %.5f | %.5f | %s | %d |\n",
			r.Seat, cmp.Or(r.Region, "—"), dem, r.Controller, r.TCP, r.TCPFlows, r.BufferPackets, r.Loss*100, r.RTTms, r.LinkBPS/1e6,
			r.ViewerBPS/1000, r.TCPBPSPerFlow/1000, r.ViewerOverTCP, spread, r.ViewerP, r.TCPPEquiv, audit, r.Seeds)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
