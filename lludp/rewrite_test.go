package lludp

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// The AgentThrottle byte examples of protocol.md §6.3, written from the
// viewer's sendToSim and not by our encoder: the viewer's default split,
// reliable, seq 42, uncoded (79 B) and in the zero-coded form the viewer
// sends (78 B). No real AgentThrottle exists in ../shared/testdata/real:
// the 2017 datagrams are simulator→viewer and the 2026 capture starts
// after login (SOURCES.md).
var (
	docThrottleUncoded = unhex(`40 00 00 00 2a 00 ff ff 00 51 11 11 11 11 22 22 33 33 44 44 55 55 55 55 55 55
		66 66 66 66 77 77 88 88 99 99 aa aa aa aa aa aa 15 cd 5b 07 00 00 00 00 1c
		00 00 e1 48 00 00 9b 48 00 00 78 47 00 00 78 47 00 00 bf 49 00 00 bf 49 00 00 0c 49`)
	docThrottleCoded = unhex(`c0 00 00 00 2a 00 ff ff 00 01 51 11 11 11 11 22 22 33 33 44 44 55 55 55 55 55 55
		66 66 66 66 77 77 88 88 99 99 aa aa aa aa aa aa 15 cd 5b 07 00 04 1c
		00 02 e1 48 00 02 9b 48 00 02 78 47 00 02 78 47 00 02 bf 49 00 02 bf 49 00 02 0c 49`)
)

// realAckTrailer returns the appended acks of the real OpenSim
// AvatarAnimation (opensim-networking-2017/appended_acks.bin: one ack, 4),
// count byte included, to graft onto AgentThrottles.
func realAckTrailer(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(realDir(t), "opensim-networking-2017/appended_acks.bin"))
	if err != nil {
		t.Fatal(err)
	}
	_, acks, end, err := ParseHeader(b)
	if err != nil || acks.Len() != 1 || acks.At(0) != 4 {
		t.Fatalf("appended_acks.bin: acks %v, %v; MANIFEST.tsv says one, 4", acks.AppendTo(nil), err)
	}
	return b[end:]
}

// withTrailer returns datagram with flags added and trailer appended.
func withTrailer(datagram []byte, flags Flags, trailer []byte) []byte {
	b := append(slices.Clone(datagram), trailer...)
	b[0] |= byte(flags)
	return b
}

// withFlags returns datagram with its flags byte set to flags.
func withFlags(datagram []byte, flags Flags) []byte {
	b := slices.Clone(datagram)
	b[0] = byte(flags)
	return b
}

// fairgridRequest is a request of the shape fairgrid sends: 800 kbit/s in
// the viewer's split, as OpenSim applied it in protocol.md §13.1b.
var fairgridRequest = [NumCategories]float32{80000, 88000, 17000, 17000, 240000, 240000, 116000}

// decodeThrottle decodes b completely, as a simulator would.
func decodeThrottle(t *testing.T, b []byte) (Header, []uint32, AgentThrottle) {
	t.Helper()
	var p Packet
	if err := p.DecodeFromBytes(b); err != nil {
		t.Fatalf("decode %x: %v", b, err)
	}
	var m AgentThrottle
	if err := p.Unmarshal(&m); err != nil {
		t.Fatalf("unmarshal %x: %v", b, err)
	}
	return p.Header, p.Acks.AppendTo(nil), m
}

