package circuit

import (
	"encoding/binary"

	"github.com/fairgrid/fairgrid/lludp"
)

// The messages whose few fields the tracker reads straight from the bytes.
// A third of a viewer's datagrams are AgentUpdates (ten a second, 114
// bytes, zero-coded), read only for their two IDs: a full decode and
// Unmarshal of each cost more than the rest of Observe.
const (
	bodyStartPing = iota
	bodyCompletePing
	bodyUseCircuitCode
	bodyAgentUpdate
	bodyCompleteAgentMovement
	numBodies
)

// fastBody says how to read one of those messages without lludp.Packet.
type fastBody struct {
	fixed bool // in the template, every block is Single and of fixed size
	size  int  // the body's size: the larger of the template's and the Go type's
	typed int  // what the Go type reads
	read  int  // what the tracker reads: the fields up to the last it needs
}

// fastRead is how much of each body the tracker reads (see learn).
var fastRead = [numBodies]int{bodyStartPing: 1, bodyCompletePing: 1, bodyUseCircuitCode: 36,
	bodyAgentUpdate: 32, bodyCompleteAgentMovement: 36}

// fastTyped returns fresh values of those messages: encoding one writes
// into it, so trackers built at once must not share them.
func fastTyped() [numBodies]lludp.Typed {
	return [numBodies]lludp.Typed{&lludp.StartPingCheck{}, &lludp.CompletePingCheck{}, &lludp.UseCircuitCode{},
		&lludp.AgentUpdate{}, &lludp.CompleteAgentMovement{}}
}

// fastBodies finds which of those messages the template lays out with
// fixed sizes only. For those, a body at least as long as both the template
// and the Go type need is exactly what lludp.Packet.DecodeFromBytes accepts
// and Unmarshal reads in full (FuzzFastBody holds the two paths equal).
func fastBodies(tmpl *lludp.Template) [numBodies]fastBody {
	var out [numBodies]fastBody
	for i, m := range fastTyped() {
		// The Go type's size: what Unmarshal reads. These encode without
		// error: fixed fields only.
		wire, _ := lludp.AppendMessage(nil, lludp.Header{}, m, nil)
		typed := len(wire) - lludp.HeaderSize - numberLen(m.MessageID())
		out[i] = fastBody{size: typed, typed: typed, read: fastRead[i]}
		msg := tmpl.Lookup(m.MessageID())
		if msg == nil {
			continue
		}
		size, fixed := 0, true
		for _, b := range msg.Blocks {
			if b.Kind != lludp.Single || b.FixedSize < 0 || b.FixedSize == 0 && len(b.Fields) > 0 {
				fixed = false
			}
			size += b.FixedSize
		}
		out[i].fixed, out[i].size = fixed, max(size, typed)
	}
	return out
}

// numberLen is the wire length of a message number (protocol.md §2.3).
func numberLen(id lludp.MessageID) int {
	switch id.Frequency {
	case lludp.High:
		return 1
	case lludp.Medium:
		return 2
	}
	return 4
}

// fields returns the body of a message of kind which, at least as long as
// the tracker reads of it (fastRead); nil if the message decodes but is too short for the type (as
// Unmarshal would fail, nothing is learned from it); an error if it does not
// decode.
func (t *Tracker) fields(which int, p []byte, h lludp.Header, end int) ([]byte, error) {
	fb := &t.body[which]
	if fb.fixed {
		if body, ok := t.peek(fb.size, fb.read, p, h, end); ok {
			return body, nil
		}
	}
	if err := t.packet.DecodeFromBytes(p); err != nil {
		return nil, err
	}
	if body := t.packet.Body(); len(body) >= fb.typed {
		return body, nil
	}
	return nil, nil
}

// peek returns the first read bytes of the body of datagram p, expanded,
// if the whole datagram decodes and its body holds size bytes; otherwise ok
// is false and the full decoder must judge it.
func (t *Tracker) peek(size, read int, p []byte, h lludp.Header, end int) (body []byte, ok bool) {
	skip := numberLen(h.ID) + int(h.Extra)
	if !h.Flags.ZeroCoded() {
		if start := lludp.HeaderSize + skip; start+size <= end {
			return p[start : start+read], true
		}
		return nil, false
	}
	if skip+read > len(t.expand) {
		return nil, false
	}
	total, ok := expandPrefix(t.expand[:skip+read], p[lludp.HeaderSize:end], lludp.MaxPacketSize-lludp.HeaderSize)
	if !ok || total < skip+size {
		return nil, false
	}
	return t.expand[skip : skip+read], true
}

