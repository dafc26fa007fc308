//go:build !race

package viewer

// raceEnabled: built with -race.
const raceEnabled = false
