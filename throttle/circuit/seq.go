package circuit

// Sequence tracking for one direction of a circuit (protocol.md §3, §12).
//
// Sequence numbers are compared in serial-number arithmetic modulo 2^24
// until any number above 0xFFFFFF proves a 32-bit peer: the viewer and the
// Linden library wrap at 2^24, OpenSim and libomv at 2^32, and for distances
// within the window both give the same answer.
//
// A number missing from the sequence is pending until three later numbers
// have arrived (NDUPACK = 3, RFC 5348 §5.1): filled by an original in time
// it was reordering; otherwise it is lost. A resent packet that fills a
// pending number means the original was lost. Within the window of the
// last 1024 numbers, a number seen again is a duplicate — or, with the
// resent flag, a spurious resend: not a loss.

const (
	// seqWindow is how far back numbers are remembered: duplicates and
	// late arrivals older than that are counted as duplicates.
	seqWindow = 1024
	// maxJump is the largest forward jump taken as a gap of lost packets.
	// Anything larger is far beyond what a simulator has in flight (OpenSim
	// stalls at 50 unacked reliable packets): a restarted circuit or a
	// capture gap, so tracking restarts instead (protocol.md §12.2 rule 7).
	maxJump = seqWindow / 2
	// ndupack is the number of later arrivals that make a gap a loss.
	ndupack = 3
	// maxPendingRuns bounds the runs of missing numbers awaiting a verdict;
	// past it the oldest run is declared lost at once.
	maxPendingRuns = 16
)

// pendingRun is a run of missing numbers [from, to], seen between the
// arrivals of from−1 at tBefore and to+1 at tAfter.
type pendingRun struct {
	from, to        uint32
	later           uint16 // arrivals above the run since it was seen
	tBefore, tAfter int64  // unix nanoseconds
}

// arrival classifies one received sequence number.
type arrival uint8

const (
	arrivalNew        arrival = iota // the next number, or a jump ahead
	arrivalReordered                 // filled a pending gap, or arrived after being declared lost, without the resent flag
	arrivalResendFill                // a resend that filled a pending gap: the original was lost
	arrivalResendLate                // a resend of a number already declared lost
	arrivalSpurious                  // a resend of a number already received
	arrivalDuplicate                 // an original seen twice, or too old to judge
	arrivalResync                    // a jump too large to be loss: tracking restarted
)

// seqTracker follows one direction's sequence numbers.
type seqTracker struct {
	started bool
	wide    bool   // 32-bit peer
	hi      uint32 // highest number received
	tHi     int64
	seen    [seqWindow / 64]uint64 // bit (n mod seqWindow): n received, for n in (hi−seqWindow, hi]
	pending [maxPendingRuns]pendingRun
	npend   int
	resyncs uint64
}

// lossRecorder receives each number declared lost with its interpolated
// time (unix ns). An interface, not a func: a closure would allocate per
// datagram.
type lossRecorder interface{ lost(seq uint32, at int64) }

func (s *seqTracker) mask() uint32 {
	if s.wide {
		return 0xFFFFFFFF
	}
	return 0xFFFFFF
}

// dist is a − b in serial arithmetic: positive when a is after b.
func (s *seqTracker) dist(a, b uint32) int64 {
	if s.wide {
		return int64(int32(a - b))
	}
	d := (a - b) & 0xFFFFFF
	if d >= 1<<23 {
		return int64(d) - 1<<24
	}
	return int64(d)
}

func (s *seqTracker) bit(n uint32) (word int, m uint64) {
	i := n % seqWindow
	return int(i / 64), 1 << (i % 64)
}

func (s *seqTracker) isSeen(n uint32) bool {
	w, m := s.bit(n)
	return s.seen[w]&m != 0
}

func (s *seqTracker) mark(n uint32) {
	w, m := s.bit(n)
	s.seen[w] |= m
}

func (s *seqTracker) clear(n uint32) {
	w, m := s.bit(n)
	s.seen[w] &^= m
}

// observe records the arrival of seq at time at (unix ns), calling lost
// for every number it declares lost, and classifies the arrival.
func (s *seqTracker) observe(seq uint32, resent bool, at int64, rec lossRecorder) arrival {
	if seq > 0xFFFFFF && !s.wide {
		s.widen()
	}
	if !s.started {
		s.restart(seq, at)
		if resent {
			rec.lost(seq, at) // the first number seen is a resend: its original was lost
			return arrivalResendFill
		}
		return arrivalNew
	}
	switch d := s.dist(seq, s.hi); {
	case d > maxJump:
		s.resyncs++
		s.restart(seq, at)
		return arrivalResync
	case d > 0:
		// Slide the window: numbers leaving it are forgotten.
		for n := (s.hi + 1) & s.mask(); n != (seq+1)&s.mask(); n = (n + 1) & s.mask() {
			s.clear(n)
		}
		if d > 1 {
			s.addPending((s.hi+1)&s.mask(), (seq-1)&s.mask(), s.tHi, at, rec)
		}
		kind := arrivalNew
		if resent {
			// A resend ahead of everything received: its original never came.
			rec.lost(seq, at)
			kind = arrivalResendFill
		}
		s.hi, s.tHi = seq, at
		s.mark(seq)
		s.countLater(seq, rec)
		return kind
	case d > -seqWindow:
		if s.isSeen(seq) {
			if resent {
				return arrivalSpurious
			}
			return arrivalDuplicate
		}
		s.mark(seq)
		sent, wasPending := s.removePending(seq, rec)
		s.countLater(seq, rec)
		switch {
		case wasPending && resent:
			rec.lost(seq, sent)
			return arrivalResendFill
		case wasPending:
			return arrivalReordered
		case resent:
			return arrivalResendLate
		}
		return arrivalReordered // arrived after it was declared lost
	}
	if resent {
		return arrivalSpurious
	}
	return arrivalDuplicate
}

