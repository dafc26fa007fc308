package fairness

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fairgrid/fairgrid/internal/audit/render"
	"github.com/fairgrid/fairgrid/internal/lab/demand"
	"github.com/fairgrid/fairgrid/throttle"
)

// DefaultSeats are lab fairness's seats unless named: what users run.
const DefaultSeats = "sidecar,proxy,gateway,gateway+sidecar,stock"

// Flags are fairgrid lab fairness's command line but --format.
type Flags struct {
	fs                                    *flag.FlagSet
	controllers, tcps, references, design *string
	seeds, parallel, neighbours           *int
	firstSeed                             *uint64
	duration, warmup, interval            *time.Duration
	out, seatList, limited, region        *string
}

// BindFlags declares lab fairness's flags on fs.
func BindFlags(fs *flag.FlagSet) *Flags {
	f := &Flags{fs: fs}
	f.controllers = fs.String("controllers", "", "comma-separated `controllers` to measure alone in the rig's own viewer: vtcp, window, tfrc (a diagnostic; none by default)")
	defTCP := "reno,cubic"
	if os.Geteuid() == 0 {
		defTCP += ",linux-reno,linux-cubic,linux-bbr"
	}
	f.tcps = fs.String("tcp", defTCP, "comma-separated TCP `kinds` beside the viewer: reno, cubic (gVisor), linux-reno, linux-cubic, linux-bbr (root)")
	f.references = fs.String("reference", "", "comma-separated TCP `kinds` to run, as a control, in the viewer's seat beside each cell's TCP (none by default)")
	f.seeds = fs.Int("seeds", 5, "seeds per cell")
	f.firstSeed = fs.Uint64("seed", 1, "the first seed, with --seeds (seed, seed+1, …): a later batch adds seeds to an earlier one's")
	f.duration = fs.Duration("duration", 60*time.Second, "each run's measured part")
	f.warmup = fs.Duration("warmup", 30*time.Second, "each run's warm-up, not measured")
	f.interval = fs.Duration("interval", 5*time.Second, "the controllers' decision interval")
	f.design = fs.String("design", string(Axes), "which cells: `axes` (each axis varied alone around the centre), centre (the centre alone), subset (the centre and its 3 % cell) or cross (the whole cross product)")
	f.parallel = fs.Int("parallel", 4, "runs at once")
	f.out = fs.String("out", "", "write rows.json, table.md and figure.html into this `directory`")
	f.seatList = fs.String("seats", DefaultSeats, "comma-separated `seats`: sidecar, proxy, gateway, gateway+sidecar, stock (the product's path) and tcp:KIND (the control)")
	f.neighbours = fs.Int("neighbours", 0, "child circuits (neighbour regions) the product seats' viewer opens besides its root, 0–8")
	f.region = fs.String("region", string(demand.OpenSimRegion), "the product seats' `region`: opensim (OpenSim 0.9.2.2's non-lending buckets and 50-unacked stall) or fairgrid (fairgrid's scheduler, no stall)")
	f.limited = fs.String("limited", "terrain", "the application-limited `workload` of each product seat's extra row: terrain, objects, avatars, textures, or empty for none")
	return f
}

// Plan is what lab fairness runs: the cells, each with Seeds seeds,
// Parallel at once, with Options; and where the files go, if anywhere.
type Plan struct {
	Cells    []Cell
	Seeds    int
	Parallel int
	Options  Options
	Out      string
}

