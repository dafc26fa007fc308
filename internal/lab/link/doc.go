// Package link emulates a network link between viewers and a simulator,
// so that loss and delay are reproducible on one machine without root or
// kernel support (this project's kernels have no netem).
//
// Pipe is one direction: a FIFO in datagrams ahead of a bottleneck of fixed
// rate, a fixed one-way delay, and random (Bernoulli) or bursty
// (two-state Gilbert–Elliott, same mean rate) loss before the queue. It
// decides each datagram's fate from its arrival time and size alone, without
// a clock, so a seeded Pipe is deterministic and testable on virtual time.
// PipeConfig.Validate refuses every value the pipe would otherwise have to
// reinterpret (a NaN or sub-datagram burst length, a loss outside [0, 1]);
// a loss of 1 drops everything, bursty or not.
//
// Relay puts two pipes in a UDP relay: viewers send to its listening
// address, and each viewer endpoint reaches the simulator from a socket of
// its own, so the simulator sees one client per viewer. A tap sees traffic
// as the viewer's host would, and InjectUp sends as a viewer: together they
// let the sidecar run its demo without raw sockets or capture privileges.
package link
