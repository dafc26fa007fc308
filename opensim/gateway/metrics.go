package gateway

import (
	"sort"
	"strconv"

	"github.com/fairgrid/fairgrid/opensim"
	"github.com/prometheus/client_golang/prometheus"
)

// DefaultMaxLabelled bounds the per-circuit series unless NewCollector is
// told otherwise: beyond it, circuits count in the totals only.
const DefaultMaxLabelled = 100

// Collector exports a gateway's state to Prometheus. It snapshots the
// gateway at scrape time, so circuits that close disappear from the
// output. Register it on a registry of your own.
type Collector struct {
	g          *Gateway
	maxLabeled int
}

// NewCollector returns a collector for g that labels at most maxLabelled
// circuits (0: DefaultMaxLabelled), those of the lowest addresses.
func NewCollector(g *Gateway, maxLabelled int) *Collector {
	if maxLabelled <= 0 {
		maxLabelled = DefaultMaxLabelled
	}
	return &Collector{g: g, maxLabeled: maxLabelled}
}

var (
	circuitLabels = []string{"route", "viewer"}
	channelLabels = []string{"route", "viewer", "channel"}

	descViewers  = prometheus.NewDesc("fairgrid_gateway_circuits", "Viewer circuits through the gateway, by state.", []string{"state"}, nil)
	descDrops    = prometheus.NewDesc("fairgrid_gateway_datagrams_total", "Datagrams by what became of them: passed (from viewers), or why they were dropped.", []string{"outcome"}, nil)
	descEvicted  = prometheus.NewDesc("fairgrid_gateway_pending_evicted_total", "Probes (unproven endpoints) evicted to make room for new ones, each at least 1 s old.", nil, nil)
	descExpired  = prometheus.NewDesc("fairgrid_gateway_circuits_closed_total", "Circuits closed by a timeout or after logout.", nil, nil)
	descAsserts  = prometheus.NewDesc("fairgrid_gateway_throttle_asserts_total", "AgentThrottles the gateway sent the regions.", nil, nil)
	descRewrites = prometheus.NewDesc("fairgrid_gateway_throttle_rewrites_total", "Viewers' AgentThrottles rewritten in flight.", nil, nil)
	descInbound  = prometheus.NewDesc("fairgrid_gateway_inbound_dropped_total", "Datagrams dropped on arrival because the gateway's loop was behind.", nil, nil)
	descSendErrs = prometheus.NewDesc("fairgrid_gateway_send_errors_total", "Datagrams the kernel refused to send.", nil, nil)
	descProbes   = prometheus.NewDesc("fairgrid_gateway_probes_sent_total", "Probes sent to endpoints whose address is not proven yet (each within 3x the bytes the endpoint sent).", nil, nil)
	descOpened   = prometheus.NewDesc("fairgrid_gateway_circuits_opened_total", "Circuits opened once the viewer's address was proven.", nil, nil)
	descRegionUp = prometheus.NewDesc("fairgrid_gateway_region_answers", "1 if the route's region answers what the gateway sends it (0: nothing back for 10 s).", []string{"route"}, nil)
	descSent     = prometheus.NewDesc("fairgrid_gateway_scheduled_bytes_total", "Bytes the scheduler let leave for viewers.", nil, nil)

	descInfo     = prometheus.NewDesc("fairgrid_gateway_circuit_info", "A viewer circuit: the endpoint the region sees for the viewer (local) and its agent, for matching OpenSim's logs to viewers; empty unless the operator asked (gateway.metrics_identify_viewers), the viewer label then the circuit's ordinal.", []string{"route", "viewer", "local", "agent"}, nil)
	descAsked    = prometheus.NewDesc("fairgrid_gateway_circuit_asked_rate_bytes_per_second", "The viewer's own AgentThrottle total (0: none seen).", circuitLabels, nil)
	descFair     = prometheus.NewDesc("fairgrid_gateway_circuit_fair_rate_bytes_per_second", "The controller's TCP-fair rate (0: not decided yet).", circuitLabels, nil)
	descRate     = prometheus.NewDesc("fairgrid_gateway_circuit_rate_bytes_per_second", "The rate in force: the lesser of asked and fair.", circuitLabels, nil)
	descReceived = prometheus.NewDesc("fairgrid_gateway_circuit_received_rate_bytes_per_second", "The viewer's receive rate over the latest decision interval, as the gateway estimates it.", circuitLabels, nil)
	descLoss     = prometheus.NewDesc("fairgrid_gateway_circuit_loss_event_rate", "Loss event rate, from the viewer's acks.", circuitLabels, nil)
	descRTT      = prometheus.NewDesc("fairgrid_gateway_circuit_rtt_seconds", "Round-trip time from the region's pings (absent before the first).", circuitLabels, nil)
	descDelay    = prometheus.NewDesc("fairgrid_gateway_circuit_queue_delay_seconds", "Mean queueing delay in the gateway's scheduler.", channelLabels, nil)
	descQueueMax = prometheus.NewDesc("fairgrid_gateway_circuit_queue_delay_max_seconds", "Largest queueing delay in the gateway's scheduler.", channelLabels, nil)
	descQueued   = prometheus.NewDesc("fairgrid_gateway_circuit_queue_bytes", "Bytes waiting in the gateway's scheduler.", channelLabels, nil)
	descChDrops  = prometheus.NewDesc("fairgrid_gateway_circuit_queue_dropped_total", "Datagrams dropped at a full queue (tail drop).", channelLabels, nil)
	descChSent   = prometheus.NewDesc("fairgrid_gateway_circuit_sent_bytes_total", "Bytes sent to the viewer.", channelLabels, nil)
)