// checkReplaced checks that out decodes to in's header, acks and fields,
// with only the throttles replaced by want, and that its zero-coding
// follows the viewer's rule: coded when in was and coding shrinks it.
func checkReplaced(t *testing.T, in, out []byte, want [NumCategories]float32) {
	t.Helper()
	hIn, acksIn, mIn := decodeThrottle(t, in)
	hOut, acksOut, mOut := decodeThrottle(t, out)
	if hOut.Flags&^FlagZeroCoded != hIn.Flags&^FlagZeroCoded || hOut.Sequence != hIn.Sequence || hOut.Extra != hIn.Extra || hOut.ID != hIn.ID {
		t.Errorf("header %+v, want %+v (zero-coding aside)", hOut, hIn)
	}
	if !slices.Equal(acksOut, acksIn) {
		t.Errorf("acks %v, want %v", acksOut, acksIn)
	}
	if mOut.AgentData != mIn.AgentData || mOut.CircuitCode != mIn.CircuitCode || mOut.GenCounter != mIn.GenCounter || mOut.ThrottlesLen != ThrottlesSize {
		t.Errorf("fields %+v, want %+v", mOut, mIn)
	}
	for i := range want {
		if math.Float32bits(mOut.Throttles[i]) != math.Float32bits(want[i]) {
			t.Errorf("throttle %v = %v, want %v", Category(i), mOut.Throttles[i], want[i])
		}
	}
	// The uncoded length is the input's, whose Throttles field had the
	// same size: coding is kept only if it is strictly shorter.
	_, _, endIn, _ := ParseHeader(in)
	var expanded Packet
	_ = expanded.DecodeFromBytes(in)
	uncoded := len(expanded.Bytes()) + len(in) - endIn
	if coded := hOut.Flags.ZeroCoded(); coded != (hIn.Flags.ZeroCoded() && len(out) < uncoded) || (!coded && len(out) != uncoded) {
		t.Errorf("zero-coded %v with %d bytes, uncoded %d, input coded %v", coded, len(out), uncoded, hIn.Flags.ZeroCoded())
	}
}

func TestAppendReplacedThrottles(t *testing.T) {
	trailer := realAckTrailer(t)
	// Throttles whose bytes hold no zeros leave coding nothing to gain but
	// the GenCounter's four zeros; all-zero throttles shrink a lot.
	noZeros := [NumCategories]float32{1.1, 2.2, 3.3, 4.4, 5.5, 6.6, 7.7}
	extra := slices.Concat(docThrottleUncoded[:5], []byte{2}, docThrottleUncoded[6:10], []byte{0xEE, 0xEE}, docThrottleUncoded[10:])
	for _, tc := range []struct {
		name      string
		datagram  []byte
		throttles [NumCategories]float32
	}{
		{"uncoded", docThrottleUncoded, fairgridRequest},
		{"zero-coded", docThrottleCoded, fairgridRequest},
		{"zero-coded, real acks", withTrailer(docThrottleCoded, FlagAcks, trailer), fairgridRequest},
		{"uncoded, real acks, resent", withTrailer(docThrottleUncoded, FlagAcks|FlagResent, trailer), fairgridRequest},
		{"zero-coded, acks flag with no acks", withTrailer(docThrottleCoded, FlagAcks, []byte{0}), fairgridRequest},
		{"zero-coded to all zeros", withTrailer(docThrottleCoded, FlagAcks, trailer), [NumCategories]float32{}},
		{"zero-coded to no zero bytes", docThrottleCoded, noZeros},
		{"unreliable zero-coded, as injected", withFlags(docThrottleCoded, FlagZeroCoded), fairgridRequest},
		{"trailing bytes kept", append(slices.Clone(docThrottleUncoded), 0xAB, 0, 0xCD), fairgridRequest},
		{"extra header kept", extra, fairgridRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix := []byte("kept")
			out, err := AppendReplacedThrottles(prefix, tc.datagram, tc.throttles)
			if err != nil {
				t.Fatal(err)
			}
			// The swap returns what the viewer asked for, as decoded.
			swapped, was, err := AppendSwappedThrottles(nil, tc.datagram, tc.throttles)
			if _, _, orig := decodeThrottle(t, tc.datagram); err != nil || was != orig.Throttles || !bytes.Equal(swapped, out[len(prefix):]) {
				t.Errorf("swap: %v, was %v, want %v and the same datagram as the replacement", err, was, orig.Throttles)
			}
			if !bytes.Equal(out[:len(prefix)], prefix) {
				t.Fatalf("dst's bytes changed: %q", out[:len(prefix)])
			}
			out = out[len(prefix):]
			checkReplaced(t, tc.datagram, out, tc.throttles)
			if bytes.HasSuffix(tc.datagram, trailer) && !bytes.HasSuffix(out, trailer) {
				t.Errorf("ack trailer changed: %x, want it to end in %x", out, trailer)
			}
		})
	}
}

