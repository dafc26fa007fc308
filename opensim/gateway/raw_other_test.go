//go:build !linux

package gateway_test

import "testing"

// newRawSender: spoofed sources are sent from Linux's raw sockets only
// (and 127/8 is all local on Linux only).
func newRawSender(t *testing.T) rawSender {
	t.Skip("spoofed sources need Linux's raw sockets")
	return rawSender{}
}

func rawSend(int, []byte, [4]byte) error { return nil }
