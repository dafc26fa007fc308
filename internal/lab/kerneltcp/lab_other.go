//go:build !linux

package kerneltcp

import (
	"context"
	"errors"
	"log/slog"
	"runtime"
)

// errNotLinux is every answer here: network namespaces, TUN devices with
// IFF_NO_PI and per-socket TCP_CONGESTION are Linux's.
var errNotLinux = errors.New("kerneltcp: Linux TCP in network namespaces needs Linux, not " + runtime.GOOS + "; the lab's gVisor flows run everywhere")

// Lab is unavailable off Linux; New says so.
type Lab struct{}

// Supported says why this machine cannot run a Lab: it is not Linux.
func Supported() error { return errNotLinux }

// CongestionAvailable reports no congestion control off Linux.
func CongestionAvailable(string) (bool, error) { return false, errNotLinux }

// SweepStale has nothing to sweep off Linux.
func SweepStale(context.Context, *slog.Logger) ([]string, error) { return nil, nil }

// New refuses: see Supported.
func New(context.Context, Config, *slog.Logger) (*Lab, error) { return nil, errNotLinux }

// Run refuses: see Supported.
func (*Lab) Run(context.Context) error { return errNotLinux }

// Flow refuses: see Supported.
func (*Lab) Flow(context.Context, FlowConfig) (FlowResult, error) { return FlowResult{}, errNotLinux }

// Drain has nothing to wait for off Linux.
func (*Lab) Drain(context.Context) error { return nil }

// Stats is empty off Linux.
func (*Lab) Stats() Stats { return Stats{} }

// Close has nothing to remove off Linux.
func (*Lab) Close() error { return nil }

// Namespaces has no names off Linux.
func (*Lab) Namespaces() (clientNS, serverNS string) { return "", "" }

// Devices has no names off Linux.
func (*Lab) Devices() (clientDev, serverDev string) { return "", "" }

// DeviceCounters refuses: see Supported.
func (*Lab) DeviceCounters(context.Context) (clientDev, serverDev DeviceCounters, err error) {
	return DeviceCounters{}, DeviceCounters{}, errNotLinux
}

// SetRealtime refuses: see Supported.
func SetRealtime(int) error { return errNotLinux }