// Plan checks the flags, once parsed, and makes the plan; the error
// names the flag. It creates --out's directory.
func (f *Flags) Plan() (Plan, error) {
	seatsSet := false
	f.fs.Visit(func(fl *flag.Flag) { seatsSet = seatsSet || fl.Name == "seats" })
	seatList := *f.seatList
	if *f.controllers != "" && !seatsSet {
		seatList = "" // the controllers alone unless the seats are asked for too
	}
	var products []demand.FrontEnd
	var seatRefs []string
	if seatList != "" {
		for _, name := range strings.Split(seatList, ",") {
			name = strings.TrimSpace(name)
			if kind, ok := strings.CutPrefix(name, "tcp:"); ok {
				k, err := tcpKinds("--seats tcp:", kind)
				if err != nil {
					return Plan{}, err
				}
				seatRefs = append(seatRefs, k...)
				continue
			}
			if !slices.Contains(demand.Seats, demand.FrontEnd(name)) {
				return Plan{}, fmt.Errorf("--seats %q: want sidecar, proxy, gateway, gateway+sidecar, stock or tcp:KIND", name)
			}
			if !slices.Contains(products, demand.FrontEnd(name)) {
				products = append(products, demand.FrontEnd(name))
			}
		}
	}
	if !slices.Contains(demand.Regions, demand.Region(*f.region)) {
		return Plan{}, fmt.Errorf("--region %q: want opensim or fairgrid", *f.region)
	}
	neighbours := *f.neighbours
	if neighbours < 0 || neighbours > 8 {
		return Plan{}, fmt.Errorf("--neighbours %d: want 0–8", neighbours)
	}
	if neighbours > 0 && len(products) == 0 {
		return Plan{}, fmt.Errorf("--neighbours %d: only a product seat's viewer has neighbours (--seats)", neighbours)
	}
	if *f.limited != "" {
		c := LimitedCell
		c.Product, c.TCP, c.Demand = demand.Stock, GVisorCUBIC, *f.limited
		if err := c.Validate(); err != nil {
			return Plan{}, fmt.Errorf("--limited: %w", err)
		}
	}
	var ctls []throttle.ControllerName
	if *f.controllers != "" { // empty: the references alone
		for _, name := range strings.Split(*f.controllers, ",") {
			var c throttle.ControllerName
			if err := c.UnmarshalText([]byte(strings.TrimSpace(name))); err != nil {
				return Plan{}, fmt.Errorf("--controllers: %w", err)
			}
			ctls = append(ctls, c)
		}
	}
	kinds, err := tcpKinds("--tcp", *f.tcps)
	if err != nil {
		return Plan{}, err
	}
	var refs []string
	if *f.references != "" {
		if refs, err = tcpKinds("--reference", *f.references); err != nil {
			return Plan{}, err
		}
	}
	for _, k := range seatRefs {
		if !slices.Contains(refs, k) {
			refs = append(refs, k)
		}
	}
	if len(ctls) == 0 && len(refs) == 0 && len(products) == 0 {
		return Plan{}, errors.New("--controllers is empty and there is no --seats or --reference: nothing to measure")
	}
	switch {
	case *f.seeds < 1 || *f.seeds > 100:
		return Plan{}, fmt.Errorf("--seeds %d: want 1–100", *f.seeds)
	case *f.firstSeed < 1:
		return Plan{}, fmt.Errorf("--seed %d: want 1 or more", *f.firstSeed)
	case *f.duration < 5*time.Second:
		return Plan{}, fmt.Errorf("--duration %v: want at least 5s", *f.duration)
	case *f.warmup < 0:
		return Plan{}, fmt.Errorf("--warmup %v: want 0 or more", *f.warmup)
	case *f.parallel < 1:
		return Plan{}, fmt.Errorf("--parallel %d: want at least 1", *f.parallel)
	}
	if err := throttle.CheckInterval(*f.interval); err != nil {
		return Plan{}, fmt.Errorf("--interval %v", err)
	}
	if *f.out != "" {
		if err := os.MkdirAll(*f.out, 0o755); err != nil {
			return Plan{}, fmt.Errorf("--out: %v", err)
		}
	}
	d := Design(*f.design)
	if d != Axes && d != Centre && d != Subset && d != Cross {
		return Plan{}, fmt.Errorf("--design %q: want axes, centre, subset or cross", *f.design)
	}
	seatCells := Seats(products, kinds, d, neighbours, *f.limited)
	for i := range seatCells {
		seatCells[i].Region = demand.Region(*f.region)
	}
	cells := append(Grid(ctls, kinds, d), seatCells...)
	cells = append(cells, References(refs, kinds, d)...)
	return Plan{Cells: cells, Seeds: *f.seeds, Parallel: *f.parallel, Out: *f.out,
		Options: Options{Warmup: *f.warmup, Duration: *f.duration, Interval: *f.interval, Seed: *f.firstSeed}}, nil
}

// String says how much the plan runs and how long it takes.
func (p Plan) String() string {
	total := len(p.Cells) * p.Seeds
	each := p.Options.Warmup + p.Options.Duration
	return fmt.Sprintf("%d cells × %d seeds, %v each, %d at once: about %v",
		len(p.Cells), p.Seeds, each, p.Parallel, (each * time.Duration((total+p.Parallel-1)/p.Parallel)).Round(time.Minute))
}

// tcpKinds parses a comma-separated list of TCP kinds; Linux's need
// root.
func tcpKinds(flagName, list string) ([]string, error) {
	var kinds []string
	for _, k := range strings.Split(list, ",") {
		k = strings.TrimSpace(k)
		if !slices.Contains(TCPKinds, k) {
			return nil, fmt.Errorf("%s %q: want one of %v", flagName, k, TCPKinds)
		}
		if IsKernel(k) && os.Geteuid() != 0 {
			return nil, fmt.Errorf("%s %s: Linux's TCP runs in network namespaces, which need root", flagName, k)
		}
		if !slices.Contains(kinds, k) { // a kind named twice runs once
			kinds = append(kinds, k)
		}
	}
	return kinds, nil
}

// WriteFiles writes rows.json, table.md and figure.html, one
// panel per seat (a controller, a product front-end, or tcp:KIND for a
// reference) in the
// order the rows name them.
func WriteFiles(dir string, rows []Row, runs [][]Result) error {
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
		_, lo, hi := Spread(runs[i])
		panels[k].Cells = append(panels[k].Cells, render.ShareCell{Label: runs[i][0].Cell.String(), Ratio: r.ViewerOverTCP, Lo: lo, Hi: hi})
	}
	return errors.Join(
		write("rows.json", func(f *os.File) error { return WriteJSON(f, rows) }),
		write("table.md", func(f *os.File) error { return WriteMarkdown(f, rows, runs) }),
		write("figure.html", func(f *os.File) error {
			return render.WriteSharesHTML(f, "fairgrid lab fairness: the viewer's share beside TCP", panels)
		}),
	)
}
