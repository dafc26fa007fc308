//go:build race

package socks5

// raceEnabled: the race detector allocates on its own, which allocation
// tests must not count.
const raceEnabled = true
