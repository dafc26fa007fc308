//go:build race

package fairness

// raceEnabled: built with -race.
const raceEnabled = true
