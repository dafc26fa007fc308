package gateway_test

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"
)

// newRawSender opens the raw socket spoofed sources need, or skips the
// test saying why (CI runs as root).
func newRawSender(t *testing.T) rawSender {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_RAW)
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
		t.Skip("spoofed sources need a raw socket: run as root or with CAP_NET_RAW (CI runs as root)")
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return rawSender{fd: fd}
}

func rawSend(fd int, pkt []byte, dst [4]byte) error {
	return unix.Sendto(fd, pkt, 0, &unix.SockaddrInet4{Addr: dst})
}
