package audit

import (
	"errors"
	"io"
	"slices"

	"github.com/fairgrid/fairgrid/capture"
	"github.com/fairgrid/fairgrid/capture/input"
	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/throttle/circuit"
)

// Input is one capture to audit.
type Input struct {
	Name   string
	Reader *capture.Reader
	// Counter, if set, counts the bytes read of the file: FileResult.Bytes
	// and the progress bar read it.
	Counter *CountingReader
	// Asked, if set, says whether an input that ends with an error was
	// stopped on purpose (a live capture's --duration), not damaged.
	Asked func() bool
}

// CountingReader counts the bytes read through it: capture/input's,
// which every opened input has.
type CountingReader = input.CountingReader

// progressEvery is how many datagrams pass between calls of the progress
// hook: rare enough to cost nothing, often enough (a few times a second
// at the slowest) for a bar.
const progressEvery = 1 << 16

// BeginFile starts a file whose datagrams the following Observe calls
// carry, for a caller that reads datagrams itself; it returns its index in
// Report().Files. Its Datagrams and Bytes count what Observe was given
// (payload bytes).
func (a *Auditor) BeginFile(name string) int {
	a.files = append(a.files, FileResult{Name: name})
	a.file = len(a.files) - 1
	return a.file
}

// Datagrams audits datagrams held in memory as one file called name (the
// lab's viewer, as its host saw it): sorted by time first, since a tap
// sees them in the order they left or arrived, nearly so. ds is sorted in
// place.
func Datagrams(cfg Config, name string, ds []lludp.Datagram) (*Report, error) {
	a, err := New(cfg)
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(ds, func(x, y lludp.Datagram) int { return x.At.Compare(y.At) })
	a.BeginFile(name)
	for _, d := range ds {
		a.Observe(d)
	}
	return a.Report(), nil
}

// Read audits the inputs, merged in time order so that a circuit keeps
// its identity across files (a capture split by size, or captures of one
// session from two hosts). Every input is read to its end or to the first
// damage, which its FileResult reports; a damaged input does not stop the
// others. progress, if not nil, is called every few tens of thousands of
// datagrams.
func (a *Auditor) Read(inputs []Input, progress func()) {
	heads := make([]head, len(inputs))
	for i, in := range inputs {
		heads[i] = head{in: in, file: a.BeginFile(in.Name)}
		heads[i].advance(a)
	}
	var n int
	if len(heads) == 1 {
		// One input: no merge, the common case at full speed, without
		// copying each datagram into its head.
		h := &heads[0]
		a.file = h.file
		if h.ok {
			a.observe(h)
		}
		for h.ok {
			d, err := h.in.Reader.Next()
			if err != nil {
				h.end(a, err)
				return
			}
			if err := a.Observe(d); err != nil {
				a.refused(h.file, err)
			}
			if n++; n == progressEvery && progress != nil {
				n = 0
				progress()
			}
		}
		return
	}
	for {
		var next *head
		for i := range heads {
			h := &heads[i]
			if h.ok && (next == nil || h.d.At.Before(next.d.At)) {
				next = h
			}
		}
		if next == nil {
			return
		}
		a.file = next.file
		a.observe(next)
		next.advance(a)
		if n++; n == progressEvery && progress != nil {
			n = 0
			progress()
		}
	}
}

// head is an input's next datagram, valid until the input's next read.
type head struct {
	in   Input
	file int
	d    capture.Datagram
	ok   bool
}

// advance reads the input's next datagram, or ends its FileResult.
func (h *head) advance(a *Auditor) {
	d, err := h.in.Reader.Next()
	if err == nil {
		h.d, h.ok = d, true
		return
	}
	h.end(a, err)
}

// end closes an input's FileResult at err: the end of the file, or where
// and why it broke.
func (h *head) end(a *Auditor, err error) {
	h.ok = false
	f := &a.files[h.file]
	st := h.in.Reader.Stats()
	f.Datagrams = int64(st.Datagrams)
	f.Bytes = int64(st.Bytes)
	if h.in.Counter != nil {
		f.Bytes = h.in.Counter.N
	}
	for r := range st.Skipped {
		if k := st.Skipped[r]; k > 0 {
			reason := capture.SkipReason(r)
			if reason == capture.SkipPort {
				f.NotLLUDP += int64(k)
				a.countReason(f, "other_port", int64(k))
			} else {
				a.countReason(f, "frame_"+reason.String(), int64(k))
			}
		}
	}
	if errors.Is(err, io.EOF) || h.in.Asked != nil && h.in.Asked() {
		return
	}
	var be *capture.BrokenError
	at := f.Bytes
	if errors.As(err, &be) {
		at = be.Offset
	}
	f.StoppedAt = &at
	f.StopReason = err.Error()
}

// observe measures a head's datagram and counts what it was not.
func (a *Auditor) observe(h *head) {
	if err := a.Observe(h.d); err != nil {
		a.refused(h.file, err)
	}
}

// refused counts a datagram of file the tracker did not measure.
func (a *Auditor) refused(file int, err error) {
	f := &a.files[file]
	switch reason := reasonOf(err); reason {
	case "not_circuit":
		a.countReason(f, reason, 1)
	case "unknown_message", "malformed_body":
		f.Undecoded++
		a.countReason(f, reason, 1)
	default:
		f.NotLLUDP++
		a.countReason(f, reason, 1)
	}
}

func (a *Auditor) countReason(f *FileResult, reason string, n int64) {
	if f.UndecodedBy == nil {
		f.UndecodedBy = map[string]int64{}
	}
	f.UndecodedBy[reason] += n
}

// reasonOf names why the tracker refused a datagram, with the names
// circuit.InvalidReason gives its counters.
func reasonOf(err error) string {
	switch {
	case errors.Is(err, circuit.ErrNotCircuit):
		return "not_circuit"
	case errors.Is(err, lludp.ErrAckTrailer):
		return circuit.InvalidAckTrailer.String()
	case errors.Is(err, lludp.ErrUnknownMessage):
		return circuit.InvalidUnknownMessage.String()
	case errors.Is(err, lludp.ErrZeroCodeOverflow):
		return circuit.InvalidZeroCode.String()
	case errors.Is(err, lludp.ErrTruncated):
		return circuit.InvalidTruncated.String()
	}
	return circuit.InvalidBody.String()
}