// expandPrefix expands zero-coded src as lludp.ZeroDecode does, writing as
// much as dst holds, and returns the whole expanded length; ok is false
// where ZeroDecode into limit bytes would overflow. The expansion only
// grows, so it overflows exactly when the whole length passes limit: past
// dst the bytes are only counted.
func expandPrefix(dst, src []byte, limit int) (total int, ok bool) {
	o, i := 0, 0
	for i < len(src) && o < len(dst) {
		c := src[i]
		i++
		if c != 0 {
			dst[o] = c
			o++
			continue
		}
		zeros := zeroRun(src, &i)
		clear(dst[o:min(o+zeros, len(dst))])
		o += zeros
	}
	for i < len(src) {
		c := src[i]
		i++
		if c != 0 {
			o++
			continue
		}
		o += zeroRun(src, &i)
	}
	return o, o <= limit
}

// zeroRun is how many zeros the run of 00 bytes just read from src (at
// *i−1) expands to: one, 256 more for each further 00, and the count byte
// after them minus one (lludp.ZeroDecode). It advances *i past the run.
func zeroRun(src []byte, i *int) int {
	zeros := 1
	for *i < len(src) && src[*i] == 0 {
		zeros += 256
		*i++
	}
	if *i < len(src) {
		zeros += int(src[*i]) - 1
		*i++
	}
	return zeros
}

// learn takes what the tracker needs from the body of a message: into n
// what the measurements need, into c what the messages say about the
// agent. An error means the datagram is not valid LLUDP.
func (t *Tracker) learn(c *Circuit, n *note, d lludp.Datagram, h lludp.Header, end int) error {
	switch h.ID {
	case lludp.StartPingCheckID, lludp.CompletePingCheckID:
		which, kind := bodyStartPing, startPing
		if h.ID == lludp.CompletePingCheckID {
			which, kind = bodyCompletePing, completePing
		}
		body, err := t.fields(which, d.Payload, h, end)
		if body != nil {
			n.kind, n.ping = kind, body[0]
		}
		return err
	case lludp.UseCircuitCodeID:
		body, err := t.fields(bodyUseCircuitCode, d.Payload, h, end)
		if body != nil {
			c.identify(lludp.UUID(body[20:36]), lludp.UUID(body[4:20]), d.At)
			c.CircuitCode = binary.LittleEndian.Uint32(body)
		}
		return err
	case lludp.AgentUpdateID:
		body, err := t.fields(bodyAgentUpdate, d.Payload, h, end)
		if body != nil {
			c.identify(lludp.UUID(body[0:16]), lludp.UUID(body[16:32]), d.At)
		}
		return err
	case lludp.CompleteAgentMovementID:
		body, err := t.fields(bodyCompleteAgentMovement, d.Payload, h, end)
		if body != nil {
			c.identify(lludp.UUID(body[0:16]), lludp.UUID(body[16:32]), d.At)
			c.CircuitCode = binary.LittleEndian.Uint32(body[32:])
			c.ArrivedAt = d.At
		}
		return err
	}
	// The rest are rare or variable in size: decoded in full.
	p := &t.packet
	if err := p.DecodeFromBytes(d.Payload); err != nil {
		return err
	}
	switch h.ID {
	case lludp.LayerDataID:
		if len(p.Body()) > 0 {
			n.cat = lludp.LayerCategory(p.Body()[0])
		}
	case lludp.PacketAckID:
		if p.Unmarshal(&t.ack) == nil {
			n.kind = packetAck
		}
	case lludp.AgentThrottleID:
		if p.Unmarshal(&t.thr) != nil {
			break
		}
		// One with other IDs than the circuit's is not the viewer's, and a
		// simulator ignores it (protocol.md §13.1b).
		if c.Known() && (t.thr.AgentID != c.AgentID || t.thr.SessionID != c.SessionID) {
			c.IdentityConflicts++
			break
		}
		if c.wasInjected(t.thr.Throttles) {
			// fairgrid's own, seen on its way: neither the viewer's
			// request nor proof of its identity.
			break
		}
		c.ViewerThrottle, c.ViewerThrottleAt = t.thr.Throttles, d.At
		c.identify(t.thr.AgentID, t.thr.SessionID, d.At)
	}
	return nil
}
