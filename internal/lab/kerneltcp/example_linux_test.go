//go:build linux

package kerneltcp_test

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/fairgrid/fairgrid/internal/lab/kerneltcp"
	"github.com/fairgrid/fairgrid/internal/lab/link"
)

// A scenario's wiring: one bottleneck shared by the lab's kernel flows
// (and, through link.Config.Shared, a viewer's relay), a bulk BBR
// download for ten seconds after two of warm-up, and the figures a report
// wants. It runs as root only, so it has no Output to check.
func Example() {
	ctx := context.Background()
	log := slog.Default()
	if err := kerneltcp.Supported(); err != nil {
		fmt.Println(err)
		return
	}
	// Real-time priority keeps a busy machine from bunching packets.
	if err := kerneltcp.SetRealtime(10); err != nil {
		log.Warn("flows will depend on the machine's load", "err", err)
	}
	down := link.PipeConfig{Rate: 6_000_000 / 8, Delay: 80 * time.Millisecond, Buffer: 200}
	up := link.PipeConfig{Rate: 512_000 / 8, Delay: 80 * time.Millisecond, Buffer: 200}
	bn, err := link.NewBottleneck(link.BottleneckConfig{Up: up, Down: down, Seed: 1}, log)
	if err != nil {
		fmt.Println(err)
		return
	}
	lab, err := kerneltcp.New(ctx, kerneltcp.Config{Bottleneck: bn}, log)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer lab.Close()
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	go bn.Run(ctx)
	go lab.Run(ctx)

	res, err := lab.Flow(ctx, kerneltcp.FlowConfig{Name: "bbr download", Congestion: "bbr", Download: true, Warmup: 2 * time.Second, Duration: 10 * time.Second})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s: %.0f kbit/s, queueing delay p95 %v, %d dropped\n",
		res.Config.Name, res.Goodput*8/1000, res.Data.QueueDelay.Quantile(0.95), res.Data.Dropped())
}
