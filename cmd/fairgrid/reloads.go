package main

import (
	"os"
	"os/signal"
	"syscall"
)

// notifyReloads turns each SIGHUP into a value on the returned channel,
// the form sidecar.Config.Reloads takes: signals stay here, in
// cmd. Call stop when the front-end ends; it stops the notification and
// the forwarding goroutine.
func notifyReloads() (reloads <-chan struct{}, stop func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	out := make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-hup:
				select {
				case out <- struct{}{}:
				default: // one reload pending already reads the file anew
				}
			case <-done:
				return
			}
		}
	}()
	return out, func() { signal.Stop(hup); close(done) }
}
