package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// runContext ends on SIGINT or SIGTERM, or after d when d > 0.
func runContext(d time.Duration) (context.Context, context.CancelFunc) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	if d <= 0 {
		return ctx, stop
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	return ctx, func() { cancel(); stop() }
}

// metricsListener opens a front-end's metrics address, named by its flag
// and its key. A port in use is the common mistake (two front-ends, or
// two copies of one): the error says which flag or key moves it.
func metricsListener(addr, key string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err == nil {
		return ln, nil
	}
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, fmt.Errorf("metrics on %s (%s): the address is in use, perhaps by another fairgrid; choose another with --metrics ADDR (or --metrics \"\" for none)", addr, key)
	}
	return nil, fmt.Errorf("metrics on %s (%s): %w", addr, key, err)
}
