package main

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fairgrid/fairgrid/internal/audit/render"
	"github.com/fairgrid/fairgrid/internal/lab/demand"
	"github.com/fairgrid/fairgrid/internal/lab/fairness"
	"github.com/fairgrid/fairgrid/throttle"
)

const labFairnessSynopsis = `[--seats LIST] [--region opensim|fairgrid] [--neighbours K] [--limited WORKLOAD] [--controllers LIST] [--tcp LIST] [--reference LIST] [--seeds N] [--seed N] [--duration D] [--warmup D] [--interval D] [--design axes|centre|subset|cross] [--parallel N] [--format text|json] [--out DIR]

Measures the promise: a viewer with saturating demand (its region sends
whatever the throttle allows) beside bulk TCP downloads on one shared
drop-tail bottleneck, its bytes/s ÷ one TCP flow's, for each seat and
cell of the grid: TCP reno and cubic (gVisor's userspace stacks) and,
as root, linux-reno, linux-cubic and linux-bbr (the kernel's, in network
namespaces); 1 and 4 flows; buffers of 20, 100 and 200 packets and of ½,
1 and 2 bandwidth-delay products; random loss 0, 0.5, 3 and 10 %; RTT 20,
80 and 200 ms; links of 1, 6 and 30 Mbit/s. By default (--design axes)
each axis is varied alone around the centre, 6 Mbit/s, 80 ms, 100
packets, no loss, one flow (13 cells per controller and TCP); centre runs
the centre alone, subset the centre and its 3 % cell, cross the whole
cross product.
--seats (by default sidecar,proxy,gateway,gateway+sidecar,stock) puts
what users run in the viewer's seat of every cell: sidecar
(run's loop on the viewer's traffic, sending AgentThrottles), proxy (the
viewer's UDP through proxy's SOCKS 5 relay), gateway (a stock viewer
behind gateway), gateway+sidecar, stock (no fairgrid), each the
product's own code over real LLUDP against a region of fairgrid sim with
OpenSim's non-lending category buckets and its 50-unacked stall (or,
with --region fairgrid, fairgrid's own scheduler, whose idle categories
lend, and no stall), the viewer asking 5,120 kbit/s; and tcp:KIND, the
control. Their region's
demand saturates (flying); each seat also gets one application-limited
row (--limited, default terrain) at the centre with 3 % loss, to set
beside stock's: nothing cut when the link has room. --neighbours K adds
K child circuits (neighbour regions) to the viewer: their sum is its
share. --controllers (none by default) runs the rig's own viewer with a
controller alone instead (vtcp, window, tfrc): no LLUDP, no region, a
diagnostic of the controller, not what users run. It gives the sidecar
seat's rows against --region fairgrid, not against OpenSim's region,
whose stall holds every viewer (docs/results/seats-bare.md,
seats-subset.md). Naming either of --seats
and --controllers leaves the other empty unless it is named too.
--reference adds the control: each cell again with a bulk TCP download
of each kind listed in the viewer's seat (rows "tcp:KIND"), how far one
TCP flow's share lies from another's on the same rig.
Runs are real time (warm-up plus duration each), --parallel at once;
Ctrl-C prints the table of the runs that finished (exit 0).

Prints a markdown table (text) or one JSON row per cell (json); with
--out, also rows.json, table.md and figure.html (viewer ÷ TCP per cell,
one panel per seat) in DIR.`

// defaultSeats are lab fairness's seats unless named: what users run.
const defaultSeats = "sidecar,proxy,gateway,gateway+sidecar,stock"

