package capture

import (
	"bytes"
	"errors"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/capture/capturetest"
)

// TestReadFile: every datagram on the selected ports, each payload its
// own copy; a damaged file gives what precedes the damage and the error;
// a missing file says so.
func TestReadFile(t *testing.T) {
	at := time.Unix(1700000000, 0)
	var ds []capturetest.Datagram
	for i := range 5 {
		port := uint16(9000)
		if i == 2 {
			port = 53 // not a simulator's
		}
		ds = append(ds, capturetest.Datagram{At: at.Add(time.Duration(i) * time.Millisecond),
			Src: netip.MustParseAddrPort("10.0.0.1:50000"), Dst: netip.AddrPortFrom(netip.MustParseAddr("10.0.0.2"), port), Payload: []byte{byte(i), 1, 2, 3}})
	}
	data := captureBytes(t, ds, capturetest.Pcap, true)
	path := filepath.Join(t.TempDir(), "c.pcap.gz")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadFile(path, Ports{{Lo: 9000, Hi: 9000}})
	if err != nil || len(got) != 4 {
		t.Fatalf("%d datagrams, %v; want the 4 on port 9000", len(got), err)
	}
	for i, d := range got {
		want := ds[i]
		if i >= 2 {
			want = ds[i+1]
		}
		if !bytes.Equal(d.Payload, want.Payload) || !d.At.Equal(want.At) {
			t.Errorf("datagram %d: %v %x, want %v %x", i, d.At, d.Payload, want.At, want.Payload)
		}
	}
	if &got[0].Payload[0] == &got[1].Payload[0] {
		t.Error("the payloads share a buffer")
	}
	cut := captureBytes(t, ds, capturetest.Pcap, false)
	if err := os.WriteFile(path, cut[:len(cut)-2], 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadFile(path, nil); err == nil || len(got) != 4 {
		t.Errorf("a cut file: %d datagrams, %v; want the 4 before the cut and the error", len(got), err)
	}
	if _, err := ReadFile(filepath.Join(t.TempDir(), "none.pcap"), nil); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v", err)
	}
}
