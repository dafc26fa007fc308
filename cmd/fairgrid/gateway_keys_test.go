//go:build unix

package main

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/configs"
	"github.com/fairgrid/fairgrid/internal/cli"
	"github.com/fairgrid/fairgrid/opensim/gateway"
)

// The [gateway] keys act on fairgrid gateway, not on the daemon: each is
// shown reaching the gateway's Config from the file, and then acting on a
// running gateway on loopback built from that Config, beside one built from
// the defaults (gateway_acts_test.go).
func init() {
	for key, c := range gatewayKeyCases {
		behaviourCases[key] = behaviourCase{"", func(t *testing.T, _, _ scenario) {
			t.Parallel() // each case runs its own gateways and sockets
			gatewayKeyReaches(t, key, c)
			c.acts(t, gatewayFileConfig(t, c.toml), configs.Default().GatewayConfig())
		}}
	}
}

type gatewayKeyCase struct {
	toml    string
	reached func(gateway.Config) bool
	// acts runs gateways with the changed configuration and the default
	// one (each given its routes by the case) and shows the difference.
	acts func(t *testing.T, changed, def gateway.Config)
}

var gatewayKeyCases = map[string]gatewayKeyCase{
	"gateway.routes": {`routes = ["127.0.0.1:0=127.0.0.1:9000"]`, func(c gateway.Config) bool {
		return len(c.Routes) == 1 && c.Routes[0].Region == netip.MustParseAddrPort("127.0.0.1:9000")
	}, routesAct},
	"gateway.bind":                     {`bind = "127.0.0.2"`, func(c gateway.Config) bool { return c.Bind == netip.MustParseAddr("127.0.0.2") }, bindAct},
	"gateway.scene_bps":                {`scene_bps = 80000`, func(c gateway.Config) bool { return c.Scheduler.SceneMax == 10_000 }, rateCapAct},
	"gateway.client_max_bps":           {`client_max_bps = 80000`, func(c gateway.Config) bool { return c.Scheduler.ClientMax == 10_000 }, rateCapAct},
	"gateway.queue_bytes":              {`queue_bytes = 8192`, func(c gateway.Config) bool { return c.Scheduler.QueueBytes == 8192 }, queueBoundAct},
	"gateway.queue_packets":            {`queue_packets = 4`, func(c gateway.Config) bool { return c.Scheduler.QueuePackets == 4 }, queueBoundAct},
	"gateway.avatar_priority":          {`avatar_priority = true`, func(c gateway.Config) bool { return c.Scheduler.AvatarPriority }, avatarPriorityAct},
	"gateway.max_viewers":              {`max_viewers = 2`, func(c gateway.Config) bool { return c.MaxViewers == 2 }, capAct(false)},
	"gateway.max_pending":              {`max_pending = 2`, func(c gateway.Config) bool { return c.MaxPending == 2 }, capAct(true)},
	"gateway.max_per_prefix":           {`max_per_prefix = 2`, func(c gateway.Config) bool { return c.MaxPerPrefix == 2 }, capAct(false)},
	"gateway.up_bps":                   {`up_bps = 8000`, func(c gateway.Config) bool { return c.UpMax == 1000 }, upAct},
	"gateway.metrics_identify_viewers": {`metrics_identify_viewers = true`, func(c gateway.Config) bool { return c.IdentifyViewers }, identifyAct},
	"gateway.pending_timeout":          {`pending_timeout = "300ms"`, func(c gateway.Config) bool { return c.PendingTimeout == 300*time.Millisecond }, timeoutAct(stayPending)},
	"gateway.idle_timeout":             {`idle_timeout = "300ms"`, func(c gateway.Config) bool { return c.IdleTimeout == 300*time.Millisecond }, timeoutAct(goSilent)},
	"gateway.linger":                   {`linger = "300ms"`, func(c gateway.Config) bool { return c.Linger == 300*time.Millisecond }, timeoutAct(closeCircuit)},
}

// gatewayFileConfig is the gateway's Config from a [gateway] table
// holding toml.
func gatewayFileConfig(t *testing.T, toml string) gateway.Config {
	t.Helper()
	f, err := configs.Parse([]byte("[gateway]\n" + toml + "\n"))
	if err != nil {
		t.Fatalf("%s: %v", toml, err)
	}
	return f.GatewayConfig()
}

// gatewayKeyReaches: the key, changed from its default in the file, changes
// the gateway's Config as it says, and nothing reads it as the default.
func gatewayKeyReaches(t *testing.T, key string, c gatewayKeyCase) {
	t.Helper()
	if c.reached(configs.Default().GatewayConfig()) {
		t.Fatalf("%s: the default already reads as the changed value: the case shows nothing", key)
	}
	if !c.reached(gatewayFileConfig(t, c.toml)) {
		t.Errorf("%s = %s did not reach the gateway's Config", key, c.toml)
	}
}

