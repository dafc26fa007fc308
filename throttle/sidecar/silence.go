package sidecar

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"time"
)

// SilenceWarning is how long the daemon waits for a simulator datagram
// before it says it has seen none: a viewer in a region sends and
// receives several a second, so half a minute of nothing means the
// capture is in the wrong place.
const SilenceWarning = 30 * time.Second

// CensusTime is how long the no-traffic warning listens on every
// interface for a viewer's datagrams: a viewer in a region sends and
// receives several a second.
const CensusTime = 3 * time.Second

// WarnIfSilent waits until after has passed (or ctx ends); if datagrams
// then reports none, it logs once that the interface carries no simulator
// traffic, with the interfaces that do (carrying, if set: it listens on
// every interface that is up) and what to try. It then waits for ctx, as a
// member of the daemon's group must, and returns nil.
func WarnIfSilent(ctx context.Context, after time.Duration, datagrams func() uint64, carrying func(context.Context) []string, iface, ports string, log *slog.Logger) error {
	t := time.NewTimer(after)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return nil
	case <-t.C:
	}
	if datagrams() == 0 {
		viewers, hint := "not looked for", "--interface NAME, or fairgrid proxy (any interface, any OS)"
		if carrying != nil {
			viewers = "none"
			if found := carrying(ctx); len(found) > 0 {
				viewers = strings.Join(found, ",")
				hint = "--interface " + found[0] + " (it carries simulator traffic), or fairgrid proxy (any interface, any OS)"
			}
		}
		log.Warn("no simulator traffic seen on "+iface+" after "+after.String()+
			": is the viewer running, and is its traffic on another interface, or its simulator outside capture.ports?",
			"ports", ports, "viewers_here", viewers, "interfaces_up", strings.Join(UpInterfaces(), ","), "hint", hint)
	}
	<-ctx.Done()
	return nil
}

// UpInterfaces lists the interfaces that are up (none if they cannot be
// listed).
func UpInterfaces() []string {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil
	}
	var names []string
	for _, i := range ifs {
		if i.Flags&net.FlagUp != 0 {
			names = append(names, i.Name)
		}
	}
	return names
}
