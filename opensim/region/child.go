package region

import (
	"errors"
	"fmt"
	"time"

	"github.com/fairgrid/fairgrid/lludp"
)

// Neighbour regions. A viewer keeps a circuit to its agent's region (the
// root) and one to each neighbour it can see (child agents, protocol.md
// §8.9, §11.2). A neighbour learns the root's throttles from the root
// region (OpenSim: ChildAgentDataUpdate and AgentPosition between
// regions) and applies them scaled down with distance: OpenSim 0.9.2.2's
// ScenePresence.UpdateChildAgent(AgentPosition) (ScenePresence.cs:
// 4807-4863) takes the agent's position in the neighbour's coordinates,
//
//	(x, y) = position in the root + (root − neighbour) × 256 m,
//	x −= 256 if x > 256 (and y alike),
//	factor = max(0.2, 1 − 0.3 · (x² + y²) / 256²),
//
// and calls SetChildAgentThrottle(throttles, factor), which multiplies
// every category (LLUDPClient.SetThrottles, LLUDPClient.cs:396-424). An
// agent at the root's centre gets 0.85 in each of the eight neighbours.
// (A crossing or teleport sets the factor to 1, ScenePresence.cs:4990-4991.)
//
// In fairgrid's region a neighbour is another Server with Config.Child
// set, linked to the root with AddChild: the root hands each AgentThrottle
// of its own circuits to its children, in-process, and a child applies it
// to the agent's circuit, now and whenever the circuit opens later. A
// child circuit completes its handshake with RegionHandshakeReply, as a
// viewer sends no CompleteAgentMovement to a neighbour.

// ChildConfig makes a region a neighbour of the agent's region.
type ChildConfig struct {
	// OffsetX and OffsetY place this region on the grid relative to the
	// root, in regions: each -1, 0 or 1, not both 0 (east is +X, north
	// +Y).
	OffsetX, OffsetY int
}

func (c *ChildConfig) validate() error {
	if c == nil {
		return nil
	}
	if c.OffsetX < -1 || c.OffsetX > 1 || c.OffsetY < -1 || c.OffsetY > 1 || (c.OffsetX == 0 && c.OffsetY == 0) {
		return fmt.Errorf("neighbour offset (%d, %d): want each of -1, 0, 1, not both 0", c.OffsetX, c.OffsetY)
	}
	return nil
}

// NeighbourOffsets are the eight neighbours in the order `fairgrid sim
// --child-regions` opens them: east, north, west, south, then the
// corners.
var NeighbourOffsets = [8][2]int{{1, 0}, {0, 1}, {-1, 0}, {0, -1}, {1, 1}, {-1, 1}, {-1, -1}, {1, -1}}

// regionSize is OpenSim's Constants.RegionSize, in metres.
const regionSize = 256

// ChildThrottleFactor is the factor a neighbour at offset (dx, dy)
// regions from the root applies to the root's throttles, for an agent at
// pos in the root region: OpenSim 0.9.2.2's arithmetic
// (ScenePresence.cs:4843-4855), from 0.2 to 1.
func ChildThrottleFactor(pos lludp.Vector3, dx, dy int) float32 {
	x := pos[0] - float32(dx*regionSize)
	y := pos[1] - float32(dy*regionSize)
	if x > regionSize {
		x -= regionSize
	}
	if y > regionSize {
		y -= regionSize
	}
	f := 1 - (x*x+y*y)*0.3/regionSize/regionSize
	return max(f, 0.2)
}

// AddChild makes child a neighbour of s: each AgentThrottle s applies from
// one of its circuits is applied to the agent's circuit at child too,
// scaled by ChildThrottleFactor. child must have Config.Child set; call it
// before Run.
func (s *Server) AddChild(child *Server) error {
	if child == s || child.cfg.Child == nil {
		return errors.New("region: a child region needs Config.Child")
	}
	if s.cfg.Child != nil {
		return errors.New("region: a child region cannot have children")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.children = append(s.children, child)
	return nil
}

// rootThrottle is a root's AgentThrottle of agent, handed to a child:
// kept for a circuit that opens later, applied to the open ones. Called
// by the root's loop, which holds the root's lock, never the child's.
func (s *Server) rootThrottle(agent lludp.UUID, categories [lludp.NumCategories]float32, pos lludp.Vector3, at time.Time) {
	f := ChildThrottleFactor(pos, s.cfg.Child.OffsetX, s.cfg.Child.OffsetY)
	for i := range categories {
		categories[i] *= f
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rootThrottles == nil {
		s.rootThrottles = map[lludp.UUID][lludp.NumCategories]float32{}
	}
	if len(s.rootThrottles) >= maxRootThrottles {
		clear(s.rootThrottles) // bounded: the roots resend on their next throttle
	}
	s.rootThrottles[agent] = categories
	for _, c := range s.clients {
		if c.login.AgentID == agent {
			s.applyRootThrottle(c, at)
		}
	}
}

// rootThrottleAll hands an agent's throttle to every child, as the root's
// loop does on an AgentThrottle; s.mu is held.
func (s *Server) rootThrottleAll(agent lludp.UUID, categories [lludp.NumCategories]float32, at time.Time) {
	for _, child := range s.children {
		child.rootThrottle(agent, categories, s.cfg.Position, at)
	}
}

// maxRootThrottles bounds the agents a child region remembers throttles
// for.
const maxRootThrottles = 100_000

// applyRootThrottle sets a child circuit's throttle to its root's, scaled;
// s.mu is held.
func (s *Server) applyRootThrottle(c *client, at time.Time) {
	cats, ok := s.rootThrottles[c.login.AgentID]
	if !ok {
		return
	}
	if _, err := s.sched.SetThrottleValues(c.id, cats, at); err == nil {
		c.stats.Throttles++
		if s.cfg.OnThrottle != nil {
			var total float64
			for _, v := range cats {
				total += float64(v)
			}
			_, applied, _ := s.sched.Rates(c.id)
			s.cfg.OnThrottle(c.addr, total, applied, at)
		}
	}
}

// Position is where the agent stands in this region, as
// AgentMovementComplete tells the viewer.
func (s *Server) Position() lludp.Vector3 { return s.cfg.Position }
