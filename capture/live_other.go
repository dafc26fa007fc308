//go:build !linux

package capture

import "errors"

// OpenLive is available on Linux only: it uses AF_PACKET sockets.
func OpenLive(iface string, ports Ports) (*Reader, error) {
	return nil, errors.New("live capture needs Linux (AF_PACKET); on this OS, read a capture file, or measure through fairgrid proxy")
}
