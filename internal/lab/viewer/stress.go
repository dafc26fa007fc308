package viewer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"time"
)

// StressResult summarises a stress run: the delay from each movement to
// its echo, over every viewer, and what the run cost. Counts and CPU are
// over the measured window (after the warm-up, before logout).
type StressResult struct {
	Viewers  int           `json:"viewers"`
	LoggedIn int           `json:"logged_in"`
	Echoes   int           `json:"echoes"`
	Moves    uint64        `json:"moves"`
	Mean     time.Duration `json:"-"`
	P99      time.Duration `json:"-"`
	MeanMs   float64       `json:"mean_ms"`
	P99Ms    float64       `json:"p99_ms"`
	// World is the side of the square the viewers walked in, metres.
	World float64 `json:"world_m"`
	// WindowSeconds is the measured window's length.
	WindowSeconds float64 `json:"window_s"`
	// Neighbours is the mean number of other avatars each movement was
	// sent to: counted at the region when its metrics were read
	// (NeighboursAt "region"), otherwise from what the viewers received
	// ("viewers", which misses what was lost).
	Neighbours   float64 `json:"neighbours_per_move"`
	NeighboursAt string  `json:"neighbours_counted_at"`
	// Region: datagrams per second in and out at the region and its CPU
	// seconds over the window, from its metrics; nil when not read.
	Region *RegionCost `json:"region,omitempty"`
	// ViewerCPUSeconds is this process's CPU time (user and system) over
	// the window, every viewer together; negative where the platform does
	// not say.
	ViewerCPUSeconds float64 `json:"viewer_cpu_s"`
	// Fleet is how the viewers reached the network (FleetShared or
	// FleetPerViewer), and FleetFallback, when FleetAuto could not share
	// sockets, why not.
	Fleet         Fleet  `json:"fleet"`
	FleetFallback string `json:"fleet_fallback,omitempty"`
}

// Fleet is how a stress step's viewers reach the network.
type Fleet string

const (
	// FleetAuto shares sockets where it can (FleetShared), and gives each
	// viewer its own where it cannot.
	FleetAuto Fleet = "auto"
	// FleetShared: one UDP socket per event loop, each viewer at its own
	// loopback address 127.x.y.z on it (Linux, a region on IPv4
	// loopback; sharedfleet_linux.go).
	FleetShared Fleet = "shared"
	// FleetPerViewer: a UDP socket per viewer, watched by one epoll set
	// per event loop (on Linux; elsewhere two goroutines per viewer).
	FleetPerViewer Fleet = "per-viewer"
)

// ParseFleet reads a fleet's name.
func ParseFleet(s string) (Fleet, error) {
	switch f := Fleet(s); f {
	case FleetAuto, FleetShared, FleetPerViewer:
		return f, nil
	}
	return "", fmt.Errorf("fleet %q: want %s, %s or %s", s, FleetAuto, FleetShared, FleetPerViewer)
}

// RegionCost is what a stress window cost the region, from two readings
// of its metrics.
type RegionCost struct {
	InPerSecond  float64 `json:"datagrams_in_per_s"`
	OutPerSecond float64 `json:"datagrams_out_per_s"`
	CPUSeconds   float64 `json:"cpu_s"`
}

// StressOptions configures RunStress.
type StressOptions struct {
	Sim       netip.AddrPort
	Viewers   int
	Duration  time.Duration // the whole run, warm-up included
	FirstCode uint32        // circuit codes count up from here
	// World is the side of the square the viewers walk in, metres
	// (default DefaultStressWorld).
	World float64
	// Warmup is left out of every figure (default 3 s): logging thousands
	// of viewers in at once is a storm of its own, not the steady state
	// being measured.
	Warmup time.Duration
	// RegionMetrics, if set, is the URL of the region's Prometheus metrics
	// (fairgrid sim --metrics): read at both ends of the window for the
	// region's datagram rates, CPU and neighbours per move.
	RegionMetrics string
	// Fleet says how the viewers reach the network (default FleetAuto).
	Fleet Fleet
}

// DefaultStressWorld is one region's side, in metres.
const DefaultStressWorld = 256

const defaultStressWarmup = 3 * time.Second

// Stress runs n viewers in stress mode against a region in stress mode for
// d, with circuit codes from firstCode on, and gathers the echo delays of
// the movements made after the first 3 s.
func Stress(ctx context.Context, sim netip.AddrPort, n int, d time.Duration, firstCode uint32) (StressResult, error) {
	return RunStress(ctx, StressOptions{Sim: sim, Viewers: n, Duration: d, FirstCode: firstCode})
}

