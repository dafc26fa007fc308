//go:build race

package scenario

// raceEnabled: built with -race.
const raceEnabled = true
