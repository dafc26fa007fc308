package lludp

import "encoding/binary"

// Packet is a decoded datagram: header, appended acks, message and a view of
// every block and field. It follows gopacket's decoding contract:
// DecodeFromBytes resets all state, and the Packet may alias the bytes it was
// given (they must stay unchanged while the Packet is in use); zero-coded
// datagrams are expanded into a buffer the Packet owns and reuses. After an
// error the Packet's state is undefined. A Packet is reused across datagrams
// and, once its spans have grown to the largest message seen, decodes
// without allocating.
//
// Template selects the message template; nil means Builtin().
type Packet struct {
	Header
	Acks     AckList
	Template *Template

	msg     *Message
	data    []byte // the datagram without acks, zero-expanded; aliases input or buf
	bodyOff int
	blocks  []blockSpan
	fields  []fieldSpan
	buf     [MaxPacketSize]byte
	decoded bool // the last DecodeFromBytes succeeded: blocks and fields are whole
}

type blockSpan struct {
	count int32
	first int32 // index into fields of instance 0, field 0
}

type fieldSpan struct {
	off, n uint16 // a Variable field's span excludes its length prefix
}

// DecodeFromBytes decodes b completely: header, acks, zero-coding, message
// number and all blocks (protocol.md §2.7). A missing trailing Variable block
// decodes as zero instances and extra trailing bytes are ignored, as in the
// viewer (lltemplatemessagereader.cpp decodeData). Errors are *DecodeError
// values wrapping the sentinels of errors.go.
func (p *Packet) DecodeFromBytes(b []byte) error {
	p.msg, p.data, p.bodyOff, p.decoded = nil, nil, 0, false
	p.blocks, p.fields = p.blocks[:0], p.fields[:0]
	h, acks, end, err := ParseHeader(b)
	if err != nil {
		return err
	}
	p.Header, p.Acks = h, acks
	if h.Flags.ZeroCoded() {
		copy(p.buf[:HeaderSize], b)
		n, err := ZeroDecode(p.buf[HeaderSize:], b[HeaderSize:end])
		if err != nil {
			return decodeError(HeaderSize+n, nil, "zero-coding", err)
		}
		p.data = p.buf[:HeaderSize+n]
	} else {
		p.data = b[:end]
	}
	t := p.Template
	if t == nil {
		t = Builtin()
	}
	// The number is read again from the expanded bytes: ParseHeader's fast
	// paths must agree with it, which FuzzDecode checks.
	id, n, _ := parseMessageNumber(p.data[HeaderSize:])
	msg := t.Lookup(id)
	if msg == nil {
		return decodeError(HeaderSize, nil, "message number", ErrUnknownMessage)
	}
	p.msg, p.Header.ID = msg, msg.ID
	p.bodyOff = HeaderSize + n + int(h.Extra)
	if p.bodyOff > len(p.data) {
		return decodeError(len(p.data), msg, "extra header", ErrTruncated)
	}
	if err := p.walk(); err != nil {
		return err
	}
	p.decoded = true
	return nil
}

// walk records where every block instance and field lies in p.data.
func (p *Packet) walk() error {
	data, off := p.data, p.bodyOff
	for bi := range p.msg.Blocks {
		blk := &p.msg.Blocks[bi]
		count := blk.Count
		if blk.Kind == Variable {
			if off >= len(data) {
				count = 0 // a missing trailing Variable block
			} else {
				count = int(data[off])
				off++
			}
		} else if off >= len(data) && len(blk.Fields) > 0 {
			return decodeError(off, p.msg, blk.Name, ErrMissingBlock)
		}
		p.blocks = append(p.blocks, blockSpan{count: int32(count), first: int32(len(p.fields))})
		if blk.FixedSize >= 0 {
			size := count * blk.FixedSize
			if size > len(data)-off {
				return p.fieldError(blk, off)
			}
			for range count {
				for _, f := range blk.Fields {
					p.fields = append(p.fields, fieldSpan{uint16(off), uint16(f.Size)})
					off += f.Size
				}
			}
			continue
		}
		for range count {
			for fi := range blk.Fields {
				f := &blk.Fields[fi]
				if f.Type != TypeVariable {
					if f.Size > len(data)-off {
						return decodeError(off, p.msg, blk.Name+"."+f.Name, ErrTruncated)
					}
					p.fields = append(p.fields, fieldSpan{uint16(off), uint16(f.Size)})
					off += f.Size
					continue
				}
				if f.Size > len(data)-off {
					return decodeError(off, p.msg, blk.Name+"."+f.Name, ErrVariableLength)
				}
				var n int
				if f.Size == 1 {
					n = int(data[off])
				} else {
					n = int(binary.LittleEndian.Uint16(data[off:]))
				}
				off += f.Size
				if n > len(data)-off {
					return decodeError(off, p.msg, blk.Name+"."+f.Name, ErrVariableLength)
				}
				p.fields = append(p.fields, fieldSpan{uint16(off), uint16(n)})
				off += n
			}
		}
	}
	return nil
}

// fieldError finds the first fixed-size field of blk that passes the end.
func (p *Packet) fieldError(blk *Block, off int) error {
	for range max(blk.Count, 256) {
		for _, f := range blk.Fields {
			if f.Size > len(p.data)-off {
				return decodeError(off, p.msg, blk.Name+"."+f.Name, ErrTruncated)
			}
			off += f.Size
		}
	}
	return decodeError(off, p.msg, blk.Name, ErrTruncated)
}

// Message returns the decoded message's template entry.
func (p *Packet) Message() *Message { return p.msg }

// Bytes returns the datagram without its appended acks, zero-expanded.
// Offsets in DecodeError count into it.
func (p *Packet) Bytes() []byte { return p.data }

// Body returns the message body, after the message number and extra header.
func (p *Packet) Body() []byte { return p.data[p.bodyOff:] }

// Count returns the number of instances of block bi, or 0 if there is no
// such block.
func (p *Packet) Count(bi int) int {
	if uint(bi) >= uint(len(p.blocks)) {
		return 0
	}
	return int(p.blocks[bi].count)
}

// Field returns the raw bytes of field fi of instance inst of block bi,
// aliasing the datagram: a Variable field without its length prefix, any
// other field at its wire size. It returns nil if there is no such field.
func (p *Packet) Field(bi, inst, fi int) []byte {
	if uint(bi) >= uint(len(p.blocks)) {
		return nil
	}
	nf := len(p.msg.Blocks[bi].Fields)
	span := p.blocks[bi]
	if uint(inst) >= uint(span.count) || uint(fi) >= uint(nf) {
		return nil
	}
	s := p.fields[int(span.first)+inst*nf+fi]
	return p.data[s.off : int(s.off)+int(s.n)]
}
