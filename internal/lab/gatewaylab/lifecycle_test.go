package gatewaylab

import (
	"io"
	"testing"

	"github.com/fairgrid/fairgrid/internal/lifecycletest"
)

// TestArmRigCloseWithoutRun: each arm's rig, built and never run,
// releases its sockets (region, gateway, relay and viewer) by Close alone, each member closed by its Close rather than
// run on an ended context; a second Close is harmless.
func TestArmRigCloseWithoutRun(t *testing.T) {
	for _, arm := range []Arm{Stock, Gateway, Sidecar} {
		t.Run(string(arm), func(t *testing.T) {
			lifecycletest.Released(t, 2, func() io.Closer {
				r, err := NewArmRig(Config{}, arm, nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				return r
			})
		})
	}
}
