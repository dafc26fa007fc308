package gateway

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"net/netip"
	"time"

	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/opensim"
	"github.com/fairgrid/fairgrid/ratecalc"
	"github.com/fairgrid/fairgrid/throttle"
)

// Route is one region behind the gateway: viewers send to Listen, the
// region's public address (its ExternalHostName and port), and the
// gateway carries their circuits to Region, where OpenSim binds
// (InternalAddress and InternalPort in Regions.ini). Nothing else is ever
// reached.
type Route struct {
	Listen netip.AddrPort
	Region netip.AddrPort
}

// Config configures a gateway. Zero fields take the defaults named.
type Config struct {
	Routes []Route
	// Bind is the local address of the sockets towards the regions, one
	// per viewer circuit (default: the unspecified address of the
	// region's family; the kernel picks the route's source).
	Bind netip.Addr
	// Scheduler is the opensim scheduler the region's datagrams wait in:
	// SceneMax is the gateway's uplink, shared by every viewer of every
	// route; QueueBytes and QueuePackets bound each channel of each
	// viewer.
	Scheduler opensim.Config
	// Control picks the fair-rate controller by name (Controller; default
	// throttle.DefaultController, as for run and proxy), the segment size,
	// the clamps, the decision Interval, MinChange and ResendEvery, as for
	// the sidecar. Its other fields are not used.
	Control throttle.Config
	// MaxViewers bounds the circuits carried at once, pending or not
	// (default 4096); each costs a socket. MaxPending bounds the probes,
	// endpoints whose address is not proven yet (probe.go; default
	// 16384, about 200 bytes each); beyond it the oldest probe makes
	// room once it is PendingHold old, else the newcomer is refused.
	// MaxPerPrefix bounds the circuits, and apart the probes, from one
	// source /24 (IPv4) or /64 (IPv6) (default 1024: a NAT, a class).
	MaxViewers, MaxPending, MaxPerPrefix int
	// UpMax bounds what each circuit's viewer sends the region, in
	// bytes/s, one second's worth deep; a datagram costs at least 100
	// bytes (default 128 KB/s: a viewer sends a few KB/s, tens of KB/s
	// while it uploads).
	UpMax ratecalc.Rate
	// Rand keys the random numbers that prove a viewer's address and
	// start each circuit's numbering (default crypto/rand; a test gives a
	// seeded source).
	Rand io.Reader
	// PendingTimeout drops a probe, and closes a circuit whose viewer has
	// not answered the region, in this long (default 10 s). IdleTimeout closes a circuit
	// whose viewer has sent nothing in this long (default 60 s, OpenSim's
	// AckTimeout). Linger keeps a circuit after its logout or
	// CloseCircuit so the last acks pass (default 2 s).
	PendingTimeout, IdleTimeout, Linger time.Duration
	// RegionTimeout: a region that leaves what the gateway sent it
	// unanswered this long is logged and reported (Health) as not
	// answering (default DefaultRegionTimeout, 10 s).
	RegionTimeout time.Duration
	// IdentifyViewers puts viewers' endpoints and AgentIDs in the metrics
	// and the log; without it a circuit is named by its ordinal alone
	// (issue 34: a scraper aimed spoofed datagrams with them).
	IdentifyViewers bool
	// Tap, if set, sees every datagram on the public side as it passes
	// there: each viewer's as it arrives (before any rewriting), and each
	// to a viewer as it leaves — a capture at the region's public address.
	// The payload is valid only during the call; the tap must not block.
	// The Gateway calls it; Core does not.
	Tap func(d lludp.Datagram)
}

// Defaults (doc.go says why these).
const (
	DefaultMaxViewers     = 4096
	DefaultMaxPending     = 16384
	DefaultUpMax          = 128 << 10
	DefaultMaxPerPrefix   = 1024
	DefaultPendingTimeout = 10 * time.Second
	DefaultIdleTimeout    = 60 * time.Second
	DefaultLinger         = 2 * time.Second
)

// ErrConfig is wrapped by every configuration error.
var ErrConfig = errors.New("invalid gateway configuration")

// WithDefaults fills in the defaults and validates c.
func (c Config) WithDefaults() (Config, error) {
	c.MaxViewers = cmp.Or(c.MaxViewers, DefaultMaxViewers)
	c.MaxPending = cmp.Or(c.MaxPending, DefaultMaxPending)
	c.MaxPerPrefix = cmp.Or(c.MaxPerPrefix, DefaultMaxPerPrefix)
	c.UpMax = cmp.Or(c.UpMax, DefaultUpMax)
	c.PendingTimeout = cmp.Or(c.PendingTimeout, DefaultPendingTimeout)
	c.IdleTimeout = cmp.Or(c.IdleTimeout, DefaultIdleTimeout)
	c.Linger = cmp.Or(c.Linger, DefaultLinger)
	c.RegionTimeout = cmp.Or(c.RegionTimeout, DefaultRegionTimeout)
	c.Control.Controller = cmp.Or(c.Control.Controller, throttle.DefaultController)
	c.Control.Interval = cmp.Or(c.Control.Interval, 5*time.Second)
	c.Control.MinChange = throttle.MinChangeOrDefault(c.Control.MinChange)
	c.Control.ResendEvery = cmp.Or(c.Control.ResendEvery, 3)
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format+": %w", append(a, ErrConfig)...)) }
	if len(c.Routes) == 0 {
		bad("no routes: want at least one listen address and region")
	}
	errs = append(errs, CheckRoutes(c.Routes, localAddrs())...)
	if !(c.UpMax >= minUpCost) || math.IsInf(float64(c.UpMax), 0) {
		bad("up max %v: want at least %d bytes/s", c.UpMax, minUpCost)
	}
	if c.MaxViewers < 1 || c.MaxPending < 1 || c.MaxPerPrefix < 1 {
		bad("max viewers %d, max pending %d, max per prefix %d: want at least 1 each", c.MaxViewers, c.MaxPending, c.MaxPerPrefix)
	}
	if c.PendingTimeout <= 0 || c.IdleTimeout <= 0 || c.Linger <= 0 || c.RegionTimeout <= 0 {
		bad("pending timeout %v, idle timeout %v, linger %v, region timeout %v: want more than 0 each", c.PendingTimeout, c.IdleTimeout, c.Linger, c.RegionTimeout)
	}
	if err := throttle.CheckInterval(c.Control.Interval); err != nil {
		bad("interval %v", err)
	}
	if !(*c.Control.MinChange >= 0 && *c.Control.MinChange < 1) || c.Control.ResendEvery < 1 {
		bad("min change %v, resend every %d", *c.Control.MinChange, c.Control.ResendEvery)
	}
	if _, err := c.Control.NewController(c.Control.Controller); err != nil {
		bad("controller: %v", err)
	}
	if _, err := opensim.New[struct{}](c.Scheduler); err != nil {
		bad("scheduler: %v", err)
	}
	return c, errors.Join(errs...)
}
