package sidecar

import (
	"cmp"
	"runtime/debug"
	"sort"
	"sync/atomic"

	"github.com/fairgrid/fairgrid/capture"
	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/throttle"
	"github.com/prometheus/client_golang/prometheus"
)

// Collector exports the loop's state to Prometheus, snapshotted at scrape
// time (circuits that are forgotten disappear). Register it on a registry of
// your own. Per-circuit series are limited to MaxCircuits circuits (100 if
// not set), which may change while it is scraped.
type Collector struct {
	Loop *throttle.Loop
	// Version and Commit label fairgrid_build_info, as the binary reports
	// them (cmd stamps them; "devel" and "unknown" when empty).
	Version, Commit string
	Capture         func() capture.Stats // nil: no capture counters
	// Reloads, if set, reports the outcomes of configuration reloads
	// (Sidecar.ReloadStats); nil: no reload counters.
	Reloads     func() ReloadStats
	MaxCircuits atomic.Int64
}

var (
	mRTT      = prometheus.NewDesc("fairgrid_circuit_rtt_seconds", "Ping-based smoothed round-trip time.", []string{"circuit"}, nil)
	mLoss     = prometheus.NewDesc("fairgrid_circuit_loss_event_rate", "Loss event rate of the simulator-to-viewer direction (RFC 5348).", []string{"circuit"}, nil)
	mRecv     = prometheus.NewDesc("fairgrid_circuit_receive_rate_bytes_per_second", "Received rate over the last interval.", []string{"circuit"}, nil)
	mRecvCat  = prometheus.NewDesc("fairgrid_circuit_received_bytes_total", "Bytes received from the simulator, by throttle category.", []string{"circuit", "category"}, nil)
	mTarget   = prometheus.NewDesc("fairgrid_circuit_target_rate_bytes_per_second", "The rate fairgrid decided to request: its controller's rate (control.controller) for the circuit, its part of its viewer's one share, limited by the viewer's own request (control.viewer_limit).", []string{"circuit"}, nil)
	mShare    = prometheus.NewDesc("fairgrid_circuit_share_bytes_per_second", "One share: what one TCP flow of full 1,460-byte segments gets on the circuit's path (ratecalc.TCPShareRate: Padhye's equation with CUBIC's window) at its RTT and loss event rate per segment, as fairgrid rate and the audit reckon it; absent before the first loss event.", []string{"circuit"}, nil)
	mTCPFair  = prometheus.NewDesc("fairgrid_circuit_tfrc_equation_bytes_per_second", "An equation, not one share: TFRC's (RFC 5348 §3.1) at the circuit's loss event rate per datagram, ping round-trip time and mean simulator datagram size (control.segment); absent before the first loss event or RTT sample.", []string{"circuit"}, nil)
	mViewer   = prometheus.NewDesc("fairgrid_circuit_viewer_request_bytes_per_second", "The viewer's own latest AgentThrottle total.", []string{"circuit"}, nil)
	mReqs     = prometheus.NewDesc("fairgrid_circuit_requests_sent_total", "AgentThrottle requests sent for the circuit.", []string{"circuit"}, nil)
	mCircuits = prometheus.NewDesc("fairgrid_circuits", "Circuits being measured.", nil, nil)
	mReqTotal = prometheus.NewDesc("fairgrid_throttle_requests_sent_total", "AgentThrottle requests sent, re-assertions included.", nil, nil)
	mReassert = prometheus.NewDesc("fairgrid_throttle_reassertions_total", "Requests sent again because the viewer overrode them.", nil, nil)
	mEvicted  = prometheus.NewDesc("fairgrid_circuits_evicted_total", "Circuits dropped to stay within capture.max_circuits.", nil, nil)
	mFolded   = prometheus.NewDesc("fairgrid_endpoints_folded_total", "Endpoints dropped before they held a conversation with a simulator (spoofed sources, scans).", nil, nil)
	mCaptured = prometheus.NewDesc("fairgrid_packets_captured_total", "UDP datagrams captured on the simulator ports.", nil, nil)
	mDrops    = prometheus.NewDesc("fairgrid_capture_drops_total", "Datagrams the kernel dropped because the capture fell behind.", nil, nil)
	mDecode   = prometheus.NewDesc("fairgrid_decode_errors_total", "Datagrams on simulator ports that were not LLUDP, by reason.", []string{"reason"}, nil)
	mReloads  = prometheus.NewDesc("fairgrid_config_reloads_total", "Configuration reloads (SIGHUP), by result: applied, or rejected with the running configuration kept.", []string{"result"}, nil)
	mBuild    = prometheus.NewDesc("fairgrid_build_info", "Build information: the version and commit fairgrid version prints.", []string{"version", "commit", "goversion"}, nil)
)

