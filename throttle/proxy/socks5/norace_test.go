//go:build !race

package socks5

const raceEnabled = false
