package capture

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/capture/capturetest"
	"github.com/gopacket/gopacket/pcapgo"
)

// pcapFile builds a pcap file by hand: a header and records of the given
// captured lengths (the frames are a real datagram's, cut or padded).
func pcapFile(t testing.TB, order binary.AppendByteOrder, snaplen uint32, records ...[]byte) []byte {
	t.Helper()
	b := order.AppendUint32(nil, magicPcapMicro)
	b = order.AppendUint16(b, 2)
	b = order.AppendUint16(b, 4)
	b = append(b, make([]byte, 8)...)
	b = order.AppendUint32(b, snaplen)
	b = order.AppendUint32(b, uint32(LinkEthernet))
	for i, r := range records {
		b = order.AppendUint32(b, uint32(1000+i))
		b = order.AppendUint32(b, 500)
		b = order.AppendUint32(b, uint32(len(r)))
		b = order.AppendUint32(b, uint32(len(r)))
		b = append(b, r...)
	}
	return b
}

func pcapRecordHeader(order binary.AppendByteOrder, incl uint32) []byte {
	b := order.AppendUint32(nil, 1000)
	b = order.AppendUint32(b, 0)
	b = order.AppendUint32(b, incl)
	return order.AppendUint32(b, incl)
}

// ngBlock builds one pcapng block; length, if not 0, overrides the
// leading length field and trail the trailing one.
func ngBlock(order binary.AppendByteOrder, typ uint32, body []byte, length, trail uint32) []byte {
	for len(body)%4 != 0 {
		body = append(body, 0)
	}
	n := uint32(12 + len(body))
	if length == 0 {
		length = n
	}
	if trail == 0 {
		trail = n
	}
	b := order.AppendUint32(nil, typ)
	b = order.AppendUint32(b, length)
	b = append(b, body...)
	return order.AppendUint32(b, trail)
}

func ngSection(order binary.AppendByteOrder) []byte {
	body := order.AppendUint32(nil, ngByteOrderMagic)
	body = order.AppendUint16(body, 1)
	body = order.AppendUint16(body, 0)
	body = order.AppendUint64(body, ^uint64(0))
	return ngBlock(order, ngSectionHeader, body, 0, 0)
}

// ngIface builds an interface description; tsresol 0 leaves the default
// (microseconds).
func ngIface(order binary.AppendByteOrder, lt LinkType, tsresol byte, tsoffset int64) []byte {
	body := order.AppendUint16(nil, uint16(lt))
	body = order.AppendUint16(body, 0)
	body = order.AppendUint32(body, 0)
	if tsresol != 0 {
		body = order.AppendUint16(body, ngOptionTSResol)
		body = order.AppendUint16(body, 1)
		body = append(body, tsresol, 0, 0, 0)
	}
	if tsoffset != 0 {
		body = order.AppendUint16(body, ngOptionTSOffset)
		body = order.AppendUint16(body, 8)
		body = order.AppendUint64(body, uint64(tsoffset))
	}
	body = order.AppendUint32(body, 0) // opt_endofopt
	return ngBlock(order, ngInterface, body, 0, 0)
}

func ngEPB(order binary.AppendByteOrder, iface uint32, ts uint64, frame []byte) []byte {
	body := order.AppendUint32(nil, iface)
	body = order.AppendUint32(body, uint32(ts>>32))
	body = order.AppendUint32(body, uint32(ts))
	body = order.AppendUint32(body, uint32(len(frame)))
	body = order.AppendUint32(body, uint32(len(frame)))
	return ngBlock(order, ngEnhancedPacket, append(body, frame...), 0, 0)
}

