// Package group runs a front-end's parts as one: Group starts each member,
// and the first to return stops the others (its context is cancelled and
// each interrupt is called), so every goroutine of a front-end belongs to
// the group and ends with it. AddHTTP adds an HTTP server (metrics) that
// shuts down with the group.
//
// Every front-end is one Group whose first error main returns: the
// sidecar daemon and the SOCKS 5 proxy (package throttle/sidecar adds a
// sidecar's members with Sidecar.AddTo), the gateway, the test region,
// the viewer, the link emulator and the lab's rigs. It is its own small
// package because most of those are not sidecars: a region or a link
// emulator needs the group and nothing of the control loop. It is
// errgroup with oklog/run's interrupts, in the few lines it takes, and
// imports only the standard library.
package group
