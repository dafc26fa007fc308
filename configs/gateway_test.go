package configs

import (
	"reflect"
	"strings"
	"testing"
)

// TestGatewayKeys: each [gateway] key, set away from its default, changes
// the gateway's configuration (and nothing but the field it names).
func TestGatewayKeys(t *testing.T) {
	base := Default().GatewayConfig()
	for _, tc := range []struct {
		key, toml, field string
	}{
		{"routes", `routes = ["127.0.0.1:9000=10.0.0.5:9000"]`, "Routes"},
		{"bind", `bind = "10.0.0.2"`, "Bind"},
		{"scene_bps", `scene_bps = 10000000`, "Scheduler"},
		{"client_max_bps", `client_max_bps = 1000000`, "Scheduler"},
		{"queue_bytes", `queue_bytes = 65536`, "Scheduler"},
		{"queue_packets", `queue_packets = 64`, "Scheduler"},
		{"avatar_priority", `avatar_priority = true`, "Scheduler"},
		{"max_viewers", `max_viewers = 10`, "MaxViewers"},
		{"max_pending", `max_pending = 10`, "MaxPending"},
		{"max_per_prefix", `max_per_prefix = 10`, "MaxPerPrefix"},
		{"pending_timeout", `pending_timeout = "3s"`, "PendingTimeout"},
		{"idle_timeout", `idle_timeout = "30s"`, "IdleTimeout"},
		{"linger", `linger = "1s"`, "Linger"},
		{"up_bps", `up_bps = 100000`, "UpMax"},
		{"metrics_identify_viewers", `metrics_identify_viewers = true`, "IdentifyViewers"},
	} {
		f, err := Parse([]byte("[gateway]\n" + tc.toml + "\n"))
		if err != nil {
			t.Errorf("%s: %v", tc.key, err)
			continue
		}
		got := f.GatewayConfig()
		gv, bv := reflect.ValueOf(got), reflect.ValueOf(base)
		for i := range gv.NumField() {
			name := gv.Type().Field(i).Name
			same := reflect.DeepEqual(gv.Field(i).Interface(), bv.Field(i).Interface())
			if name == tc.field && same {
				t.Errorf("gateway.%s: %s unchanged", tc.key, name)
			}
			if name != tc.field && !same {
				t.Errorf("gateway.%s changed %s too", tc.key, name)
			}
		}
	}
	// [control] reaches the gateway's fair rate.
	f, err := Parse([]byte("[control]\ncontroller = \"tfrc\"\n"))
	if err != nil || f.GatewayConfig().Control.Controller != "tfrc" {
		t.Errorf("control.controller does not reach the gateway: %v", err)
	}
}

// TestGatewayRefused: bad [gateway] values are refused naming the key.
func TestGatewayRefused(t *testing.T) {
	for _, tc := range []struct{ toml, want string }{
		{`routes = ["127.0.0.1:9000"]`, "gateway.routes: \"127.0.0.1:9000\": want PUBLIC:PORT=INTERNAL:PORT"},
		{`routes = ["127.0.0.1:9000=0.0.0.0:9000"]`, "gateway.routes: \"127.0.0.1:9000=0.0.0.0:9000\": want PUBLIC:PORT=INTERNAL:PORT, the region's address a specific one"},
		{`routes = ["127.0.0.1:9000=10.0.0.1:9000", "127.0.0.1:9000=10.0.0.2:9000"]`, "public address 127.0.0.1:9000 given twice"},
		{`bind = "nonsense"`, "gateway.bind: \"nonsense\": want an IP address"},
		{`scene_bps = nan`, "gateway.scene_bps: NaN is not a rate"},
		{`scene_bps = 0`, "gateway.scene_bps: 0: want at least 8 bit/s"},
		{`client_max_bps = -1`, "gateway.client_max_bps: -1 bit/s is negative"},
		{`queue_bytes = 100`, "gateway.queue_bytes: 100 outside [8192, 1073741824]"},
		{`queue_packets = 0`, "gateway.queue_packets: 0 outside [1, 1048576]"},
		{`max_viewers = 0`, "gateway.max_viewers: 0 outside [1, 1000000]"},
		{`max_pending = -1`, "gateway.max_pending: -1 outside"},
		{`max_per_prefix = 2000000`, "gateway.max_per_prefix: 2000000 outside"},
		{`pending_timeout = "1ms"`, "gateway.pending_timeout: 1ms outside [100ms, 24h]"},
		{`idle_timeout = "100h"`, "gateway.idle_timeout: 100h0m0s outside"},
		{`linger = 5`, "gateway.linger"},
		{`up_bps = 100`, "gateway.up_bps: 100: want at least 800 bit/s"},
		{`up_bps = inf`, "gateway.up_bps"},
		{`nonesuch = 1`, "unknown key gateway.nonesuch"},
	} {
		_, err := Parse([]byte("[gateway]\n" + tc.toml + "\n"))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v; want %q", tc.toml, err, tc.want)
		}
	}
}
