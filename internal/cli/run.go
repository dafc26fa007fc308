package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// RunContext ends on SIGINT or SIGTERM, or after d when d > 0. The first
// signal asks the front-end to stop as it documents (a partial verdict, a
// drain), and notice says so, given the signal's name ("Ctrl-C" or
// "SIGTERM"); from then on the signals have their default action, so a
// second one ends the program at once, killed by it as if never caught: a
// shell shows status 130 for SIGINT (128 + 2), 143 for SIGTERM, and a
// script running it stops too.
func RunContext(d time.Duration, notice func(signal string)) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case sig := <-signals:
			signal.Stop(signals) // before the notice: a second signal after it kills
			notice(signalName(sig))
			cancel()
		case <-ctx.Done():
			signal.Stop(signals)
		}
	}()
	if d <= 0 {
		return ctx, cancel
	}
	timed, cancelTimed := context.WithTimeout(ctx, d)
	return timed, func() { cancelTimed(); cancel() }
}

// PlainNotice is RunContext's notice for a front-end whose stderr is
// lines for people: "NAME: Ctrl-C: stopping; Ctrl-C again quits at once".
func PlainNotice(w io.Writer, name string) func(string) {
	return func(sig string) { fmt.Fprintf(w, "%s: %s: stopping; %s again quits at once\n", name, sig, sig) }
}

// LogNotice is RunContext's notice for a front-end that logs (text or
// JSON lines, which a plain line would break).
func LogNotice(log *slog.Logger) func(string) {
	return func(sig string) { log.Info("stopping; the same signal again quits at once", "signal", sig) }
}

// signalName names a stopping signal as the user sent it.
func signalName(sig os.Signal) string {
	if sig == os.Interrupt {
		return "Ctrl-C"
	}
	return "SIGTERM"
}

// MetricsListener opens a front-end's metrics address, named by its flag
// and its key. A port in use is the common mistake (two front-ends, or
// two copies of one): the error says which flag or key moves it.
func MetricsListener(addr, key string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err == nil {
		return ln, nil
	}
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, fmt.Errorf("metrics on %s (%s): the address is in use, perhaps by another fairgrid; choose another with --metrics ADDR (or --metrics \"\" for none)", addr, key)
	}
	return nil, fmt.Errorf("metrics on %s (%s): %w", addr, key, err)
}
