package audit

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/capture"
	"github.com/fairgrid/fairgrid/capture/capturetest"
)

// smallSession is a small capture's datagrams: one circuit, a little loss
// and resends, pings.
func smallSession(t testing.TB) []capturetest.Datagram {
	t.Helper()
	ds, err := capturetest.Session{Circuits: 1, Datagrams: 40, Loss: 0.05, Seed: 3}.Generate()
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

func pcapOf(t testing.TB, ds []capturetest.Datagram) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := capturetest.Write(&buf, capturetest.Pcap, ds); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// auditRaw audits a capture held in memory, or says why it cannot be
// opened.
func auditRaw(t testing.TB, b []byte) (*Report, error) {
	t.Helper()
	// The command's default ports: the simulator range.
	r, err := capture.NewReader(bytes.NewReader(b), capture.SimPorts)
	if err != nil {
		return nil, err
	}
	a, err := New(Config{Series: true})
	if err != nil {
		t.Fatal(err)
	}
	a.Read([]Input{{Name: "cut.pcap", Reader: r, Counter: &CountingReader{}}}, nil)
	return a.Report(), nil
}

// TestTruncated cuts a small pcap at every record boundary and inside
// every record (in its header, and in its frame): what is kept is exactly
// the audit of the records before the cut, and a cut inside a record says
// where that record starts and what was wrong.
func TestTruncated(t *testing.T) {
	ds := smallSession(t)
	full := pcapOf(t, ds)
	const fileHeader, recordHeader = 24, 16
	offsets := []int{fileHeader}
	for _, d := range ds {
		f, err := capturetest.Frame(d)
		if err != nil {
			t.Fatal(err)
		}
		offsets = append(offsets, offsets[len(offsets)-1]+recordHeader+len(f))
	}
	if offsets[len(ds)] != len(full) {
		t.Fatalf("records end at %d, the file at %d", offsets[len(ds)], len(full))
	}
	type cut struct {
		name  string
		at    int
		kept  int  // datagrams before the cut
		stops bool // a record is cut short
	}
	var cuts []cut
	for k := 0; k <= len(ds); k++ {
		cuts = append(cuts, cut{fmt.Sprintf("boundary %d", k), offsets[k], k, false})
		if k < len(ds) {
			cuts = append(cuts,
				cut{fmt.Sprintf("record %d header", k), offsets[k] + recordHeader/2, k, true},
				cut{fmt.Sprintf("record %d frame", k), (offsets[k] + recordHeader + offsets[k+1]) / 2, k, true})
		}
	}
	for _, c := range cuts {
		t.Run(c.name, func(t *testing.T) {
			r, err := auditRaw(t, full[:c.at])
			if err != nil {
				t.Fatal(err)
			}
			f := r.Files[0]
			if f.Datagrams != int64(c.kept) {
				t.Errorf("%d datagrams read, want the %d before the cut", f.Datagrams, c.kept)
			}
			if c.stops {
				if f.StoppedAt == nil || *f.StoppedAt != int64(offsets[c.kept]) || !strings.Contains(f.StopReason, fmt.Sprintf("record %d ", c.kept+1)) {
					t.Errorf("stopped at %v (%q), want byte %d, record %d", f.StoppedAt, f.StopReason, offsets[c.kept], c.kept+1)
				}
				if len(r.Warnings) == 0 || !strings.Contains(r.Warnings[0], fmt.Sprintf("cut.pcap: stopped at byte %d", offsets[c.kept])) {
					t.Errorf("warnings %q do not say where it stopped", r.Warnings)
				}
			} else if f.StoppedAt != nil {
				t.Errorf("a cut between records stopped at %d: %s", *f.StoppedAt, f.StopReason)
			}
			want, err := auditRaw(t, pcapOf(t, ds[:c.kept]))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(r.Circuits, want.Circuits) || !reflect.DeepEqual(r.Seconds, want.Seconds) || !reflect.DeepEqual(r.Messages, want.Messages) {
				t.Errorf("the audit differs from that of the %d datagrams before the cut", c.kept)
			}
		})
	}
	// Inside the file header nothing can be read: the command says so.
	for at := 0; at < fileHeader; at += 5 {
		if _, err := auditRaw(t, full[:at]); err == nil {
			t.Errorf("a file cut at byte %d of its header opened", at)
		}
	}
}

// TestCorrupt: damaged headers and lengths, and a gzip stream cut short.
func TestCorrupt(t *testing.T) {
	ds := smallSession(t)
	full := pcapOf(t, ds)
	frame0, _ := capturetest.Frame(ds[0])
	second := 24 + 16 + len(frame0) // where record 2 starts
	patch := func(at int, v uint32) []byte {
		b := bytes.Clone(full)
		binary.LittleEndian.PutUint32(b[at:], v)
		return b
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(full)
	zw.Close()
	for _, tc := range []struct {
		name    string
		b       []byte
		openErr string // the capture cannot be opened
		kept    int64
		stopAt  int64 // -1: read to the end
		says    string
	}{
		{"bad magic", patch(0, 0x12345678), "not a pcap", 0, 0, ""},
		{"unknown link type", patch(20, 999), "unsupported link type", 0, 0, ""},
		{"record length beyond the snapshot length", patch(second+8, 0xFFFFFF00), "", 1, int64(second), "record 2 "},
		{"gzip cut short", gz.Bytes()[:gz.Len()*2/3], "", -1, -1, "unexpected EOF"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := auditRaw(t, tc.b)
			if tc.openErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.openErr) {
					t.Errorf("open: %v, want %q", err, tc.openErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			f := r.Files[0]
			if tc.kept >= 0 && f.Datagrams != tc.kept {
				t.Errorf("%d datagrams kept, want %d", f.Datagrams, tc.kept)
			}
			if tc.kept < 0 && (f.Datagrams == 0 || f.Datagrams >= int64(len(ds))) {
				t.Errorf("%d of %d datagrams kept, want some", f.Datagrams, len(ds))
			}
			if f.StoppedAt == nil || tc.stopAt >= 0 && *f.StoppedAt != tc.stopAt || !strings.Contains(f.StopReason, tc.says) {
				t.Errorf("stopped at %v: %q; want byte %d saying %q", f.StoppedAt, f.StopReason, tc.stopAt, tc.says)
			}
		})
	}
}

// TestNotLLUDP: UDP on other ports and garbage on the simulator's port is
// counted as not LLUDP, unknown message numbers as undecoded, by reason;
// above 1 % of them the report says the template may be wrong.
func TestNotLLUDP(t *testing.T) {
	ds := smallSession(t)
	sim, viewer := ds[0].Dst, ds[0].Src
	if sim.Port() != 9000 {
		sim, viewer = viewer, sim
	}
	at := ds[len(ds)-1].At
	// High message number 33 is in no template: a header that parses and a
	// message nobody knows.
	unknown := []byte{0, 0, 0, 0, 99, 0, 33, 1, 2, 3}
	other := netip.MustParseAddrPort("10.9.9.9:5353")
	for _, tc := range []struct {
		name    string
		unknown int
		warn    bool
	}{
		{"no unknown", 0, false},
		{"1 unknown in 4,000", 1, false},
		{"3 % unknown", 3, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			more := append([]capturetest.Datagram(nil), ds...)
			// Scale to 4,000 datagrams by repeating the session's last
			// datagrams as duplicates: decodable, counted.
			for len(more) < 4000 {
				d := ds[len(more)%len(ds)]
				d.At = at.Add(time.Duration(len(more)) * time.Millisecond)
				more = append(more, d)
			}
			n := tc.unknown * len(more) / 100
			if tc.unknown == 1 {
				n = 1
			}
			for i := range n {
				more = append(more, capturetest.Datagram{At: at.Add(time.Hour + time.Duration(i)), Src: viewer, Dst: sim, Payload: unknown})
			}
			more = append(more,
				capturetest.Datagram{At: at.Add(2 * time.Hour), Src: viewer, Dst: sim, Payload: []byte{1, 2}},
				capturetest.Datagram{At: at.Add(2 * time.Hour), Src: other, Dst: viewer, Payload: []byte("mdns")})
			r, err := auditRaw(t, pcapOf(t, more))
			if err != nil {
				t.Fatal(err)
			}
			f := r.Files[0]
			if f.NotLLUDP != 2 || f.UndecodedBy["truncated"] != 1 || f.UndecodedBy["other_port"] != 1 {
				t.Errorf("not LLUDP %d, by reason %v; want the garbage and the other port", f.NotLLUDP, f.UndecodedBy)
			}
			if f.Undecoded != int64(n) || f.UndecodedBy["unknown_message"] != int64(n) {
				t.Errorf("undecoded %d, by reason %v; want %d unknown messages", f.Undecoded, f.UndecodedBy, n)
			}
			warned := strings.Contains(strings.Join(r.Warnings, "\n"), "the template may be wrong")
			if warned != tc.warn {
				t.Errorf("warnings %q; want a template warning: %v", r.Warnings, tc.warn)
			}
			if len(r.Circuits) != 2 {
				t.Errorf("%d circuit rows: the bad datagrams must not stop the audit", len(r.Circuits))
			}
		})
	}
}