// TestReplacedThrottlesMatchesEncoder: for an ordinary AgentThrottle the
// result is byte for byte what AppendMessage writes for the same header,
// fields and acks, and replacing the throttles by the ones already there
// gives the document's bytes back unchanged.
func TestReplacedThrottlesMatchesEncoder(t *testing.T) {
	for _, in := range [][]byte{docThrottleUncoded, docThrottleCoded, withTrailer(docThrottleCoded, FlagAcks|FlagResent, realAckTrailer(t))} {
		same, err := AppendReplacedThrottles(nil, in, viewerSplit)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(same, in) {
			t.Errorf("same throttles changed the datagram\n got %x\nwant %x", same, in)
		}
		out, err := AppendReplacedThrottles(nil, in, fairgridRequest)
		if err != nil {
			t.Fatal(err)
		}
		h, acks, m := decodeThrottle(t, in)
		m.Throttles = fairgridRequest
		want, err := AppendMessage(nil, h, &m, acks)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out, want) {
			t.Errorf("flags %v:\n got %x\nwant %x (AppendMessage)", h.Flags, out, want)
		}
	}
}

// TestReplaceThrottlesRefuses: every real datagram that is not an
// AgentThrottle, and every malformed AgentThrottle, is an error with the
// right sentinel and leaves dst as it was.
func TestReplaceThrottlesRefuses(t *testing.T) {
	dir := realDir(t)
	type refusal struct {
		name     string
		datagram []byte
		want     error
	}
	var cases []refusal
	for _, r := range readManifest(t, dir) {
		b, err := os.ReadFile(filepath.Join(dir, r.path))
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, refusal{r.path, b, ErrWrongMessage})
	}
	for _, v := range readVectors(t) {
		cases = append(cases, refusal{v.id, v.raw, ErrWrongMessage})
	}
	shortThrottles := slices.Clone(docThrottleUncoded[:len(docThrottleUncoded)-8])
	shortThrottles[50] = ThrottlesSize - 8
	longThrottles := append(slices.Clone(docThrottleUncoded), 0, 0, 0, 0)
	longThrottles[50] = ThrottlesSize + 4
	bomb := append(slices.Clone(docThrottleCoded[:11]), bytes.Repeat([]byte{0, 0}, 40)...)
	cases = append(cases,
		refusal{"Throttles of 20 bytes", shortThrottles, ErrFieldSize},
		refusal{"Throttles of 32 bytes", longThrottles, ErrFieldSize},
		refusal{"zero-coding past 8192 bytes", bomb, ErrZeroCodeOverflow},
		refusal{"ack count past the datagram", withTrailer(docThrottleUncoded, FlagAcks, []byte{200}), ErrAckTrailer},
		refusal{"extra header past the end", slices.Concat(docThrottleUncoded[:5], []byte{200}, docThrottleUncoded[6:]), ErrTruncated},
	)
	// Every truncation of both forms.
	for _, in := range [][]byte{docThrottleUncoded, docThrottleCoded} {
		for n := range len(in) - 1 {
			cases = append(cases, refusal{"cut", in[:n], ErrTruncated})
		}
	}
	dst := make([]byte, 3, 4096)
	for _, tc := range cases {
		out, err := AppendReplacedThrottles(dst, tc.datagram, fairgridRequest)
		if err == nil {
			t.Errorf("%s (%d B): no error, output %x", tc.name, len(tc.datagram), out)
			continue
		}
		if !errors.Is(err, tc.want) {
			t.Errorf("%s (%d B): %v, want %v", tc.name, len(tc.datagram), err, tc.want)
		}
		if len(out) != len(dst) || &out[:1][0] != &dst[:1][0] {
			t.Errorf("%s: dst changed on error", tc.name)
		}
	}
}

// TestReplaceThrottlesAllocs: with a reused buffer, no allocation.
func TestReplaceThrottlesAllocs(t *testing.T) {
	in := withTrailer(docThrottleCoded, FlagAcks, realAckTrailer(t))
	buf := make([]byte, 0, 2048)
	f := func() {
		var err error
		if buf, err = AppendReplacedThrottles(buf[:0], in, fairgridRequest); err != nil {
			t.Fatal(err)
		}
	}
	if n := testing.AllocsPerRun(100, f); n != 0 {
		t.Errorf("%v allocations per datagram, want 0", n)
	}
}

