package kerneltcp

import (
	"strings"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/internal/lab/link"
)

func TestConfigValidate(t *testing.T) {
	bn, err := link.NewBottleneck(link.BottleneckConfig{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		cfg  Config
		want []string // substrings of the error; none: valid
	}{
		{"defaults", Config{Bottleneck: bn}, nil},
		{"ipv4 minimum mtu", Config{Bottleneck: bn, MTU: 576}, nil},
		{"no bottleneck", Config{}, []string{"no bottleneck"}},
		{"mtu below ipv4's minimum", Config{Bottleneck: bn, MTU: 575}, []string{"mtu 575"}},
		{"mtu above a packet", Config{Bottleneck: bn, MTU: 65536}, []string{"mtu 65536"}},
		{"every fault at once", Config{MTU: -1}, []string{"no bottleneck", "mtu -1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkErr(t, tc.cfg.Validate(), tc.want)
		})
	}
}

func TestFlowConfigValidate(t *testing.T) {
	ok := FlowConfig{Congestion: "cubic", Duration: time.Second}
	with := func(f func(*FlowConfig)) FlowConfig { c := ok; f(&c); return c }
	tests := []struct {
		name string
		cfg  FlowConfig
		want []string
	}{
		{"cubic", ok, nil},
		{"bbr download with warmup", with(func(c *FlowConfig) { c.Congestion, c.Download, c.Warmup = "bbr", true, time.Second }), nil},
		{"vegas is not in these kernels", with(func(c *FlowConfig) { c.Congestion = "vegas" }), []string{`"vegas"`, "reno cubic bbr"}},
		{"no congestion control", with(func(c *FlowConfig) { c.Congestion = "" }), []string{`""`}},
		{"negative warmup", with(func(c *FlowConfig) { c.Warmup = -time.Second }), []string{"warmup -1s"}},
		{"nothing to measure", with(func(c *FlowConfig) { c.Duration = 0 }), []string{"duration 0s"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkErr(t, tc.cfg.Validate(), tc.want)
		})
	}
}

func checkErr(t *testing.T, err error, want []string) {
	t.Helper()
	if len(want) == 0 {
		if err != nil {
			t.Errorf("error %v, want none", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("no error, want one saying %q", want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
}