func testFrame(t testing.TB, payload string) []byte {
	t.Helper()
	f, err := capturetest.Frame(capturetest.Datagram{Src: src4, Dst: dst4, Payload: []byte(payload)})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// TestBrokenFiles: a capture whose lengths are impossible, disagree or
// are cut short says which record, at which byte, and what is wrong; the
// packets before it are returned.
func TestBrokenFiles(t *testing.T) {
	le, be := binary.LittleEndian, binary.BigEndian
	frame := testFrame(t, "lludp")
	good := pcapFile(t, le, 65535, frame, frame, frame)
	recLen := 16 + len(frame)
	ng := cat(ngSection(le), ngIface(le, LinkEthernet, 0, 0), ngEPB(le, 0, 1, frame), ngEPB(le, 0, 2, frame))
	ngHead := len(ngSection(le)) + len(ngIface(le, LinkEthernet, 0, 0))
	epbLen := len(ngEPB(le, 0, 1, frame))
	tests := []struct {
		name     string
		data     []byte
		read     int    // datagrams returned before the error
		want     string // in the error
		atOpen   bool
		notEOF   bool
		wantSome []string
	}{
		{name: "pcap cut in a record", data: good[:len(good)-5], read: 2,
			want: "record 3 at byte " + thousands(int64(24+2*recLen)) + ": the record needs"},
		{name: "pcap cut in a record header", data: good[:24+recLen+7], read: 1,
			want: "record 2 at byte " + thousands(int64(24+recLen)) + ": the record header needs 16 bytes"},
		{name: "pcap impossible length", data: cat(good, pcapRecordHeader(le, 0x7FFFFFF0), frame), read: 3,
			want: "record 4 at byte " + thousands(int64(24+3*recLen)) + ": captured length 2147483632 is impossible", notEOF: true},
		{name: "pcap big-endian impossible length", data: cat(pcapFile(t, be, 65535, frame), pcapRecordHeader(be, 1<<25)), read: 1,
			want: "record 2 at byte " + thousands(int64(24+recLen)) + ": captured length 33554432 is impossible", notEOF: true},
		{name: "pcap version 3", data: func() []byte { b := pcapFile(t, le, 65535); b[4] = 3; return b }(),
			want: "pcap version 3.4", atOpen: true},
		{name: "pcapng block below the minimum", data: cat(ng, le.AppendUint32(le.AppendUint32(nil, 6), 8), make([]byte, 100)), read: 2,
			want: "record 3 at byte " + thousands(int64(ngHead+2*epbLen)) + ": enhanced packet block length 8 is impossible: the least is 32", notEOF: true},
		{name: "pcapng block length not a multiple of 4", data: cat(ng, ngBlock(le, 6, make([]byte, 40), 50, 0)), read: 2,
			want: "length 50 is impossible: not a multiple of 4", notEOF: true},
		{name: "pcapng block length beyond any block", data: cat(ng, ngBlock(le, 6, make([]byte, 40), 0xFFFFFFF0, 0)), read: 2,
			want: "enhanced packet block length 4294967280 is impossible: above the 16777216-byte limit", notEOF: true},
		{name: "pcapng unknown block of impossible length", data: cat(ng, ngBlock(le, 0x0BAD, nil, 4, 0)), read: 2,
			want: "block of type 2989 length 4 is impossible", notEOF: true},
		{name: "pcapng trailing length disagrees", data: cat(ngSection(le), ngIface(le, LinkEthernet, 0, 0), ngEPB(le, 0, 1, frame), ngBlock(le, 6, ngEPB(le, 0, 2, frame)[8:epbLen-4], 0, 36)),
			read: 1, want: "record 2 at byte " + thousands(int64(ngHead+epbLen)) + ": enhanced packet block length " + thousands(int64(epbLen))[0:0], notEOF: true,
			wantSome: []string{"at its start but 36 at its end"}},
		{name: "pcapng captured length beyond its block", data: cat(ng, func() []byte {
			b := ngEPB(le, 0, 3, frame)
			le.PutUint32(b[20:], uint32(len(frame)+100))
			return b
		}()), read: 2, want: "captured length " + thousands(int64(len(frame) + 100))[0:0], notEOF: true,
			wantSome: []string{"is impossible: its block holds"}},
		{name: "pcapng cut in a block", data: ng[:len(ng)-10], read: 1,
			want: "record 2 at byte " + thousands(int64(ngHead+epbLen)) + ": the " + thousands(int64(epbLen))[0:0], wantSome: []string{"unexpected EOF"}},
		{name: "pcapng packet on an undescribed interface", data: cat(ng, ngEPB(le, 3, 9, frame)), read: 2,
			want: "packet on interface 3, but the section describes 1", notEOF: true},
		{name: "pcapng packet before an interface", data: cat(ngSection(le), ngEPB(le, 0, 1, frame)),
			want: "a packet before any interface description", atOpen: true},
		{name: "pcapng bad byte-order magic", data: func() []byte { b := ngSection(le); b[8] = 0; return b }(),
			want: "byte-order magic", atOpen: true},
		{name: "pcapng unknown link type", data: cat(ngSection(le), ngIface(le, 147, 0, 0)),
			want: "unsupported link type", atOpen: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := NewReader(bytes.NewReader(tc.data), nil)
			if tc.atOpen {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("opened with %v, want an error with %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for ; ; n++ {
				if _, err = r.Next(); err != nil {
					break
				}
			}
			var be *BrokenError
			if !errors.As(err, &be) || n != tc.read || be.Frames != uint64(tc.read) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("after %d datagrams: %v\nwant %d datagrams, then a *BrokenError with %q", n, err, tc.read, tc.want)
			}
			for _, w := range tc.wantSome {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%v: lacks %q", err, w)
				}
			}
			if tc.notEOF && errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("%v: an impossible length reported as a short file", err)
			}
			if _, again := r.Next(); again != err {
				t.Errorf("the error is not sticky: %v then %v", err, again)
			}
		})
	}
}