// viewerCount is what the window's figures are differences of.
type viewerCount struct {
	moves, terses uint64
}

// RunStress runs a stress step and measures it: echo delays of the
// movements made in the window, and, if the region's metrics are given,
// what the window cost the region.
func RunStress(ctx context.Context, o StressOptions) (StressResult, error) {
	o.World = cmp.Or(o.World, DefaultStressWorld)
	o.Warmup = cmp.Or(o.Warmup, defaultStressWarmup)
	if o.Viewers < 1 {
		return StressResult{}, fmt.Errorf("stress: %d viewers: want at least 1", o.Viewers)
	}
	if o.Duration <= o.Warmup {
		return StressResult{}, fmt.Errorf("stress: duration %v: want more than the %v warm-up", o.Duration, o.Warmup)
	}
	if !(o.World > 0) || o.World > maxStressWorld {
		return StressResult{}, fmt.Errorf("stress: world %v m: want above 0 and at most %d", o.World, maxStressWorld)
	}
	fleet, err := openStressFleet(o)
	if err != nil {
		return StressResult{}, err
	}
	vs := fleet.viewers
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	warm := start.Add(o.Warmup)
	for _, v := range vs {
		v.stressFrom = warm
	}
	fleetDone := make(chan error, 1)
	go func() { fleetDone <- fleet.run(runCtx) }()
	res := StressResult{Viewers: o.Viewers, World: o.World, Fleet: fleet.kind, FleetFallback: fleet.fallback}
	var errs []error
	waitUntil(ctx, warm)
	before, beforeAt := sampleStress(vs), time.Now()
	cpuBefore := processCPU()
	var regionBefore, regionAfter regionSample
	var regionErr error
	if o.RegionMetrics != "" {
		regionBefore, regionErr = scrapeRegion(ctx, o.RegionMetrics)
	}
	waitUntil(ctx, start.Add(o.Duration))
	after, afterAt := sampleStress(vs), time.Now()
	cpuAfter := processCPU()
	if o.RegionMetrics != "" && regionErr == nil {
		regionAfter, regionErr = scrapeRegion(ctx, o.RegionMetrics)
	}
	cancel()
	if err := <-fleetDone; err != nil {
		errs = append(errs, err)
	}

	window := afterAt.Sub(beforeAt).Seconds()
	res.WindowSeconds = window
	res.ViewerCPUSeconds = -1
	if cpuBefore >= 0 && cpuAfter >= 0 {
		res.ViewerCPUSeconds = (cpuAfter - cpuBefore).Seconds()
	}
	moves, terses := after.moves-before.moves, after.terses-before.terses
	if moves > 0 {
		res.Neighbours, res.NeighboursAt = float64(terses)/float64(moves)-1, "viewers"
	}
	if regionErr != nil {
		errs = append(errs, fmt.Errorf("region metrics: %w", regionErr))
	} else if o.RegionMetrics != "" && window > 0 {
		d := regionAfter.minus(regionBefore)
		res.Region = &RegionCost{InPerSecond: d.in / window, OutPerSecond: d.out / window, CPUSeconds: d.cpu}
		if d.moves > 0 {
			res.Neighbours, res.NeighboursAt = d.echoes/d.moves-1, "region"
		}
	}
	var all []time.Duration
	for _, v := range vs {
		v.mu.Lock()
		if v.loggedIn {
			res.LoggedIn++
		}
		res.Moves += uint64(v.moves)
		all = append(all, v.echoes...)
		v.mu.Unlock()
	}
	res.Echoes = len(all)
	if len(all) > 0 {
		slices.Sort(all)
		var sum time.Duration
		for _, x := range all {
			sum += x
		}
		res.Mean = sum / time.Duration(len(all))
		res.P99 = all[min(len(all)-1, len(all)*99/100)]
		res.MeanMs = float64(res.Mean) / float64(time.Millisecond)
		res.P99Ms = float64(res.P99) / float64(time.Millisecond)
	}
	return res, errors.Join(errs...)
}

// stressFleet is a stress step's viewers and how they reach the network.
type stressFleet struct {
	kind     Fleet
	fallback string // why not shared, when FleetAuto could not share
	viewers  []*Viewer
	shared   sharedSockets // nil: a socket per viewer
}

