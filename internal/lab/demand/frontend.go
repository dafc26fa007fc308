package demand

import (
	"github.com/fairgrid/fairgrid/opensim/gateway"
	"github.com/fairgrid/fairgrid/throttle"
)

// Gateway is the seat's gateway, for a view that reads its circuit as
// the run goes (`fairgrid lab gateway`); nil unless the front-end has
// one.
func (s *Seat) Gateway() *gateway.Gateway { return s.gw }

// Loop is the seat's client-side loop (the sidecar's or the proxy's), for
// a view that reads what it measures (the demo); nil for Stock and
// Gateway.
func (s *Seat) Loop() *throttle.Loop { return s.loop }
