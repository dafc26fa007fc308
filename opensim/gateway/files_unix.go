//go:build unix

package gateway

import "golang.org/x/sys/unix"

// openFiles is the process's own RLIMIT_NOFILE.
type openFiles struct{}

func (openFiles) get() (soft, hard uint64, err error) {
	var r unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &r); err != nil {
		return 0, 0, err
	}
	return uint64(r.Cur), uint64(r.Max), nil
}

func (openFiles) set(soft uint64) error {
	var r unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &r); err != nil {
		return err
	}
	r.Cur = soft
	return unix.Setrlimit(unix.RLIMIT_NOFILE, &r)
}