// FuzzReplaceThrottles: no input panics; a datagram is rewritten exactly
// when it decodes as a well-formed AgentThrottle, and then the result
// decodes to the same header, acks and fields with only the throttles new.
func FuzzReplaceThrottles(f *testing.F) {
	f.Add(docThrottleUncoded, float32(80000))
	f.Add(docThrottleCoded, float32(0))
	f.Add(append(slices.Clone(docThrottleCoded), 0), float32(1))
	f.Add(withTrailer(docThrottleCoded, FlagAcks|FlagResent, []byte{0, 0, 0, 5, 0, 0, 0, 6, 2}), float32(1.5))
	if dir, err := filepath.Abs("../../shared/testdata/real"); err == nil {
		if b, err := os.ReadFile(filepath.Join(dir, "opensim-networking-2017/appended_acks.bin")); err == nil {
			f.Add(b, float32(2))
			_, _, end, _ := ParseHeader(b)
			f.Add(withTrailer(docThrottleCoded, FlagAcks, b[end:]), float32(3))
		}
	}
	var p Packet
	f.Fuzz(func(t *testing.T, b []byte, x float32) {
		throttles := fairgridRequest
		throttles[int(math.Float32bits(x))%NumCategories] = x
		out, err := AppendReplacedThrottles(nil, b, throttles)
		wellFormed := false
		if p.DecodeFromBytes(b) == nil && p.ID == AgentThrottleID {
			var m AgentThrottle
			wellFormed = p.Unmarshal(&m) == nil && m.ThrottlesLen == ThrottlesSize
		}
		if (err == nil) != wellFormed {
			t.Fatalf("rewrite error %v, well-formed AgentThrottle %v: %x", err, wellFormed, b)
		}
		if err != nil {
			if out != nil {
				t.Fatalf("output %x with error %v", out, err)
			}
			return
		}
		checkReplaced(t, b, out, throttles)
	})
}

// BenchmarkReplaceThrottles measures the rewrite against the obvious way
// (full decode, Unmarshal and AppendMessage of the same datagram) in the
// same run.
func BenchmarkReplaceThrottles(b *testing.B) {
	in := withTrailer(docThrottleCoded, FlagAcks, realAckTrailer(b))
	buf := make([]byte, 0, 2048)
	b.Run("AppendReplacedThrottles", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			buf, _ = AppendReplacedThrottles(buf[:0], in, fairgridRequest)
		}
	})
	b.Run("DecodeUnmarshalAppend", func(b *testing.B) {
		b.ReportAllocs()
		var p Packet
		var m AgentThrottle
		acks := make([]uint32, 0, MaxAppendedAcks)
		for b.Loop() {
			_ = p.DecodeFromBytes(in)
			_ = p.Unmarshal(&m)
			m.Throttles = fairgridRequest
			acks = p.Acks.AppendTo(acks[:0])
			buf, _ = AppendMessage(buf[:0], p.Header, &m, acks)
		}
	})
}

// A relay replaces the throttles of the viewer's AgentThrottle and passes
// every other datagram on: ParseHeader tells them apart without decoding.
func ExampleAppendReplacedThrottles() {
	fromViewer := docThrottleCoded // reliable, zero-coded, seq 42
	request := [NumCategories]float32{80000, 88000, 17000, 17000, 240000, 240000, 116000}
	out := fromViewer
	if h, _, _, err := ParseHeader(fromViewer); err == nil && h.ID == AgentThrottleID {
		replaced, err := AppendReplacedThrottles(make([]byte, 0, 2048), fromViewer, request)
		if err == nil {
			out = replaced
		}
	}
	var p Packet
	var m AgentThrottle
	if err := p.DecodeFromBytes(out); err != nil {
		panic(err)
	}
	if err := p.Unmarshal(&m); err != nil {
		panic(err)
	}
	fmt.Println(p.Flags, p.Sequence, m.AgentID, m.CircuitCode)
	fmt.Println(m.Throttles, m.Total())
	// Each of these floats has one zero byte, which coding would turn into
	// two: the coded form is longer, so it goes uncoded, as the viewer's
	// encoder would send it.

	// Output:
	// reliable 42 11111111-2222-3333-4444-555555555555 123456789
	// [80000 88000 17000 17000 240000 240000 116000] 798000
}
