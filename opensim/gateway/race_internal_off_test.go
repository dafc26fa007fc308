//go:build !race

package gateway

// raceBuild: built with -race.
const raceBuild = false
