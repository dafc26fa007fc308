package main

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"time"
)

// silenceWarning is how long the daemon waits for a simulator datagram
// before it says it has seen none: a viewer in a region sends and
// receives several a second, so half a minute of nothing means the
// capture is in the wrong place.
const silenceWarning = 30 * time.Second

// warnIfSilent waits until after has passed (or ctx ends); if datagrams
// then reports none, it logs once that the interface carries no simulator
// traffic, with the interfaces that are up and what to try. It then waits
// for ctx, as a member of the daemon's group must, and returns nil.
func warnIfSilent(ctx context.Context, after time.Duration, datagrams func() uint64, iface, ports string, log *slog.Logger) error {
	t := time.NewTimer(after)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return nil
	case <-t.C:
	}
	if datagrams() == 0 {
		log.Warn("no simulator traffic seen on "+iface+" after "+after.String()+
			": is the viewer running, and is its traffic on another interface, or its simulator outside capture.ports?",
			"ports", ports, "interfaces_up", upInterfaces(), "hint", "--interface NAME, or fairgrid proxy (any interface, any OS)")
	}
	<-ctx.Done()
	return nil
}

// upInterfaces lists the interfaces that are up, comma-separated.
func upInterfaces() string {
	ifs, err := net.Interfaces()
	if err != nil {
		return "unknown: " + err.Error()
	}
	var names []string
	for _, i := range ifs {
		if i.Flags&net.FlagUp != 0 {
			names = append(names, i.Name)
		}
	}
	return strings.Join(names, ",")
}