// sharedSockets is the shared fleet (sharedfleet_linux.go): endpoint(i)
// is viewer i's address on it.
type sharedSockets interface {
	endpoint(i int) datagramConn
	run(ctx context.Context, vs []*Viewer) error
	sendFailures() (uint64, error)
	close()
}

// openStressFleet makes the step's viewers, on shared sockets unless
// o.Fleet says otherwise or they cannot be had.
func openStressFleet(o StressOptions) (*stressFleet, error) {
	mode, err := ParseFleet(string(cmp.Or(o.Fleet, FleetAuto)))
	if err != nil {
		return nil, fmt.Errorf("stress: %w", err)
	}
	f := &stressFleet{kind: FleetPerViewer, viewers: make([]*Viewer, o.Viewers)}
	if mode != FleetPerViewer {
		shared, err := openShared(o.Sim, o.Viewers)
		switch {
		case err == nil:
			f.kind, f.shared = FleetShared, shared
		case mode == FleetShared:
			return nil, fmt.Errorf("stress: %w", err)
		default:
			f.fallback = err.Error()
		}
	}
	for i := range f.viewers {
		cfg := Config{Sim: o.Sim, CircuitCode: o.FirstCode + uint32(i), Stress: true, StressWorld: float32(o.World)}
		var v *Viewer
		if f.shared != nil {
			v, err = newViewer(cfg.withDefaults(), nil, f.shared.endpoint(i))
		} else {
			v, err = New(cfg, nil)
		}
		if err != nil {
			closeConns(f.viewers[:i])
			if f.shared != nil {
				f.shared.close()
			}
			return nil, err
		}
		f.viewers[i] = v
	}
	return f, nil
}

// run serves the viewers until ctx ends and they have logged out.
func (f *stressFleet) run(ctx context.Context) error {
	if f.shared == nil {
		return runFleet(ctx, f.viewers)
	}
	err := f.shared.run(ctx, f.viewers)
	if n, first := f.shared.sendFailures(); n > 0 {
		err = errors.Join(err, fmt.Errorf("shared fleet: the kernel refused %d datagrams: %w", n, first))
	}
	return err
}

func closeConns(vs []*Viewer) {
	for _, v := range vs {
		v.Close()
	}
}

// waitUntil returns at t, or when ctx ends.
func waitUntil(ctx context.Context, t time.Time) {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-ctx.Done():
	case <-timer.C:
	}
}

func sampleStress(vs []*Viewer) viewerCount {
	var c viewerCount
	for _, v := range vs {
		v.mu.Lock()
		c.moves += uint64(v.moves)
		c.terses += v.terses
		v.mu.Unlock()
	}
	return c
}

// maxStressWorld matches the region's bound on stress coordinates.
const maxStressWorld = 1 << 16

// WorldForNeighbours is the side of the square over which n avatars,
// spread evenly, each have k others within view metres on average. An
// avatar near the border sees less of its disc: for a disc of radius r
// centred uniformly in a square of side L ≥ 2r the mean area inside is
// πr² − 8r³/(3L) + r⁴/(2L²) (Bettstetter, "On the minimum node degree
// and connectivity of a wireless multihop network", MobiHoc 2002, §4),
// so the mean neighbours are (n−1)/L² times that, which falls as L grows;
// solved for L by bisection. When even L = 2r gives fewer than k (too few
// avatars) it returns 2r, and the sweep's measured neighbours say so.
func WorldForNeighbours(n int, k, view float64) (float64, error) {
	if n < 2 || !(k > 0) || !(view > 0) || math.IsInf(k, 0) || math.IsInf(view, 0) {
		return 0, fmt.Errorf("world for %d avatars, %v neighbours within %v m: want at least 2 avatars, and neighbours and view above 0", n, k, view)
	}
	mean := func(l float64) float64 {
		r := view
		area := math.Pi*r*r - 8*r*r*r/(3*l) + r*r*r*r/(2*l*l)
		return float64(n-1) * area / (l * l)
	}
	lo, hi := 2*view, float64(maxStressWorld)
	if mean(lo) <= k {
		return lo, nil
	}
	if mean(hi) > k {
		return 0, fmt.Errorf("%d avatars with %v neighbours within %v m need a world larger than %d m", n, k, view, maxStressWorld)
	}
	for range 100 {
		mid := (lo + hi) / 2
		if mean(mid) > k {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2, nil
}
