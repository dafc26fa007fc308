package viewer

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// regionSample is one reading of the region's counters, from its
// Prometheus metrics (fairgrid sim --metrics).
type regionSample struct {
	in, out       float64 // datagrams
	moves, echoes float64
	cpu           float64 // seconds, process_cpu_seconds_total
}

func (a regionSample) minus(b regionSample) regionSample {
	return regionSample{in: a.in - b.in, out: a.out - b.out, moves: a.moves - b.moves, echoes: a.echoes - b.echoes, cpu: a.cpu - b.cpu}
}

// scrapeTimeout bounds one reading: the region answers from memory.
const scrapeTimeout = 5 * time.Second

// scrapeRegion reads the region's counters from its metrics endpoint.
func scrapeRegion(ctx context.Context, url string) (regionSample, error) {
	ctx, cancel := context.WithTimeout(ctx, scrapeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return regionSample{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return regionSample{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return regionSample{}, fmt.Errorf("%s: %s", url, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return regionSample{}, fmt.Errorf("%s: %w", url, err)
	}
	var s regionSample
	var missing []string
	value := func(name string, label ...string) float64 {
		for _, m := range families[name].GetMetric() {
			labelled := len(label) == 0
			for _, l := range m.GetLabel() {
				labelled = labelled || l.GetName() == label[0] && l.GetValue() == label[1]
			}
			switch {
			case !labelled:
			case m.Counter != nil:
				return m.GetCounter().GetValue()
			case m.Gauge != nil:
				return m.GetGauge().GetValue()
			case m.Untyped != nil:
				return m.GetUntyped().GetValue()
			}
		}
		missing = append(missing, name)
		return 0
	}
	s.in = value("fairgrid_sim_datagrams_total", "direction", "in")
	s.out = value("fairgrid_sim_datagrams_total", "direction", "out")
	s.moves = value("fairgrid_sim_stress_moves_total")
	s.echoes = value("fairgrid_sim_stress_echoes_total")
	s.cpu = value("process_cpu_seconds_total")
	if len(missing) > 0 {
		return regionSample{}, fmt.Errorf("%s: no %v (is it fairgrid sim --metrics?)", url, missing)
	}
	return s, nil
}
