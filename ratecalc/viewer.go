package ratecalc

import (
	"cmp"
	"fmt"
	"time"
)

// The stock viewer's dynamic throttle (viewer llviewerthrottle.cpp
// updateDynamicThrottle; protocol.md §7.4, congestion.md §7).
const (
	viewerTightenLoss  = 0.03  // TIGHTEN_THROTTLE_THRESHOLD: above 3 % loss, step down
	viewerEaseLoss     = 0.005 // EASE_THROTTLE_THRESHOLD: at or below 0.5 %, step up
	viewerStep         = 0.1   // STEP_FRACTIONAL, of the setting
	viewerMinFraction  = 0.2   // MIN_FRACTIONAL
	viewerMaxFraction  = 1.5   // MAX_FRACTIONAL
	viewerInitFraction = 1.5   // reset to MAX_FRACTIONAL on (re)load
	// ViewerDefaultSetting is the bandwidth preference of the classic
	// viewer whose request is 1,500 "kbps": 1000 × 1024 bit/s, requested
	// at 1.5×. Today's viewers default to 3000.
	ViewerDefaultSetting = Rate(1000 * 1024 / 8)
)

// ViewerConfig configures the viewer baseline.
type ViewerConfig struct {
	Config
	// Setting is the viewer's bandwidth preference. Default
	// ViewerDefaultSetting.
	Setting Rate
}

// Viewer is the stock Second Life viewer's rule, as a baseline to compare
// against: at each request (every 5 s), if more than 3 % of the interval's
// packets were lost the fraction drops by 0.1 of the setting, if at most
// 0.5 % it rises by 0.1, within 0.2–1.5 of the setting; the request is the
// setting times the fraction. It never looks at RTT, and its steps are
// additive in both directions. An interval without packets holds.
type Viewer struct {
	flow
	setting  Rate
	fraction float64
	rate     Rate
}

var _ Controller = (*Viewer)(nil)

// NewViewer validates cfg and returns the viewer baseline.
func NewViewer(cfg ViewerConfig) (*Viewer, error) {
	c, err := cfg.withDefaults()
	cfg.Setting = cmp.Or(cfg.Setting, ViewerDefaultSetting)
	if err == nil && !(cfg.Setting > 0 && cfg.Setting < 1e12) {
		err = fmt.Errorf("viewer setting %v: %w", cfg.Setting, ErrConfig)
	}
	if err != nil {
		return nil, err
	}
	return &Viewer{flow: newFlow(c), setting: cfg.Setting, fraction: viewerInitFraction}, nil
}

func (v *Viewer) OnPacket(p Packet)                        { v.observe(p) }
func (v *Viewer) OnRTT(sample time.Duration, at time.Time) { v.onRTT(sample, at) }

func (v *Viewer) Rate(now time.Time) Rate {
	lost, total := v.intervalLost, v.intervalLost+v.intervalRecv
	v.closeInterval(now)
	if total > 0 {
		switch loss := float64(lost) / float64(total); {
		case loss > viewerTightenLoss:
			v.fraction = max(v.fraction-viewerStep, viewerMinFraction)
		case loss <= viewerEaseLoss:
			v.fraction = min(v.fraction+viewerStep, viewerMaxFraction)
		}
	}
	v.rate = v.clamp(Rate(float64(v.setting) * v.fraction))
	return v.rate
}

func (v *Viewer) Stats() Stats {
	st := v.stats()
	st.Rate = v.rate
	return st
}