func runLabFairness(args []string, s stdio) int {
	fs := newFlagSet("lab fairness", labFairnessSynopsis, s)
	format := formatFlag(fs, "output format: `text` (a markdown table) or json (one row per cell)")
	controllers := fs.String("controllers", "", "comma-separated `controllers` to measure alone in the rig's own viewer: vtcp, window, tfrc (a diagnostic; none by default)")
	defTCP := "reno,cubic"
	if os.Geteuid() == 0 {
		defTCP += ",linux-reno,linux-cubic,linux-bbr"
	}
	tcps := fs.String("tcp", defTCP, "comma-separated TCP `kinds` beside the viewer: reno, cubic (gVisor), linux-reno, linux-cubic, linux-bbr (root)")
	references := fs.String("reference", "", "comma-separated TCP `kinds` to run, as a control, in the viewer's seat beside each cell's TCP (none by default)")
	seeds := fs.Int("seeds", 5, "seeds per cell")
	firstSeed := fs.Uint64("seed", 1, "the first seed, with --seeds (seed, seed+1, …): a later batch adds seeds to an earlier one's")
	duration := fs.Duration("duration", 60*time.Second, "each run's measured part")
	warmup := fs.Duration("warmup", 30*time.Second, "each run's warm-up, not measured")
	interval := fs.Duration("interval", 5*time.Second, "the controllers' decision interval")
	design := fs.String("design", string(fairness.Axes), "which cells: `axes` (each axis varied alone around the centre), centre (the centre alone), subset (the centre and its 3 % cell) or cross (the whole cross product)")
	parallel := fs.Int("parallel", 4, "runs at once")
	out := fs.String("out", "", "write rows.json, table.md and figure.html into this `directory`")
	seatList := fs.String("seats", defaultSeats, "comma-separated `seats`: sidecar, proxy, gateway, gateway+sidecar, stock (the product's path) and tcp:KIND (the control)")
	neighbours := fs.Int("neighbours", 0, "child circuits (neighbour regions) the product seats' viewer opens besides its root, 0–8")
	regionKind := fs.String("region", string(demand.OpenSimRegion), "the product seats' `region`: opensim (OpenSim 0.9.2.2's non-lending buckets and 50-unacked stall) or fairgrid (fairgrid's scheduler, no stall)")
	limited := fs.String("limited", "terrain", "the application-limited `workload` of each product seat's extra row: terrain, objects, avatars, textures, or empty for none")
	if c, ok := parseFlags(fs, labFairnessSynopsis, args, s); !ok {
		return c
	}
	seatsSet := false
	fs.Visit(func(f *flag.Flag) { seatsSet = seatsSet || f.Name == "seats" })
	if *controllers != "" && !seatsSet {
		*seatList = "" // the controllers alone unless the seats are asked for too
	}
	var products []demand.FrontEnd
	var seatRefs []string
	if *seatList != "" {
		for _, name := range strings.Split(*seatList, ",") {
			name = strings.TrimSpace(name)
			if kind, ok := strings.CutPrefix(name, "tcp:"); ok {
				k, ok := tcpKindsFlag("--seats tcp:", kind, s)
				if !ok {
					return exitUsage
				}
				seatRefs = append(seatRefs, k...)
				continue
			}
			if !slices.Contains(demand.Seats, demand.FrontEnd(name)) {
				fmt.Fprintf(s.err, "fairgrid lab fairness: --seats %q: want sidecar, proxy, gateway, gateway+sidecar, stock or tcp:KIND\n", name)
				return exitUsage
			}
			if !slices.Contains(products, demand.FrontEnd(name)) {
				products = append(products, demand.FrontEnd(name))
			}
		}
	}
	if !slices.Contains(demand.Regions, demand.Region(*regionKind)) {
		fmt.Fprintf(s.err, "fairgrid lab fairness: --region %q: want opensim or fairgrid\n", *regionKind)
		return exitUsage
	}
	if *neighbours < 0 || *neighbours > 8 {
		fmt.Fprintf(s.err, "fairgrid lab fairness: --neighbours %d: want 0–8\n", *neighbours)
		return exitUsage
	}
	if *neighbours > 0 && len(products) == 0 {
		fmt.Fprintf(s.err, "fairgrid lab fairness: --neighbours %d: only a product seat's viewer has neighbours (--seats)\n", *neighbours)
		return exitUsage
	}
	if *limited != "" {
		c := fairness.LimitedCell
		c.Product, c.TCP, c.Demand = demand.Stock, fairness.GVisorCUBIC, *limited
		if err := c.Validate(); err != nil {
			fmt.Fprintf(s.err, "fairgrid lab fairness: --limited: %v\n", err)
			return exitUsage
		}
	}
	var ctls []throttle.ControllerName
	if *controllers != "" { // empty: the references alone
		for _, name := range strings.Split(*controllers, ",") {
			var c throttle.ControllerName
			if err := c.UnmarshalText([]byte(strings.TrimSpace(name))); err != nil {
				fmt.Fprintf(s.err, "fairgrid lab fairness: --controllers: %v\n", err)
				return exitUsage
			}
			ctls = append(ctls, c)
		}
	}
	kinds, ok := tcpKindsFlag("--tcp", *tcps, s)
	if !ok {
		return exitUsage
	}
	var refs []string
	if *references != "" {
		if refs, ok = tcpKindsFlag("--reference", *references, s); !ok {
			return exitUsage
		}
	}
	for _, k := range seatRefs {
		if !slices.Contains(refs, k) {
			refs = append(refs, k)
		}
	}
	if len(ctls) == 0 && len(refs) == 0 && len(products) == 0 {
		fmt.Fprintf(s.err, "fairgrid lab fairness: --controllers is empty and there is no --seats or --reference: nothing to measure\n")
		return exitUsage
	}
	switch {
	case *seeds < 1 || *seeds > 100:
		fmt.Fprintf(s.err, "fairgrid lab fairness: --seeds %d: want 1–100\n", *seeds)
		return exitUsage
	case *firstSeed < 1:
		fmt.Fprintf(s.err, "fairgrid lab fairness: --seed %d: want 1 or more\n", *firstSeed)
		return exitUsage
	case *duration < 5*time.Second:
		fmt.Fprintf(s.err, "fairgrid lab fairness: --duration %v: want at least 5s\n", *duration)
		return exitUsage
	case *warmup < 0:
		fmt.Fprintf(s.err, "fairgrid lab fairness: --warmup %v: want 0 or more\n", *warmup)
		return exitUsage
	case *parallel < 1:
		fmt.Fprintf(s.err, "fairgrid lab fairness: --parallel %d: want at least 1\n", *parallel)
		return exitUsage
	}
	if err := throttle.CheckInterval(*interval); err != nil {
		fmt.Fprintf(s.err, "fairgrid lab fairness: --interval %v\n", err)
		return exitUsage
	}
	if *out != "" {
		if err := os.MkdirAll(*out, 0o755); err != nil {
			fmt.Fprintf(s.err, "fairgrid lab fairness: --out: %v\n", err)
			return exitUsage
		}
	}
	d := fairness.Design(*design)
	if d != fairness.Axes && d != fairness.Centre && d != fairness.Subset && d != fairness.Cross {
		fmt.Fprintf(s.err, "fairgrid lab fairness: --design %q: want axes, centre, subset or cross\n", *design)
		return exitUsage
	}
	seatCells := fairness.Seats(products, kinds, d, *neighbours, *limited)
	for i := range seatCells {
		seatCells[i].Region = demand.Region(*regionKind)
	}
	cells := append(fairness.Grid(ctls, kinds, d), seatCells...)
	cells = append(cells, fairness.References(refs, kinds, d)...)
	ctx, stop := runContext(0, plainNotice(s.err, "fairgrid lab fairness"))
	defer stop()
	log := slog.New(slog.NewTextHandler(s.err, &slog.HandlerOptions{Level: slog.LevelWarn}))
	total, done := len(cells)**seeds, 0
	each := *warmup + *duration
	fmt.Fprintf(s.err, "fairgrid lab fairness: %d cells × %d seeds, %v each, %d at once: about %v\n",
		len(cells), *seeds, each, *parallel, (each * time.Duration((total+*parallel-1) / *parallel)).Round(time.Minute))
	runs, err := fairness.RunGrid(ctx, cells, *seeds, fairness.Options{Warmup: *warmup, Duration: *duration, Interval: *interval, Seed: *firstSeed, Log: log},
		*parallel,
		func(r fairness.Result) {
			done++
			warn := ""
			if r.SenderShortfall > 0.05 {
				warn = fmt.Sprintf(" (the region sent %.0f %% less than allowed: the machine is too loaded to judge this run)", 100*r.SenderShortfall)
			}
			fmt.Fprintf(s.err, "[%d/%d] %v, seed %d: viewer ÷ TCP %.2f%s\n", done, total, r.Cell, r.Seed, fairness.Ratio(r), warn)
		})
	var interrupted *fairness.Interrupted
	if errors.As(err, &interrupted) {
		// Ctrl-C: what the finished runs measured, as the other labs do.
		if interrupted.Finished == 0 {
			fmt.Fprintf(s.out, "Interrupted: none of the %d runs had finished; nothing measured.\n", interrupted.Total)
			return exitOK
		}
		fmt.Fprintf(s.out, "Interrupted: %d of %d runs finished; what they measured (seeds column: how many per cell):\n\n", interrupted.Finished, interrupted.Total)
	} else if err != nil {
		fmt.Fprintf(s.err, "fairgrid lab fairness: %v\n", err)
		return exitFail
	}
	rows := make([]fairness.Row, len(runs))
	for i, rs := range runs {
		rows[i] = fairness.Summarize(rs)
	}
	w := &resultWriter{w: s.out}
	if *format == "json" {
		fairness.WriteJSON(w, rows)
	} else {
		fairness.WriteMarkdown(w, rows, runs)
	}
	if *out != "" {
		if err := writeFairnessFiles(*out, rows, runs); err != nil {
			fmt.Fprintf(s.err, "fairgrid lab fairness: %v\n", err)
			return exitFail
		}
	}
	return w.finish(s, "lab fairness", exitOK)
}

