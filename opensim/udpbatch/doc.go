// Package udpbatch sends a UDP socket's datagrams in batches where the
// platform can (sendmmsg on Linux, through x/net), one at a time
// elsewhere, for the test region (package opensim/region) and the
// gateway (package opensim/gateway) alike.
//
// It is public, beside the two servers that send through it, because
// both are public: a public package may not import an internal one,
// whose types and errors its callers could not name. Writer takes
// Datagram values (bytes and a destination) and reports how many the
// kernel refused; it is not safe for concurrent use, one per sending
// goroutine.
package udpbatch