func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{mRTT, mLoss, mRecv, mRecvCat, mTarget, mShare, mTCPFair, mViewer, mReqs, mCircuits, mReqTotal, mReassert, mEvicted, mFolded, mCaptured, mDrops, mDecode, mReloads, mBuild} {
		ch <- d
	}
}

func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	states := c.Loop.Snapshot()
	sort.Slice(states, func(i, j int) bool { return states[i].Key.String() < states[j].Key.String() })
	gauge(mCircuits, float64(len(states)))
	limit := int(c.MaxCircuits.Load())
	if limit <= 0 {
		limit = 100
	}
	segment := c.Loop.Config().Segment
	for i, s := range states {
		if i == limit {
			break
		}
		id := s.Key.String()
		if s.Summary.RTTms != nil {
			gauge(mRTT, *s.Summary.RTTms/1000, id)
		}
		gauge(mLoss, s.Summary.Down.LossEventRate, id)
		gauge(mRecv, float64(s.Control.ReceiveRate), id)
		for cat := range lludp.Category(lludp.NumCategories) {
			counter(mRecvCat, float64(s.Summary.ByCategory[cat.String()]), id, cat.String())
		}
		counter(mRecvCat, float64(s.Summary.ByCategory[lludp.Unthrottled.String()]), id, lludp.Unthrottled.String())
		gauge(mTarget, float64(s.Target), id)
		if share := throttle.OneShare(s.Control); share > 0 {
			gauge(mShare, float64(share), id)
		}
		if fair, ok := throttle.TCPFairRate(s.Summary, segment); ok {
			gauge(mTCPFair, float64(fair), id)
		}
		if s.Summary.ViewerThrottleBPS != nil {
			gauge(mViewer, *s.Summary.ViewerThrottleBPS/8, id)
		}
		counter(mReqs, float64(s.Requests), id)
	}
	st := c.Loop.Stats()
	counter(mReqTotal, float64(st.Requests))
	counter(mReassert, float64(st.Reasserts))
	counter(mEvicted, float64(st.Evicted))
	counter(mFolded, float64(st.Folded))
	if c.Capture != nil {
		cs := c.Capture()
		counter(mCaptured, float64(cs.Datagrams))
		counter(mDrops, float64(cs.KernelDrops))
	}
	for reason, n := range c.Loop.Invalid() {
		counter(mDecode, float64(n), reason)
	}
	if c.Reloads != nil {
		collectReloads(ch, c.Reloads())
	}
	gauge(mBuild, 1, cmp.Or(c.Version, "devel"), cmp.Or(c.Commit, "unknown"), runtimeVersion())
}

// ReloadCollector exports stats (Reloads.Stats) as
// fairgrid_config_reloads_total{result}, the series Collector exports
// with its Reloads, for a front-end whose other metrics are not a
// Collector's (the gateway).
func ReloadCollector(stats func() ReloadStats) prometheus.Collector {
	return reloadCollector(stats)
}

type reloadCollector func() ReloadStats

func (reloadCollector) Describe(ch chan<- *prometheus.Desc)   { ch <- mReloads }
func (f reloadCollector) Collect(ch chan<- prometheus.Metric) { collectReloads(ch, f()) }

func collectReloads(ch chan<- prometheus.Metric, r ReloadStats) {
	ch <- prometheus.MustNewConstMetric(mReloads, prometheus.CounterValue, float64(r.Applied), "applied")
	ch <- prometheus.MustNewConstMetric(mReloads, prometheus.CounterValue, float64(r.Rejected), "rejected")
}

func runtimeVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		return bi.GoVersion
	}
	return "unknown"
}
