package fairness

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/throttle"
)

func TestExplore(t *testing.T) {
	spec := os.Getenv("FX")
	if spec == "" {
		t.Skip("FX unset")
	}
	dur, _ := time.ParseDuration(os.Getenv("FXDUR"))
	if dur == 0 {
		dur = 40 * time.Second
	}
	var wg sync.WaitGroup
	for _, c := range strings.Split(spec, ";") {
		f := strings.Split(c, ",")
		// ctl,tcp,flows,buf,loss,rtt,linkMbps,seed
		flows, _ := strconv.Atoi(f[2])
		buf, _ := strconv.Atoi(f[3])
		loss, _ := strconv.ParseFloat(f[4], 64)
		rtt, _ := strconv.ParseFloat(f[5], 64)
		lk, _ := strconv.ParseFloat(f[6], 64)
		seed, _ := strconv.ParseUint(f[7], 10, 64)
		cell := Cell{Controller: throttle.ControllerName(f[0]), TCP: f[1], Flows: flows, Buffer: buf, Loss: loss, RTTms: rtt, LinkBPS: lk * 1e6}
		wg.Go(func() {
			warm, _ := time.ParseDuration(os.Getenv("FXWARM"))
			if warm == 0 {
				warm = 20 * time.Second
			}
			r, err := Run(context.Background(), cell, Options{Warmup: warm, Duration: dur, Seed: seed})
			if err != nil {
				t.Error(err)
				return
			}
			t.Logf("%v seed %d: viewer %.0f tcp %.0f ratio %.3f audit %.2f  vp %.5f tcpPeq %.6f vev/s %.2f seg %.0f q %.0fms req %v", cell, seed, r.MeanViewer()/1000, r.MeanTCP()/1000, r.MeanViewer()/r.MeanTCP(), r.AuditTCPBPS/r.MeanTCP(), r.ViewerP, r.TCPPEquiv(), r.ViewerLossEventsPerSec, r.ViewerSegment, r.TCPQueueMs, fmtK(r.Requests))
		})
	}
	wg.Wait()
}

func fmtK(xs []float64) string {
	var b strings.Builder
	for _, x := range xs {
		b.WriteString(strconv.Itoa(int(x / 1000)))
		b.WriteByte(' ')
	}
	return b.String()
}