// tcpKindsFlag parses a comma-separated list of TCP kinds; Linux's need
// root.
func tcpKindsFlag(flagName, list string, s stdio) ([]string, bool) {
	var kinds []string
	for _, k := range strings.Split(list, ",") {
		k = strings.TrimSpace(k)
		if !slices.Contains(fairness.TCPKinds, k) {
			fmt.Fprintf(s.err, "fairgrid lab fairness: %s %q: want one of %v\n", flagName, k, fairness.TCPKinds)
			return nil, false
		}
		if fairness.IsKernel(k) && os.Geteuid() != 0 {
			fmt.Fprintf(s.err, "fairgrid lab fairness: %s %s: Linux's TCP runs in network namespaces, which need root\n", flagName, k)
			return nil, false
		}
		if !slices.Contains(kinds, k) { // a kind named twice runs once
			kinds = append(kinds, k)
		}
	}
	return kinds, true
}

// writeFairnessFiles writes rows.json, table.md and figure.html, one
// panel per seat (a controller, a product front-end, or tcp:KIND for a
// reference) in the
// order the rows name them.
func writeFairnessFiles(dir string, rows []fairness.Row, runs [][]fairness.Result) error {
	write := func(name string, f func(*os.File) error) error {
		file, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		err = f(file)
		if cerr := file.Close(); err == nil {
			err = cerr
		}
		return err
	}
	var panels []render.SharePanel
	panelOf := map[string]int{}
	for i, r := range rows {
		k, ok := panelOf[r.Seat]
		if !ok {
			k = len(panels)
			panelOf[r.Seat] = k
			panels = append(panels, render.SharePanel{Title: r.Seat})
		}
		_, lo, hi := fairness.Spread(runs[i])
		panels[k].Cells = append(panels[k].Cells, render.ShareCell{Label: runs[i][0].Cell.String(), Ratio: r.ViewerOverTCP, Lo: lo, Hi: hi})
	}
	return errors.Join(
		write("rows.json", func(f *os.File) error { return fairness.WriteJSON(f, rows) }),
		write("table.md", func(f *os.File) error { return fairness.WriteMarkdown(f, rows, runs) }),
		write("figure.html", func(f *os.File) error {
			return render.WriteSharesHTML(f, "fairgrid lab fairness: the viewer's share beside TCP", panels)
		}),
	)
}
