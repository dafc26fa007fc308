//go:build !amd64 && !arm64

package opensim

import "unsafe"

// prefetch is a no-op where there is no assembly for it.
func prefetch(p unsafe.Pointer, lines int) {}
