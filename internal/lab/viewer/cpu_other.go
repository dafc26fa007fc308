//go:build !unix

package viewer

import "time"

// processCPU is unknown here: the figure is reported as negative.
func processCPU() time.Duration { return -1 }
