package render

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"
)

// FuzzWriteHTML feeds the renderer reports whose numbers come from the
// fuzzer, NaN, infinities, zeros and negatives included (a damaged capture
// or a future engine bug): WriteHTML must return a valid page or an
// error, never panic (gonum's log axes panic on values ≤ 0 if let
// through). Seeds are the realistic report's own values.
func FuzzWriteHTML(f *testing.F) {
	seed := makeReport(41, 3, 20)
	for _, s := range seed.Seconds[:8] {
		var b []byte
		for _, x := range []float64{s.BitPerS, s.LossEventRate, *s.RTTMs, ptrOr(s.FairBitPerS, 0)} {
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
		}
		f.Add(b, uint8(3), uint16(20))
	}
	f.Add(bytes.Repeat([]byte{0}, 64), uint8(1), uint16(1))
	f.Add(bytes.Repeat([]byte{0xff}, 64), uint8(2), uint16(700))
	f.Fuzz(func(t *testing.T, data []byte, circuits uint8, seconds uint16) {
		next := func() float64 {
			if len(data) < 8 {
				return 1
			}
			x := math.Float64frombits(binary.LittleEndian.Uint64(data))
			data = data[8:]
			return x
		}
		r := makeReport(7, int(circuits%4)+1, int(seconds%200)+1)
		// scribble fuzzer values over every number the figures read
		for i := range r.Seconds {
			s := &r.Seconds[i]
			s.BitPerS, s.LossEventRate = next(), next()
			if i%3 == 0 {
				v, w := next(), next()
				s.FairBitPerS, s.RTTMs = &v, &w
			}
			s.ChannelBitPerS[i%5] = next()
		}
		for i := range r.Circuits {
			c := &r.Circuits[i]
			c.MeanBitPerS, c.MedianBitPerS, c.P25BitPerS, c.P75BitPerS, c.LossEventRate, c.MeanPayload = next(), next(), next(), next(), next(), next()
			v, w := next(), next()
			c.FairMeanS, c.RTTMs = &v, &w
		}
		for i := range r.Requests {
			r.Requests[i].TotalBitPerS = next()
			r.Requests[i].UnixMs += int64(next())
		}
		var b bytes.Buffer
		if err := WriteHTML(&b, r); err != nil {
			return
		}
		if _, err := checkPage(b.Bytes()); err != nil {
			t.Fatalf("invalid page: %v", err)
		}
	})
}

func ptrOr(p *float64, def float64) float64 {
	if p == nil {
		return def
	}
	return *p
}