// The daemon reads no [gateway] key: a reload names each as needing a
// restart (the gateway reloads them itself: TestGatewayReload).
func init() {
	for key, v := range map[string]any{
		"gateway.routes":    []configs.Route{{Listen: netip.MustParseAddrPort("127.0.0.1:9300"), Region: netip.MustParseAddrPort("127.0.0.1:9000")}},
		"gateway.bind":      configs.IP{Addr: netip.MustParseAddr("127.0.0.2")},
		"gateway.scene_bps": 8e6, "gateway.client_max_bps": 8e5, "gateway.queue_bytes": 65536, "gateway.queue_packets": 64,
		"gateway.avatar_priority": true, "gateway.max_viewers": 7, "gateway.max_pending": 9, "gateway.max_per_prefix": 11,
		"gateway.pending_timeout": configs.Duration{Duration: 3 * time.Second}, "gateway.idle_timeout": configs.Duration{Duration: 20 * time.Second},
		"gateway.linger": configs.Duration{Duration: 5 * time.Second}, "gateway.up_bps": 8e5,
		"gateway.metrics_identify_viewers": true, "gateway.metrics_public": true,
	} {
		reloadCases[key] = reloadCase{change: v}
	}
}

// metricsKeyCase: a front-end's metrics key is the address it binds: set
// to a port another socket holds, the command stops at once naming the key
// and the flag that moves it (and the daemon's key does not stop it).
func metricsKeyCase(command, key, table string) func(t *testing.T, _, _ scenario) {
	return func(t *testing.T, _, _ scenario) {
		held, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer held.Close()
		path := filepath.Join(t.TempDir(), "fairgrid.toml")
		field := strings.TrimPrefix(key, "metrics.")
		if err := os.WriteFile(path, []byte(fmt.Sprintf("[metrics]\n%s = %q\n%s", field, held.Addr().String(), table)), 0o600); err != nil {
			t.Fatal(err)
		}
		args := []string{command, "--config", path}
		if command == "gateway" {
			args = append(args, "--duration", "1s") // the proxy has no --duration; it stops at the bind
		}
		code, _, errOut := runCmd(t, "", args...)
		want := fmt.Sprintf("metrics on %s (%s): the address is in use", held.Addr(), key)
		if code != exitFail || !strings.Contains(errOut, want) || !strings.Contains(errOut, "--metrics") {
			t.Errorf("%s with %s on a port in use: exit %d, %q; want exit 1 and %q", command, key, code, errOut, want)
		}
	}
}

// metricsPublicCase: metrics.gateway_address off loopback is refused at
// --check-config unless gateway.metrics_public says so.
func metricsPublicCase(t *testing.T, _, _ scenario) {
	for _, public := range []bool{false, true} {
		path := filepath.Join(t.TempDir(), "fairgrid.toml")
		toml := fmt.Sprintf("[metrics]\ngateway_address = \"0.0.0.0:9103\"\n[gateway]\nroutes = [\"127.0.0.1:9300=127.0.0.1:9000\"]\nmetrics_public = %v\n", public)
		if err := os.WriteFile(path, []byte(toml), 0o600); err != nil {
			t.Fatal(err)
		}
		code, _, errOut := runCmd(t, "", "gateway", "--check-config", path)
		if want := map[bool]int{false: exitUsage, true: exitOK}[public]; code != want || !public && !strings.Contains(errOut, "gateway.metrics_public") {
			t.Errorf("metrics off loopback, metrics_public %v: exit %d, %q; want exit %d", public, code, errOut, want)
		}
	}
}

func init() {
	behaviourCases["gateway.metrics_public"] = behaviourCase{"", metricsPublicCase}
	behaviourCases["metrics.proxy_address"] = behaviourCase{"", metricsKeyCase("proxy", "metrics.proxy_address", "[proxy]\nlisten = \"127.0.0.1:0\"\n")}
	behaviourCases["metrics.gateway_address"] = behaviourCase{"", metricsKeyCase("gateway", "metrics.gateway_address",
		"[gateway]\nroutes = [\"127.0.0.1:0=127.0.0.1:9\"]\n")}
	reloadCases["metrics.proxy_address"] = reloadCase{change: mustAddress("127.0.0.1:9998")}
	reloadCases["metrics.gateway_address"] = reloadCase{change: mustAddress("127.0.0.1:9997")}
}

// TestMetricsPortsDistinct: run, proxy and gateway default to different
// metrics ports, so the three run side by side.
func TestMetricsPortsDistinct(t *testing.T) {
	m := configs.Default().Metrics
	if m.Address == m.ProxyAddress || m.Address == m.GatewayAddress || m.ProxyAddress == m.GatewayAddress {
		t.Errorf("metrics defaults collide: run %s, proxy %s, gateway %s", m.Address, m.ProxyAddress, m.GatewayAddress)
	}
	for command, want := range map[string]string{"run": "metrics.address", "proxy": "metrics.proxy_address", "gateway": "metrics.gateway_address"} {
		if got := cli.MetricsKey(command); got != want {
			t.Errorf("%s --metrics sets %s", command, got)
		}
	}
}
