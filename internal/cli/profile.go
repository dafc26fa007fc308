package cli

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
)

// ProfileFlags are the Go profiles `fairgrid sim` and `fairgrid viewer`
// write for a stress run (README: where the time goes).
type ProfileFlags struct {
	cpu, block, mutex, trace *string
}

// BindProfileFlags declares --cpuprofile, --blockprofile, --mutexprofile
// and --trace on fs.
func BindProfileFlags(fs *flag.FlagSet) ProfileFlags {
	return ProfileFlags{
		cpu:   fs.String("cpuprofile", "", "write a pprof CPU profile of the run to this file"),
		block: fs.String("blockprofile", "", "write a pprof profile of where goroutines blocked (channels, select, locks) to this file"),
		mutex: fs.String("mutexprofile", "", "write a pprof profile of lock contention to this file"),
		trace: fs.String("trace", "", "write a runtime/trace execution trace (scheduler latency: go tool trace -pprof=sched) to this file"),
	}
}

// blockProfileRate samples one blocking event per 10 µs spent blocked,
// and mutexProfileFraction one contention in 10: recording every event
// would cost more than the wake-ups being measured.
const (
	blockProfileRate     = 10_000
	mutexProfileFraction = 10
)

// Start starts the profiles asked for; stop writes them.
func (p ProfileFlags) Start() (stop func() error, err error) {
	var stops []func() error
	stopAll := func() error {
		var errs []error
		for _, f := range stops {
			errs = append(errs, f())
		}
		return errors.Join(errs...)
	}
	create := func(name string) (*os.File, error) {
		f, err := os.Create(name)
		if err != nil {
			stopAll()
			return nil, fmt.Errorf("profile: %w", err)
		}
		return f, nil
	}
	if *p.cpu != "" {
		f, err := create(*p.cpu)
		if err != nil {
			return nil, err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			stopAll()
			return nil, fmt.Errorf("cpu profile: %w", err)
		}
		stops = append(stops, func() error { pprof.StopCPUProfile(); return f.Close() })
	}
	if *p.trace != "" {
		f, err := create(*p.trace)
		if err != nil {
			return nil, err
		}
		if err := trace.Start(f); err != nil {
			f.Close()
			stopAll()
			return nil, fmt.Errorf("trace: %w", err)
		}
		stops = append(stops, func() error { trace.Stop(); return f.Close() })
	}
	for _, lp := range []struct {
		file, name string
		on, off    func()
	}{
		{*p.block, "block", func() { runtime.SetBlockProfileRate(blockProfileRate) }, func() { runtime.SetBlockProfileRate(0) }},
		{*p.mutex, "mutex", func() { runtime.SetMutexProfileFraction(mutexProfileFraction) }, func() { runtime.SetMutexProfileFraction(0) }},
	} {
		if lp.file == "" {
			continue
		}
		f, err := create(lp.file)
		if err != nil {
			return nil, err
		}
		lp.on()
		stops = append(stops, func() error {
			err := pprof.Lookup(lp.name).WriteTo(f, 0)
			lp.off()
			return errors.Join(err, f.Close())
		})
	}
	return stopAll, nil
}
