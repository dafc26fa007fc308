//go:build !linux

package capture

import "errors"

// OpenLive is available on Linux only: it uses AF_PACKET sockets.
func OpenLive(iface string, ports Ports) (*Reader, error) {
	return nil, errors.New("live capture needs Linux (AF_PACKET); on this OS, read a capture file, or measure through fairgrid proxy")
}

// Auto is the interface name that means the interface of the default
// route; live capture needs Linux, so it means nothing here.
const Auto = "auto"

// ResolveInterface returns name as it is: live capture needs Linux.
func ResolveInterface(name string) (iface, why string) { return name, "configured" }
