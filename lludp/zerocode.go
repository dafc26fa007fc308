package lludp

// ZeroDecode expands zero-coded src into dst with the Linden viewer's
// semantics (viewer message.cpp zeroCodeExpand; protocol.md §4.3): a 00 byte
// emits one zero, each further 00 right after it 256 more, and the next byte
// c then c−1 more; a 00 at the very end emits one zero. So 00 c is c zeros,
// 00 00 c is 256+c, and a trailing 00 is one.
//
// It returns the number of bytes written. Output beyond len(dst) is
// ErrZeroCodeOverflow, with off set to the expanded length reached: hostile
// input such as a datagram of 00 00 00 … never expands without bound.
func ZeroDecode(dst, src []byte) (n int, err error) {
	o := 0
	for i := 0; i < len(src); {
		c := src[i]
		i++
		if c != 0 {
			if o >= len(dst) {
				return o, ErrZeroCodeOverflow
			}
			dst[o] = c
			o++
			continue
		}
		zeros := 1
		for i < len(src) && src[i] == 0 {
			zeros += 256
			i++
		}
		if i < len(src) {
			zeros += int(src[i]) - 1
			i++
		}
		if zeros > len(dst)-o {
			return o, ErrZeroCodeOverflow
		}
		clear(dst[o : o+zeros])
		o += zeros
	}
	return o, nil
}

// AppendZeroEncode appends the zero-coded form of src: each run of zeros
// becomes 00 k with k at most 255, longer runs continue in a new 00 k, as
// the viewer and OpenSim encoders write them (protocol.md §4.2). Whether to
// send the coded form is the caller's choice (see AppendPacket).
func AppendZeroEncode(dst, src []byte) []byte {
	for i := 0; i < len(src); {
		if src[i] != 0 {
			dst = append(dst, src[i])
			i++
			continue
		}
		run := 0
		for i < len(src) && src[i] == 0 && run < 255 {
			run++
			i++
		}
		dst = append(dst, 0, byte(run))
	}
	return dst
}