// TestBrokenGzip: offsets in a compressed capture say they count the
// uncompressed bytes.
func TestBrokenGzip(t *testing.T) {
	frame := testFrame(t, "lludp")
	data := pcapFile(t, binary.LittleEndian, 65535, frame, frame)
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(data[:len(data)-3])
	zw.Close()
	_, _, err := readAll(t, z.Bytes(), nil)
	want := "record 2 at uncompressed byte " + thousands(int64(24+16+len(frame)))
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("got %v, want %q", err, want)
	}
}

// TestPcapngVariants: the parts of pcapng that gopacket's writer never
// produces: big-endian sections, a second section in another byte order,
// timestamp resolutions and offsets, obsolete and simple packet blocks,
// blocks capture ignores, and an interface of a link type it does not
// decode (its packets are counted, not returned).
func TestPcapngVariants(t *testing.T) {
	le, be := binary.LittleEndian, binary.BigEndian
	frame := testFrame(t, "one")
	base := time.Unix(1_700_000_000, 0)
	obsolete := func(order binary.AppendByteOrder, iface uint16, ts uint64, frame []byte) []byte {
		body := order.AppendUint16(nil, iface)
		body = order.AppendUint16(body, 0)
		body = order.AppendUint32(body, uint32(ts>>32))
		body = order.AppendUint32(body, uint32(ts))
		body = order.AppendUint32(body, uint32(len(frame)))
		body = order.AppendUint32(body, uint32(len(frame)))
		return ngBlock(order, ngObsoletePacket, append(body, frame...), 0, 0)
	}
	simple := func(order binary.AppendByteOrder, frame []byte) []byte {
		return ngBlock(order, ngSimplePacket, append(order.AppendUint32(nil, uint32(len(frame))), frame...), 0, 0)
	}
	data := cat(
		ngSection(be),
		ngIface(be, LinkEthernet, 9, 0),          // nanoseconds
		ngIface(be, LinkEthernet, 0x80|10, 0),    // 1/1024 s
		ngIface(be, 147, 0, 0),                   // a link type capture does not decode
		ngBlock(be, 4, []byte{0, 0, 0, 0}, 0, 0), // a name resolution block
		ngEPB(be, 0, uint64(base.UnixNano())+123, frame),
		ngEPB(be, 1, uint64(base.Unix())<<10|512, frame),
		ngEPB(be, 2, 1, frame),
		ngSection(le),
		ngIface(le, LinkEthernet, 3, -3600), // milliseconds, an hour back
		obsolete(le, 0, uint64(base.UnixMilli())+7, frame),
		simple(le, frame),
	)
	got, st, err := readAll(t, data, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []time.Time{
		base.Add(123),
		base.Add(500 * time.Millisecond),
		base.Add(-time.Hour + 7*time.Millisecond),
		base.Add(-time.Hour + 7*time.Millisecond), // a simple packet has the time before it
	}
	if len(got) != len(want) || st.Frames != 5 || st.SkippedBy(SkipNotIP) != 1 {
		t.Fatalf("%d datagrams, stats %+v", len(got), st)
	}
	for i, d := range got {
		if !d.At.Equal(want[i]) || string(d.Payload) != "one" || d.Src != src4 {
			t.Errorf("datagram %d: %v %q %v, want time %v", i, d.At, d.Payload, d.Src, want[i])
		}
	}
}

// TestReaderAgreesWithPcapgo: capture's reader returns the same datagrams
// as gopacket's pcapgo, whose writer made the files, across a buffer
// refill (the capture is larger than the read buffer).
func TestReaderAgreesWithPcapgo(t *testing.T) {
	var ds []capturetest.Datagram
	for i := range 2400 {
		p := bytes.Repeat([]byte{byte(i)}, 1+i%1400)
		ds = append(ds, capturetest.Datagram{At: t0.Add(time.Duration(i) * time.Microsecond), Src: src4, Dst: dst4, Payload: p})
	}
	for _, format := range []capturetest.Format{capturetest.Pcap, capturetest.Pcapng} {
		data := captureBytes(t, ds, format, false)
		if len(data) <= fileBufSize {
			t.Fatalf("%v: %d bytes do not cross a buffer refill", format, len(data))
		}
		got, st, err := readAll(t, data, nil)
		if err != nil {
			t.Fatalf("%v: %v", format, err)
		}
		if len(got) != len(ds) || st.Bytes == 0 {
			t.Fatalf("%v: %d datagrams, want %d", format, len(got), len(ds))
		}
		for i, d := range got {
			if !d.At.Equal(ds[i].At) || !bytes.Equal(d.Payload, ds[i].Payload) || d.Src != ds[i].Src || d.Dst != ds[i].Dst {
				t.Fatalf("%v: datagram %d differs: %v %d bytes", format, i, d.At, len(d.Payload))
			}
		}
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 7: "7", 999: "999", 1000: "1,000", 7381: "7,381", 1000030: "1,000,030", -12345: "-12,345"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

// emptyReader returns nothing, and no error, for ever.
type emptyReader struct{}

func (emptyReader) Read([]byte) (int, error) { return 0, nil }

// TestReaderNoProgress: a stream that returns nothing and no error is an
// error, not a reader spinning for ever.
func TestReaderNoProgress(t *testing.T) {
	frame := testFrame(t, "lludp")
	head := pcapFile(t, binary.LittleEndian, 65535, frame)
	r, err := NewReader(io.MultiReader(bytes.NewReader(head), emptyReader{}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Next(); !errors.Is(err, io.ErrNoProgress) {
		t.Errorf("got %v, want io.ErrNoProgress", err)
	}
}

// TestRealCaptureAgreesWithPcapgo: on the real OpenSim capture, every
// frame capture's reader returns is the one gopacket's pcapgo reads, with
// the same time.
func TestRealCaptureAgreesWithPcapgo(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "shared", "testdata", "real", "opensim-0922-captures", "testclient-2x-10min.pcap"))
	if err != nil {
		t.Skipf("real capture not available: %v", err)
	}
	pr, err := pcapgo.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(bytes.NewReader(data), nil)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for {
		frame, ci, err := pr.ReadPacketData()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		src, dst, payload, _, ok := udpFrame(LinkEthernet, frame)
		if !ok {
			continue
		}
		d, err := r.Next()
		if err != nil {
			t.Fatalf("datagram %d: %v", n, err)
		}
		if !d.At.Equal(ci.Timestamp) || d.Src != src || d.Dst != dst || !bytes.Equal(d.Payload, payload) {
			t.Fatalf("datagram %d: %v %v>%v, pcapgo %v %v>%v", n, d.At, d.Src, d.Dst, ci.Timestamp, src, dst)
		}
		n++
	}
	if _, err := r.Next(); err != io.EOF || n != 24153 || r.Stats().Frames != 24388 {
		t.Errorf("%d datagrams, then %v; stats %+v", n, err, r.Stats())
	}
}
