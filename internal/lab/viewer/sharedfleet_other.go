//go:build !linux

package viewer

import (
	"errors"
	"net/netip"
)

// openShared: the shared fleet needs Linux, where all of 127.0.0.0/8 is
// local and IP_PKTINFO sets each datagram's source address.
func openShared(netip.AddrPort, int) (sharedSockets, error) {
	return nil, errors.New("shared sockets need Linux (IP_PKTINFO over 127.0.0.0/8)")
}
