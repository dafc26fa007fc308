package region

import (
	"sort"

	"github.com/fairgrid/fairgrid/opensim"
	"github.com/prometheus/client_golang/prometheus"
)

// MaxLabelledClients bounds the per-client series: beyond it, clients are
// summed into the totals only.
const MaxLabelledClients = 100

// Collector exports a region's state to Prometheus. It snapshots the
// region at scrape time, so clients that leave disappear from the output.
// Register it on a registry of your own.
type Collector struct{ s *Server }

// NewCollector returns a collector for s.
func NewCollector(s *Server) *Collector { return &Collector{s: s} }

var (
	descClients  = prometheus.NewDesc("fairgrid_sim_clients", "Clients with an open circuit.", nil, nil)
	descThrottle = prometheus.NewDesc("fairgrid_sim_client_throttle_bytes_per_second", "The total rate the scheduler applies to a client.", []string{"client"}, nil)
	descQueue    = prometheus.NewDesc("fairgrid_sim_client_queue_bytes", "Bytes waiting in a client's channel queue.", []string{"client", "channel"}, nil)
	descResends  = prometheus.NewDesc("fairgrid_sim_client_resends_total", "Reliable packets resent to a client.", []string{"client"}, nil)
	descSent     = prometheus.NewDesc("fairgrid_sim_sent_bytes_total", "Bytes the scheduler let leave.", nil, nil)
	descDropped  = prometheus.NewDesc("fairgrid_sim_dropped_bytes_total", "Bytes dropped by the scheduler: refused at a full queue, or discarded when a client left.", []string{"reason"}, nil)
	descRefused  = prometheus.NewDesc("fairgrid_sim_ignored_datagrams_total", "Datagrams the region ignored, by reason.", []string{"reason"}, nil)
	descLeft     = prometheus.NewDesc("fairgrid_sim_circuits_closed_total", "Circuits closed, by reason.", []string{"reason"}, nil)

	descPending        = prometheus.NewDesc("fairgrid_sim_pending_circuits", "Circuits that have not completed the handshake.", nil, nil)
	descRefusedCircuit = prometheus.NewDesc("fairgrid_sim_refused_circuits_total", "UseCircuitCode from new endpoints refused by admission control, by reason.", []string{"reason"}, nil)
	descPrefixes       = prometheus.NewDesc("fairgrid_sim_limiter_prefixes", "Source prefixes the new-circuit rate limiter tracks.", nil, nil)
	descEvictions      = prometheus.NewDesc("fairgrid_sim_limiter_evictions_total", "Prefixes evicted from the full limiter table before their bucket had refilled.", nil, nil)
	descDatagrams      = prometheus.NewDesc("fairgrid_sim_datagrams_total", "Datagrams the region read from its socket (in) and handed to the kernel (out).", []string{"direction"}, nil)
	descStressMoves    = prometheus.NewDesc("fairgrid_sim_stress_moves_total", "Movements handled in stress mode.", nil, nil)
	descStressEchoes   = prometheus.NewDesc("fairgrid_sim_stress_echoes_total", "Terse updates stress mode sent for those movements, each mover's own included.", nil, nil)
	descOverflow       = prometheus.NewDesc("fairgrid_sim_inbound_overflow_datagrams_total", "Datagrams dropped on arrival because the bytes waiting for the region's loop were at their bound.", nil, nil)
)

func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descClients, descThrottle, descQueue, descResends, descSent, descDropped, descRefused, descLeft,
		descPending, descRefusedCircuit, descPrefixes, descEvictions, descOverflow, descDatagrams, descStressMoves, descStressEchoes} {
		ch <- d
	}
}

func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	clients := c.s.Clients()
	sort.Slice(clients, func(i, j int) bool { return clients[i].Addr.Compare(clients[j].Addr) < 0 })
	ch <- prometheus.MustNewConstMetric(descClients, prometheus.GaugeValue, float64(len(clients)))
	for i, info := range clients {
		if i == MaxLabelledClients {
			break
		}
		id := info.Addr.String()
		ch <- prometheus.MustNewConstMetric(descThrottle, prometheus.GaugeValue, float64(info.Total), id)
		ch <- prometheus.MustNewConstMetric(descResends, prometheus.CounterValue, float64(info.Resends), id)
		for q, bytes := range info.Queued {
			ch <- prometheus.MustNewConstMetric(descQueue, prometheus.GaugeValue, float64(bytes), id, opensim.Channel(q).String())
		}
	}
	st := c.s.SchedulerStats()
	ch <- prometheus.MustNewConstMetric(descSent, prometheus.CounterValue, float64(st.SentBytes))
	ch <- prometheus.MustNewConstMetric(descDropped, prometheus.CounterValue, float64(st.RefusedBytes), "queue_full")
	ch <- prometheus.MustNewConstMetric(descDropped, prometheus.CounterValue, float64(st.DiscardedBytes), "client_left")
	k := c.s.Counters()
	for _, r := range []struct {
		reason string
		n      uint64
	}{{"malformed", k.Malformed}, {"orphan", k.Orphans}, {"bad_circuit_code", k.BadCircuitCodes}, {"bad_ids", k.BadIDs}, {"duplicate", k.Duplicates}} {
		ch <- prometheus.MustNewConstMetric(descRefused, prometheus.CounterValue, float64(r.n), r.reason)
	}
	ch <- prometheus.MustNewConstMetric(descLeft, prometheus.CounterValue, float64(k.TimedOut), "timeout")
	ch <- prometheus.MustNewConstMetric(descLeft, prometheus.CounterValue, float64(k.LoggedOut), "logout")
	ch <- prometheus.MustNewConstMetric(descLeft, prometheus.CounterValue, float64(k.HandshakeTimeouts), "handshake_timeout")
	ch <- prometheus.MustNewConstMetric(descRefusedCircuit, prometheus.CounterValue, float64(k.PendingFull), "pending_full")
	ch <- prometheus.MustNewConstMetric(descRefusedCircuit, prometheus.CounterValue, float64(k.RateLimited), "rate_limited")
	ch <- prometheus.MustNewConstMetric(descEvictions, prometheus.CounterValue, float64(k.LimiterEvictions))
	ch <- prometheus.MustNewConstMetric(descOverflow, prometheus.CounterValue, float64(k.Overflow))
	tr := c.s.Traffic()
	ch <- prometheus.MustNewConstMetric(descDatagrams, prometheus.CounterValue, float64(tr.DatagramsIn), "in")
	ch <- prometheus.MustNewConstMetric(descDatagrams, prometheus.CounterValue, float64(tr.DatagramsOut), "out")
	ch <- prometheus.MustNewConstMetric(descStressMoves, prometheus.CounterValue, float64(tr.StressMoves))
	ch <- prometheus.MustNewConstMetric(descStressEchoes, prometheus.CounterValue, float64(tr.StressEchoes))
	a := c.s.Admission()
	ch <- prometheus.MustNewConstMetric(descPending, prometheus.GaugeValue, float64(a.Pending))
	ch <- prometheus.MustNewConstMetric(descPrefixes, prometheus.GaugeValue, float64(a.Prefixes))
}