func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descViewers, descDrops, descEvicted, descExpired, descAsserts, descRewrites, descInbound, descSendErrs, descSent, descProbes, descOpened, descRegionUp,
		descInfo, descAsked, descFair, descRate, descReceived, descLoss, descRTT, descDelay, descQueueMax, descQueued, descChDrops, descChSent} {
		ch <- d
	}
}

func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	k := c.g.Counters()
	gauge(descViewers, float64(k.Viewers-k.Pending), "established")
	gauge(descViewers, float64(k.Pending), "pending")
	gauge(descViewers, float64(k.Probes), "probing")
	counter(descProbes, k.ProbesSent)
	counter(descOpened, k.Opened)
	for _, h := range c.g.Health() {
		up := 0.0
		if h.Answers {
			up = 1
		}
		gauge(descRegionUp, up, strconv.Itoa(h.Route))
	}
	for d := range numDrops {
		counter(descDrops, k.Drops[d], d.String())
	}
	counter(descEvicted, k.Evicted)
	counter(descExpired, k.Expired)
	counter(descAsserts, k.Asserts)
	counter(descRewrites, k.Rewrites)
	counter(descInbound, k.InboundDropped)
	counter(descSendErrs, k.SendErrors)
	counter(descSent, k.Scheduler.SentBytes)
	circuits := c.g.Circuits()
	sort.Slice(circuits, func(i, j int) bool {
		if circuits[i].Route != circuits[j].Route {
			return circuits[i].Route < circuits[j].Route
		}
		if !c.g.identify {
			return circuits[i].ID < circuits[j].ID
		}
		return circuits[i].Viewer.Compare(circuits[j].Viewer) < 0
	})
	for i, s := range circuits {
		if i == c.maxLabeled {
			break
		}
		l := []string{strconv.Itoa(s.Route), s.Viewer.String()}
		local, agent := s.Local.String(), s.AgentID
		if !c.g.identify {
			// Who the viewers are is the operator's to ask for: a scraper
			// aimed spoofed datagrams at the endpoints listed (issue 34).
			l[1], local, agent = "c"+strconv.FormatUint(s.ID, 10), "", ""
		}
		gauge(descInfo, 1, l[0], l[1], local, agent)
		gauge(descAsked, float64(s.Asked), l...)
		gauge(descFair, float64(s.Fair), l...)
		gauge(descRate, float64(s.Rate), l...)
		gauge(descReceived, float64(s.Controller.ReceiveRate), l...)
		gauge(descLoss, s.Controller.LossEventRate, l...)
		if s.RTT > 0 {
			gauge(descRTT, s.RTT.Seconds(), l...)
		}
		for chn := range opensim.Channel(opensim.NumChannels) {
			cl := append(l[:2:2], chn.String())
			gauge(descDelay, s.DelayMean[chn].Seconds(), cl...)
			gauge(descQueueMax, s.Delay[chn].Seconds(), cl...)
			gauge(descQueued, float64(s.Queued[chn]), cl...)
			counter(descChDrops, s.Refused[chn], cl...)
			counter(descChSent, s.Sent[chn], cl...)
		}
	}
}
