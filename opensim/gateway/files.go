package gateway

import "fmt"

// fdReserve is the descriptors the gateway needs beside one socket per
// circuit: the public sockets are counted apart; this is the metrics'
// listener and its connections, the log, the runtime's own.
const fdReserve = 64

// fileLimit is the process's RLIMIT_NOFILE: a test gives its own.
type fileLimit interface {
	get() (soft, hard uint64, err error)
	set(soft uint64) error
}

// fitFiles checks that MaxViewers circuits fit the descriptors the
// process may open (issue 34: under ulimit -n 300, 600 spoofed circuits
// exhausted them and the metrics stopped answering). The soft limit is
// raised to the hard one when short; if that is still short, MaxViewers
// is lowered to what fits, with a log line, and a limit that fits no
// circuit at all is an error. Where the platform has no such limit
// (Windows), nothing is checked.
func (g *Gateway) fitFiles(lim fileLimit) error {
	soft, hard, err := lim.get()
	if err != nil {
		return nil // no limit to read: nothing to fit
	}
	cfg := &g.core.cfg
	need := uint64(cfg.MaxViewers + len(cfg.Routes) + fdReserve)
	if soft >= need {
		return nil
	}
	if hard > soft {
		raised := min(hard, need)
		if err := lim.set(raised); err == nil {
			g.log.Info("gateway: raised the open-file limit for max_viewers", "from", soft, "to", raised, "max_viewers", cfg.MaxViewers)
			soft = raised
		}
	}
	if soft >= need {
		return nil
	}
	fits := int(soft) - len(cfg.Routes) - fdReserve
	if fits < 1 {
		return fmt.Errorf("gateway: open-file limit %d (hard %d) leaves no room for a circuit: %d routes and %d reserved: %w", soft, hard, len(cfg.Routes), fdReserve, ErrConfig)
	}
	g.log.Warn("gateway: open-file limit below max_viewers: max_viewers lowered to fit (raise ulimit -n or LimitNOFILE)",
		"limit", soft, "hard", hard, "max_viewers", cfg.MaxViewers, "lowered_to", fits)
	cfg.MaxViewers = fits
	g.core.viewerCap = fits
	return nil
}
