//go:build race

package gateway_test

// raceEnabled: built with -race, which slows every goroutine of the
// process, the flood's sender among them.
const raceEnabled = true
