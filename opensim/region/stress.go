package region

import (
	"encoding/binary"
	"math"
	"net"
	"time"

	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/opensim/udpbatch"
)

// Stress mode, after the study of MMORPG server I/O this project's issue
// cites: every viewer sends a movement AgentUpdate once a second; the
// region moves the avatar, finds the avatars within view distance through a
// uniform grid, and sends each of them an ImprovedTerseObjectUpdate naming
// the mover and its movement counter, so each viewer can time the echo of
// its own movement. The updates bypass the scheduler, as OpenSim's
// unthrottled sends do, and leave in batches through sendmmsg: the study's
// server reached its client count by batching sends.

// StressConfig turns stress mode on.
type StressConfig struct {
	Enabled bool
	// ViewDistance in metres (default 32).
	ViewDistance float32
}

// stressWorldMax bounds the stress world's coordinates. The world is not
// one 256 m region: the density sweep keeps the neighbours per move
// constant by spreading the viewers over a larger square as their number
// grows (doc.go), and the sparse grid costs nothing for empty space.
// float32 still resolves 4 mm at 65,536 m.
const stressWorldMax = 1 << 16

// StressEcho is the layout of the 60-byte terse record in stress mode:
// the mover's circuit code, its movement counter, its position.
type StressEcho struct {
	Mover   uint32
	Counter uint32
	X, Y    float32
}

// EncodeStressEcho writes e into a 60-byte terse record.
func EncodeStressEcho(e StressEcho) []byte {
	b := make([]byte, 60)
	binary.LittleEndian.PutUint32(b[0:], e.Mover)
	binary.LittleEndian.PutUint32(b[4:], e.Counter)
	binary.LittleEndian.PutUint32(b[8:], math.Float32bits(e.X))
	binary.LittleEndian.PutUint32(b[12:], math.Float32bits(e.Y))
	return b
}

// DecodeStressEcho reads a terse record written by EncodeStressEcho.
func DecodeStressEcho(b []byte) (StressEcho, bool) {
	if len(b) < 16 {
		return StressEcho{}, false
	}
	return StressEcho{
		Mover:   binary.LittleEndian.Uint32(b[0:]),
		Counter: binary.LittleEndian.Uint32(b[4:]),
		X:       math.Float32frombits(binary.LittleEndian.Uint32(b[8:])),
		Y:       math.Float32frombits(binary.LittleEndian.Uint32(b[12:])),
	}, true
}

// grid is a uniform spatial index: cells of the view distance, so an
// avatar's neighbours are in its cell and the eight around. It is sparse (a
// map of occupied cells), so the world may be any size up to
// stressWorldMax without a cell array to match. Each cell holds its
// avatars' positions beside them, so a lookup reads the cells' arrays and
// touches only the clients within range, not every candidate's (a client
// is several KB, its archive of sequence numbers): near's time is cache
// misses, which a profile of the region at thousands of viewers shows and
// BenchmarkGridNear alone, with warm caches, does not (docs/testbed.md).
type grid struct {
	cell  float32
	cells map[cellKey][]gridEntry
}

type gridEntry struct {
	x, y float32
	c    *client
}

type cellKey struct{ x, y int32 }

func newGrid(view float32) *grid {
	return &grid{cell: view, cells: map[cellKey][]gridEntry{}}
}

func (g *grid) key(x, y float32) cellKey {
	return cellKey{int32(x / g.cell), int32(y / g.cell)}
}

func (g *grid) remove(c *client) {
	if !c.inGrid {
		return
	}
	cell := g.cells[c.cell]
	last := len(cell) - 1
	cell[c.gridIndex] = cell[last]
	cell[c.gridIndex].c.gridIndex = c.gridIndex
	cell[last] = gridEntry{}
	cell = cell[:last]
	if len(cell) == 0 {
		delete(g.cells, c.cell)
	} else {
		g.cells[c.cell] = cell
	}
	c.inGrid = false
}

func (g *grid) move(c *client, x, y float32) {
	k := g.key(x, y)
	if c.inGrid && k == c.cell {
		e := &g.cells[k][c.gridIndex]
		e.x, e.y = x, y
		return
	}
	g.remove(c)
	g.cells[k] = append(g.cells[k], gridEntry{x: x, y: y, c: c})
	c.cell, c.gridIndex, c.inGrid = k, len(g.cells[k])-1, true
}

// near calls f for every avatar within dist of (x, y), itself included.
func (g *grid) near(x, y, dist float32, f func(*client)) {
	k := g.key(x, y)
	for dy := int32(-1); dy <= 1; dy++ {
		for dx := int32(-1); dx <= 1; dx++ {
			for _, e := range g.cells[cellKey{k.x + dx, k.y + dy}] {
				ddx, ddy := e.x-x, e.y-y
				if ddx*ddx+ddy*ddy <= dist*dist {
					f(e.c)
				}
			}
		}
	}
}

// batchWriter gathers the loop's datagrams and sends them in as few
// system calls as the platform allows (udpbatch.Writer: sendmmsg on
// Linux), reusing their buffers from batch to batch.
type batchWriter struct {
	w    *udpbatch.Writer
	ds   []udpbatch.Datagram
	bufs [][]byte
	n    int
}

func newBatchWriter(conn *net.UDPConn) *batchWriter {
	return &batchWriter{w: udpbatch.NewWriter(conn)}
}

// add queues a datagram for addr, reusing buffers from earlier batches,
// and returns how many were sent to make room (0 unless the batch was
// full).
func (w *batchWriter) add(addr *net.UDPAddr) (*[]byte, int) {
	flushed := 0
	if w.n == udpbatch.MaxBatch {
		flushed = w.flush()
	}
	if w.n == len(w.ds) {
		w.ds = append(w.ds, udpbatch.Datagram{})
		w.bufs = append(w.bufs, make([]byte, 0, 128))
	}
	w.ds[w.n].To = addr.AddrPort()
	w.n++
	return &w.bufs[w.n-1], flushed
}

// flush sends everything queued and returns how many datagrams the kernel
// took.
func (w *batchWriter) flush() (sent int) {
	for i := range w.n {
		w.ds[i].B = w.bufs[i]
	}
	sent = w.n - w.w.Write(w.ds[:w.n])
	w.n = 0
	return sent
}

// stressMove handles a movement update in stress mode.
func (s *Server) stressMove(c *client, m *lludp.AgentUpdate, at time.Time) {
	x := min(max(m.CameraCenter[0], 0), stressWorldMax)
	y := min(max(m.CameraCenter[1], 0), stressWorldMax)
	s.grid.move(c, x, y)
	s.stressMoves++
	record := EncodeStressEcho(StressEcho{Mover: c.login.Code, Counter: m.ControlFlags, X: x, Y: y})
	update := &lludp.ImprovedTerseObjectUpdate{RegionHandle: regionHandle, TimeDilation: 65535,
		Objects: []lludp.TerseObjectData{{Data: record}}}
	body, err := lludp.AppendMessage(nil, lludp.Header{}, update, nil)
	if err != nil {
		return
	}
	payload := body[lludp.HeaderSize:]
	s.grid.near(x, y, s.cfg.Stress.ViewDistance, func(o *client) {
		o.seq++
		b := s.queue(o.udpAddr)
		*b = lludp.AppendPacket((*b)[:0], lludp.Header{Sequence: o.seq}, payload, nil)
		s.stressEchoes++
	})
	// The batch leaves when the loop has handled what the reader handed
	// it: the echoes of every movement in one read share the system calls.
}

// StressEchoes is the number of terse updates stress mode has sent.
func (s *Server) StressEchoes() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stressEchoes
}
