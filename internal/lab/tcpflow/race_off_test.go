//go:build !race

package tcpflow

// raceEnabled: built with -race.
const raceEnabled = false
