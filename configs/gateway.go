package configs

import (
	"errors"
	"fmt"
	"slices"

	"github.com/fairgrid/fairgrid/opensim/gateway"
)

// GatewayStart is the gateway's configuration as it starts, from f with
// the route listen=region (--listen and --region) added when they are
// given, which go together. A route is needed, and the gateway's metrics
// are served off loopback only when gateway.metrics_public says so.
func (f *File) GatewayStart(listen, region string) (gateway.Config, error) {
	switch {
	case listen != "" && region != "":
		var r Route
		if err := r.UnmarshalText([]byte(listen + "=" + region)); err != nil {
			return gateway.Config{}, fmt.Errorf("--listen and --region (gateway.routes): %w", err)
		}
		f.Gateway.Routes = append(f.Gateway.Routes, r)
		if err := f.Validate(); err != nil {
			return gateway.Config{}, err
		}
	case listen != "" || region != "":
		return gateway.Config{}, errors.New("--listen and --region go together")
	}
	if len(f.Gateway.Routes) == 0 {
		return gateway.Config{}, errors.New("no region: give --listen PUBLIC:PORT --region INTERNAL:PORT, or gateway.routes")
	}
	if a := f.Metrics.GatewayAddress; !a.IsZero() && !a.Loopback() && !f.Gateway.MetricsPublic {
		// The metrics show each circuit's rates and, when asked, who the
		// viewers are: a scraper aimed spoofed datagrams with them (issue
		// 34). Off loopback only when the operator says so.
		return gateway.Config{}, fmt.Errorf("metrics.gateway_address %v is off loopback: set gateway.metrics_public = true to serve the gateway's metrics there", a)
	}
	cfg := f.GatewayConfig()
	if _, err := cfg.WithDefaults(); err != nil {
		return gateway.Config{}, err
	}
	return cfg, nil
}

// gatewayStartKeys are the keys the gateway reads once, at start, beside
// those gateway.Reconfigure names: its log's format, its metrics listener,
// whether that may be off loopback, and its collector's circuit limit.
var gatewayStartKeys = []string{"log.format", "metrics.gateway_address", "metrics.max_circuits", "gateway.metrics_public"}

// GatewayRestart names the keys the gateway reads only at start, beside
// those gateway.Reconfigure names, that differ between start, the
// configuration it started with, and f.
func GatewayRestart(start, f *File) []string {
	var restart []string
	for _, key := range Changed(start, f) {
		if slices.Contains(gatewayStartKeys, key) {
			restart = append(restart, key)
		}
	}
	return restart
}
