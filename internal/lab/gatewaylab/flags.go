package gatewaylab

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/fairgrid/fairgrid/ratecalc"
	"github.com/fairgrid/fairgrid/throttle"
)

// Flags are fairgrid lab gateway's command line but --format.
type Flags struct {
	warmup, duration, interval *time.Duration
	seed                       *uint64
	controller                 throttle.ControllerName
	loss, arms                 *string
}

// BindFlags declares lab gateway's flags on fs.
func BindFlags(fs *flag.FlagSet) *Flags {
	f := &Flags{}
	f.warmup = fs.Duration("warmup", DefaultWarmup, "left out of the measurement")
	f.duration = fs.Duration("duration", 40*time.Second, "the measured part")
	f.seed = fs.Uint64("seed", 1, "seed of the link's loss and the TCP stacks")
	fs.TextVar(&f.controller, "controller", throttle.ControllerName(""), "the gateway's controller (default: the gateway's)")
	f.interval = fs.Duration("interval", 0, "the gateway's decision interval (0: its default)")
	f.loss = fs.String("loss", strconv.FormatFloat(100*DefaultLink.Loss, 'g', -1, 64)+"%", "random loss towards the viewer: a fraction or a percentage")
	f.arms = fs.String("arms", "gateway,gateway+sidecar,stock", "comma-separated arms: gateway, gateway+sidecar, stock")
	return f
}

// Config is the run the flags ask for, validated.
func (f *Flags) Config() (Config, error) {
	l := DefaultLink
	var err error
	if l.Loss, err = ratecalc.ParseLoss(*f.loss); err != nil {
		return Config{}, fmt.Errorf("--loss %q: %v", *f.loss, err)
	}
	cfg := Config{Link: l, Warmup: *f.warmup, Duration: *f.duration, Seed: *f.seed, Controller: f.controller, Interval: *f.interval}
	for _, a := range strings.Split(*f.arms, ",") {
		cfg.Arms = append(cfg.Arms, Arm(strings.TrimSpace(a)))
	}
	if err := cfg.Validate(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}