// continues reports whether seq follows the highest number within the
// jump limit: 0 after 0xFFFFFF is a Linden peer wrapping, while 0 early in
// a circuit is OpenSim's out-of-band ack (protocol.md §3).
func (s *seqTracker) continues(seq uint32) bool {
	if !s.started {
		return false
	}
	d := s.dist(seq, s.hi)
	return d > 0 && d <= maxJump
}

func (s *seqTracker) restart(seq uint32, at int64) {
	s.started, s.hi, s.tHi = true, seq, at
	s.seen = [seqWindow / 64]uint64{}
	s.npend = 0
	s.mark(seq)
}

func (s *seqTracker) addPending(from, to uint32, tBefore, tAfter int64, rec lossRecorder) {
	if s.npend == maxPendingRuns {
		s.declare(0, rec)
	}
	s.pending[s.npend] = pendingRun{from: from, to: to, tBefore: tBefore, tAfter: tAfter}
	s.npend++
}

// countLater counts an arrival of seq as later than every pending run below
// it, and declares the runs that have had ndupack later arrivals.
func (s *seqTracker) countLater(seq uint32, rec lossRecorder) {
	for i := 0; i < s.npend; {
		r := &s.pending[i]
		if s.dist(seq, r.to) > 0 {
			r.later++
		}
		if r.later >= ndupack {
			s.declare(i, rec)
			continue
		}
		i++
	}
}

// declare reports every number of pending run i as lost, at times
// interpolated between its neighbours' arrivals (RFC 5348 §5.2).
func (s *seqTracker) declare(i int, rec lossRecorder) {
	s.declareRun(s.pending[i], rec)
	copy(s.pending[i:], s.pending[i+1:s.npend])
	s.npend--
}

func (s *seqTracker) declareRun(r pendingRun, rec lossRecorder) {
	span := s.dist(r.to, r.from) + 2 // from−1 … to+1
	if span < 2 || span > maxJump+1 {
		return // cannot happen for a run this tracker made; never loop on one
	}
	n := r.from
	for k := int64(1); k < span; k++ {
		rec.lost(n, r.tBefore+(r.tAfter-r.tBefore)*k/span)
		n = (n + 1) & s.mask()
	}
}

// widen switches to 32-bit arithmetic once a number above 0xFFFFFF proves
// the peer counts that far. Pending runs that wrapped at 2^24 cannot come
// from such a peer and are dropped.
func (s *seqTracker) widen() {
	s.wide = true
	kept := 0
	for _, r := range s.pending[:s.npend] {
		if r.from <= r.to {
			s.pending[kept] = r
			kept++
		}
	}
	s.npend = kept
}

// removePending takes seq out of its pending run, splitting the run; it
// reports whether seq was pending and, if so, its interpolated send time.
func (s *seqTracker) removePending(seq uint32, rec lossRecorder) (sent int64, ok bool) {
	for i := 0; i < s.npend; i++ {
		r := s.pending[i]
		if s.dist(seq, r.from) < 0 || s.dist(r.to, seq) < 0 {
			continue
		}
		span := s.dist(r.to, r.from) + 2
		sent = r.tBefore + (r.tAfter-r.tBefore)*(s.dist(seq, r.from)+1)/span
		switch {
		case r.from == r.to:
			copy(s.pending[i:], s.pending[i+1:s.npend])
			s.npend--
		case seq == r.from:
			s.pending[i].from = (seq + 1) & s.mask()
		case seq == r.to:
			s.pending[i].to = (seq - 1) & s.mask()
		case s.npend == maxPendingRuns:
			// No room to split: the lower part is older; declare it now.
			lower := r
			lower.to = (seq - 1) & s.mask()
			s.declareRun(lower, rec)
			s.pending[i].from = (seq + 1) & s.mask()
		default:
			hi := r
			hi.from = (seq + 1) & s.mask()
			s.pending[i].to = (seq - 1) & s.mask()
			copy(s.pending[i+2:], s.pending[i+1:s.npend])
			s.pending[i+1] = hi
			s.npend++
		}
		return sent, true
	}
	return 0, false
}
