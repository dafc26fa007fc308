//go:build !race

package gateway_test

// raceEnabled: built with -race.
const raceEnabled = false
