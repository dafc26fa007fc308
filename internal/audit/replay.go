package audit

import (
	"time"

	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/ratecalc"
	"github.com/fairgrid/fairgrid/throttle"
	"github.com/fairgrid/fairgrid/throttle/circuit"
)

// replayed are the controllers replayed, in the order of
// replayController.ctls (the default first), and replaySources their
// Request.Source.
var (
	replayed      = [...]throttle.ControllerName{throttle.VirtualTCP, throttle.Window, throttle.TFRC, throttle.ViewerRule}
	replaySources = [len(replayed)]string{SourceReplayVTCP, SourceReplayWindow, SourceReplayTFRC, SourceReplayStock}
)

// replayController hands the tracker's measurements of a circuit's down
// direction to every controller fairgrid can run, so that one pass over
// the capture replays them all, fed exactly as the live loop's tracker
// feeds its one controller.
type replayController struct {
	ctls [len(replayed)]ratecalc.Controller
}

var _ ratecalc.Controller = (*replayController)(nil)

// newReplay builds each controller as the loop configured by loop builds
// its one (throttle.Config.NewController): its clamps, segment size and
// viewer setting.
func newReplay(loop throttle.Config) (*replayController, error) {
	r := &replayController{}
	for i, name := range replayed {
		c, err := loop.NewController(name)
		if err != nil {
			return nil, err
		}
		r.ctls[i] = c
	}
	return r, nil
}

func (r *replayController) OnPacket(p ratecalc.Packet) {
	for _, c := range r.ctls {
		c.OnPacket(p)
	}
}

func (r *replayController) OnRTT(sample time.Duration, at time.Time) {
	for _, c := range r.ctls {
		c.OnRTT(sample, at)
	}
}

// Rate and Stats are the first controller's, the loop's default
// (throttle.DefaultController); the auditor asks each controller itself.
func (r *replayController) Rate(now time.Time) ratecalc.Rate { return r.ctls[0].Rate(now) }
func (r *replayController) Stats() ratecalc.Stats            { return r.ctls[0].Stats() }

// tick makes the decisions due up to at: every loop Interval of capture
// time, each live circuit's controllers are asked for their rate, clamped
// as throttle.Loop.Tick clamps it (throttle.Config.Clamp). A capture's gap longer than the loop's
// idle timeout is skipped: the loop would have forgotten every circuit.
func (a *Auditor) tick(at int64) {
	if !a.cfg.Series {
		a.nextTick = at + int64(a.loop.Interval) // nothing replayed, nothing due
		return
	}
	interval := int64(a.loop.Interval)
	if gap := at - a.nextTick; gap > int64(a.loop.IdleTimeout)+interval {
		a.nextTick += (gap / interval) * interval
	}
	for ; a.nextTick <= at; a.nextTick += interval {
		now := time.Unix(0, a.nextTick)
		idle := now.Add(-a.loop.IdleTimeout)
		for _, cs := range a.order {
			if cs.replay == nil || cs.c.Last().Before(idle) {
				continue
			}
			down := &cs.dirs[circuit.Down]
			for i, ctl := range cs.replay.ctls {
				target := a.loop.Clamp(ctl.Rate(now))
				a.replayed[i] = true
				split := throttle.ViewerSplit(target)
				var cats [lludp.NumCategories]float64
				for k, v := range split {
					cats[k] = float64(v)
				}
				total := target.BitsPerSecond()
				a.requests = append(a.requests, Request{Circuit: cs.name, UnixMs: now.UnixMilli(), Source: replaySources[i],
					TotalBitPerS: total, CategoryBitPerS: cats, ReceivedBitPerS: down.lastRate, FairBitPerS: down.lastFair,
					RequestedOverFair: ratio(total, down.lastFair)})
			}
		}
	}
}
