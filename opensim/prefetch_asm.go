//go:build amd64 || arm64

package opensim

import "unsafe"

// prefetch asks the processor to start loading lines cache lines from p
// on, without waiting for them: a hint that cannot fault. Go has no
// prefetch intrinsic outside the runtime, so this is two instructions of
// assembly; a plain load would hold up the instructions behind it until
// the memory answered.
//
//go:noescape
func prefetch(p unsafe.Pointer, lines int)
