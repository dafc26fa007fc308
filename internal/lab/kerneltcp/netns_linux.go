//go:build linux

package kerneltcp

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// netnsDir is where `ip netns add` bind-mounts a namespace so it outlives
// the process that made it; iproute2 hard-codes it (lib/namespace.h).
const netnsDir = "/run/netns"

// Supported says why this machine cannot run a Lab, or nil if it can: it
// needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN for namespaces), a TUN
// device node and iproute2's ip and tc.
func Supported() error {
	if err := haveCapabilities(); err != nil {
		return err
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		return fmt.Errorf("kerneltcp: no TUN device node: %w", err)
	}
	for _, tool := range []string{"ip", "tc"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("kerneltcp: iproute2's %s is needed to configure the namespaces: %w", tool, err)
		}
	}
	return nil
}

// CongestionAvailable says whether the kernel has congestion control cc
// (loaded or built in), reading tcp_available_congestion_control.
func CongestionAvailable(cc string) (bool, error) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_available_congestion_control")
	if err != nil {
		return false, fmt.Errorf("kerneltcp: %w", err)
	}
	for f := range strings.FieldsSeq(string(b)) {
		if f == cc {
			return true, nil
		}
	}
	return false, nil
}

// Capabilities a lab needs (linux/capability.h): CAP_NET_ADMIN for TUN
// devices, addresses and qdiscs, CAP_SYS_ADMIN for setns(2) and the
// bind mounts of `ip netns add`.
const (
	capNetAdmin = 12
	capSysAdmin = 21
)

// haveCapabilities reads the effective capability set from
// /proc/self/status: root in a container without them cannot run a lab
// either, and should hear why rather than fail halfway.
func haveCapabilities() error {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return fmt.Errorf("kerneltcp: %w", err)
	}
	for line := range strings.Lines(string(b)) {
		hexText, ok := strings.CutPrefix(line, "CapEff:")
		if !ok {
			continue
		}
		eff, err := strconv.ParseUint(strings.TrimSpace(hexText), 16, 64)
		if err != nil {
			return fmt.Errorf("kerneltcp: CapEff %q: %w", strings.TrimSpace(hexText), err)
		}
		if eff&(1<<capNetAdmin) == 0 || eff&(1<<capSysAdmin) == 0 {
			return errors.New("kerneltcp: needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN) to create network namespaces and TUN devices")
		}
		return nil
	}
	return errors.New("kerneltcp: no CapEff in /proc/self/status")
}

// newRunID names one Lab's namespaces and devices.
func newRunID() (string, error) {
	var b [3]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("kerneltcp: run id: %w", err)
	}
	return fmt.Sprintf("%d-%s", os.Getpid(), hex.EncodeToString(b[:])), nil
}

// ip runs iproute2's ip. We configure with ip rather than netlink
// messages of our own: ip is on every machine that has network
// namespaces, its commands are the ones a reader would type to reproduce
// the lab, and x/sys/unix has the rtnetlink constants but no message
// builders, so netlink would be a few hundred lines of our own to test.
func ip(ctx context.Context, args ...string) ([]byte, error) {
	return iproute2(ctx, "ip", args...)
}

// iproute2 runs ip or tc.
func iproute2(ctx context.Context, tool string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, tool, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("%s %s: %w: %s", tool, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// SweepStale deletes namespaces with NamePrefix whose creating process is
// gone (a run that was killed before its cleanup), and returns their
// names. Their TUN devices went with the process's file descriptors.
func SweepStale(ctx context.Context, log *slog.Logger) ([]string, error) {
	entries, err := os.ReadDir(netnsDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("kerneltcp: sweep: %w", err)
	}
	var swept []string
	var errs []error
	for _, e := range entries {
		pid, ok := creatorPID(e.Name())
		if !ok || processAlive(pid) {
			continue
		}
		if _, err := ip(ctx, "netns", "delete", e.Name()); err != nil {
			errs = append(errs, err)
			continue
		}
		swept = append(swept, e.Name())
		if log != nil {
			log.Info("deleted a stale lab namespace", "netns", e.Name(), "pid", pid)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return swept, fmt.Errorf("kerneltcp: sweep: %w", err)
	}
	return swept, nil
}

// creatorPID reads the pid out of a name NamePrefix+"<pid>-<random>-<side>".
func creatorPID(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, NamePrefix)
	if !ok {
		return 0, false
	}
	pidText, _, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, false
	}
	pid, err := strconv.Atoi(pidText)
	return pid, err == nil && pid > 0
}

func processAlive(pid int) bool {
	// Signal 0 checks existence; EPERM means it exists but is not ours.
	err := unix.Kill(pid, 0)
	return err == nil || errors.Is(err, unix.EPERM)
}

// inNamespace runs fn on an OS thread that has entered the network
// namespace ns, and waits for it. Sockets and TUN devices belong to the
// namespace of the thread that creates them and keep it afterwards, so
// everything else may use them from any goroutine. The thread is thrown
// away afterwards (the goroutine exits locked) rather than switched back,
// so no other goroutine can ever run in the lab's namespace by accident.
func inNamespace(ns *os.File, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("setns %s: %w", ns.Name(), err)
			return
		}
		errc <- fn()
	}()
	return <-errc
}

// openTUN creates TUN device name in namespace ns: IPv4 packets without
// the packet-information header (IFF_NO_PI) and without IFF_VNET_HDR, so
// the kernel segments and checksums every packet before we read it.
func openTUN(ns *os.File, name string) (*os.File, error) {
	var f *os.File
	err := inNamespace(ns, func() error {
		fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("open /dev/net/tun: %w", err)
		}
		ifr, err := unix.NewIfreq(name)
		if err != nil {
			unix.Close(fd)
			return fmt.Errorf("tun %s: %w", name, err)
		}
		ifr.SetUint16(unix.IFF_TUN | unix.IFF_NO_PI)
		if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
			unix.Close(fd)
			return fmt.Errorf("TUNSETIFF %s: %w", name, err)
		}
		// Non-blocking, so os.File reads through the runtime's poller and
		// a read deadline can end them.
		f = os.NewFile(uintptr(fd), filepath.Join("/dev/net/tun", name))
		return nil
	})
	return f, err
}

// readDeviceCounters reads a device's counters with `ip -s -j link show`,
// inside namespace ns.
func readDeviceCounters(ctx context.Context, ns, dev string) (DeviceCounters, error) {
	out, err := ip(ctx, "-n", ns, "-s", "-j", "link", "show", "dev", dev)
	if err != nil {
		return DeviceCounters{}, err
	}
	type counters struct {
		Packets uint64 `json:"packets"`
		Dropped uint64 `json:"dropped"`
	}
	var links []struct {
		Stats struct {
			Rx counters `json:"rx"`
			Tx counters `json:"tx"`
		} `json:"stats64"`
	}
	if err := json.Unmarshal(out, &links); err != nil {
		return DeviceCounters{}, fmt.Errorf("ip -s -j link show dev %s: %w", dev, err)
	}
	if len(links) != 1 {
		return DeviceCounters{}, fmt.Errorf("ip -s -j link show dev %s: %d links, want 1", dev, len(links))
	}
	s := links[0].Stats
	return DeviceCounters{TxPackets: s.Tx.Packets, TxDropped: s.Tx.Dropped, RxPackets: s.Rx.Packets, RxDropped: s.Rx.Dropped}, nil
}
