package main

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/fairgrid/fairgrid/internal/lab/gatewaylab"
	"github.com/fairgrid/fairgrid/ratecalc"
	"github.com/fairgrid/fairgrid/throttle"
)

const labGatewaySynopsis = `[--warmup D] [--duration D] [--seed N] [--controller C] [--interval D] [--loss P] [--arms LIST] [--format text|json]

The gateway in the demo's setting, on lab fairness's rig: a link of 1
Mbit/s, 50 ms one way and a 100-datagram buffer, each way, 1 % random
loss towards the viewer, shared by a bulk CUBIC download (gVisor's
userspace TCP) and a stock viewer asking 1,500 kbit/s (the lab viewer:
nothing of fairgrid at it). A copy of the link per arm, all at once:
"gateway", the viewer reaches the region (fairgrid sim's) through
fairgrid gateway at the region's side of the link; "gateway+sidecar",
the same with fairgrid's client side at the viewer as well; "stock", the
viewer reaches the region directly. For each: the
download's rate and share and the viewer's received rate (both on the
wire: one TCP share is viewer ÷ download 0.8–1.25), and the viewer's
datagrams' queueing delay in the link's buffer; for the gateway, its own
queueing delay by channel, fair rate, loss event rate and RTT, and how
much the rate in force moved. Real time: warm-up plus duration.`

func runLabGateway(args []string, s stdio) int {
	fs := newFlagSet("lab gateway", labGatewaySynopsis, s)
	format := formatFlag(fs, "output format: `text` or json")
	warmup := fs.Duration("warmup", gatewaylab.DefaultWarmup, "left out of the measurement")
	duration := fs.Duration("duration", 40*time.Second, "the measured part")
	seed := fs.Uint64("seed", 1, "seed of the link's loss and the TCP stacks")
	var controller throttle.ControllerName
	fs.TextVar(&controller, "controller", throttle.ControllerName(""), "the gateway's controller (default: the gateway's)")
	interval := fs.Duration("interval", 0, "the gateway's decision interval (0: its default)")
	loss := fs.String("loss", strconv.FormatFloat(100*gatewaylab.DefaultLink.Loss, 'g', -1, 64)+"%", "random loss towards the viewer: a fraction or a percentage")
	arms := fs.String("arms", "gateway,gateway+sidecar,stock", "comma-separated arms: gateway, gateway+sidecar, stock")
	if c, ok := parseFlags(fs, labGatewaySynopsis, args, s); !ok {
		return c
	}
	l := gatewaylab.DefaultLink
	var err error
	if l.Loss, err = ratecalc.ParseLoss(*loss); err != nil {
		fmt.Fprintf(s.err, "fairgrid lab gateway: --loss %q: %v\n", *loss, err)
		return exitUsage
	}
	cfg := gatewaylab.Config{Link: l, Warmup: *warmup, Duration: *duration, Seed: *seed, Controller: controller, Interval: *interval}
	for _, a := range strings.Split(*arms, ",") {
		cfg.Arms = append(cfg.Arms, gatewaylab.Arm(strings.TrimSpace(a)))
	}
	if err := cfg.Validate(); err != nil {
		fmt.Fprintf(s.err, "fairgrid lab gateway: %v\n", err)
		return exitUsage
	}
	ctx, stop := runContext(0, plainNotice(s.err, "fairgrid lab gateway"))
	defer stop()
	log := slog.New(slog.NewTextHandler(s.err, &slog.HandlerOptions{Level: slog.LevelWarn}))
	fmt.Fprintf(s.err, "fairgrid lab gateway: %d arms at once, %v each\n", len(cfg.Arms), *warmup+*duration)
	r, err := gatewaylab.Run(ctx, cfg, log)
	if err != nil && ctx.Err() != nil {
		// Ctrl-C during the warm-up: nothing was measured yet.
		fmt.Fprintf(s.out, "Interrupted during the %v warm-up: nothing measured yet.\n", *warmup)
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(s.err, "fairgrid lab gateway: %v\n", err)
		return exitFail
	}
	if r.Interrupted {
		fmt.Fprintf(s.out, "Interrupted: the arms measured less than the %v asked (seconds column); what they measured:\n\n", *duration)
	}
	w := &resultWriter{w: s.out}
	if *format == "json" {
		gatewaylab.WriteJSON(w, r)
	} else {
		gatewaylab.WriteText(w, r)
	}
	return w.finish(s, "lab gateway", exitOK)
}
