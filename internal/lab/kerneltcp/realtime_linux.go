//go:build linux

package kerneltcp

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// maxRealtimePriority is the highest SCHED_RR priority (sched(7)).
const maxRealtimePriority = 99

// SetRealtime puts every thread of this process under the round-robin
// real-time policy SCHED_RR at priority (1–99), or back under the normal
// policy with 0. Threads the runtime starts later inherit it from the
// thread that starts them.
//
// The lab is an emulator in real time: a packet's arrival at the
// bottleneck is the moment the forwarder reads it. On a busy machine
// (another build on both cores) the forwarder's threads wait behind every
// other process for a CPU, tens to hundreds of milliseconds, and the
// packets the kernel sent meanwhile reach the bottleneck together: its
// queue overflows in a burst no real link would see, and a flow's RTT
// includes the wait. Under SCHED_RR the waiting thread runs as soon as
// the device has a packet. The cost to others is small because the
// process mostly waits (6 Mbit/s is about 500 packets a second each way),
// and the kernel's real-time throttling (sched_rt_runtime_us, 95 % by
// default) leaves them a share even if it did not. It needs root
// (CAP_SYS_NICE), and it is the process's choice, not the lab's: call it
// from a command or a test that runs labs, and leave it off for CPU-bound
// work.
func SetRealtime(priority int) error {
	if priority < 0 || priority > maxRealtimePriority {
		return fmt.Errorf("kerneltcp: real-time priority %d outside [0, %d]", priority, maxRealtimePriority)
	}
	attr := unix.SchedAttr{Policy: unix.SCHED_NORMAL}
	if priority > 0 {
		attr = unix.SchedAttr{Policy: unix.SCHED_RR, Priority: uint32(priority)}
	}
	// A thread started while the list is read inherits from a thread
	// that may not have been set yet: read again until a pass finds none
	// new.
	set := map[int]bool{}
	for {
		entries, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return fmt.Errorf("kerneltcp: real-time priority: %w", err)
		}
		changed := false
		for _, e := range entries {
			tid, err := strconv.Atoi(e.Name())
			if err != nil || set[tid] {
				continue
			}
			a := attr
			if err := unix.SchedSetAttr(tid, &a, 0); err != nil {
				if errors.Is(err, unix.ESRCH) {
					continue // the thread ended meanwhile
				}
				return fmt.Errorf("kerneltcp: real-time priority %d for thread %d: %w", priority, tid, err)
			}
			set[tid], changed = true, true
		}
		if !changed {
			return nil
		}
	}
}
