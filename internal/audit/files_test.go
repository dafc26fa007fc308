package audit

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/fairgrid/fairgrid/capture"
	"github.com/fairgrid/fairgrid/capture/capturetest"
	"github.com/fairgrid/fairgrid/capture/input"
)

// TestReadFiles: the captures are audited to their end, their bytes
// counted; on an ended context nothing is read and the report's warning
// says so, naming the bytes of the whole.
func TestReadFiles(t *testing.T) {
	ds, err := capturetest.Session{Circuits: 2, Datagrams: 20000, Loss: 0.01, Seed: 3}.Generate()
	if err != nil {
		t.Fatal(err)
	}
	pcap := pcapOf(t, ds)
	open := func() []*input.Source {
		src, err := input.OpenCapture("-", input.NewStdin(bytes.NewReader(pcap)), capture.SimPorts)
		if err != nil {
			t.Fatal(err)
		}
		return []*input.Source{src}
	}
	for _, cancelled := range []bool{false, true} {
		a, err := New(Config{Ports: capture.SimPorts})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		if cancelled {
			cancel()
		}
		a.ReadFiles(ctx, open(), nil)
		cancel()
		r := a.Report()
		warned := strings.Join(r.Warnings, "\n")
		read := r.Files[0].Bytes
		switch {
		case !cancelled && (read != int64(len(pcap)) || len(r.Circuits) == 0 || warned != "" || r.Unread() != nil):
			t.Errorf("to the end: %d of %d bytes, %d circuits, warnings %q, unread %q", read, len(pcap), len(r.Circuits), warned, r.Unread())
		case cancelled && (read >= int64(len(pcap)) || !strings.Contains(warned, fmt.Sprintf("interrupted (Ctrl-C) after %d bytes: the report covers", read))):
			t.Errorf("interrupted: %d of %d bytes read, warnings %q", read, len(pcap), warned)
		}
	}
}

// TestUnread: a file that yielded nothing, and a report without
// circuits, are named.
func TestUnread(t *testing.T) {
	r := &Report{Files: []FileResult{{Name: "a.pcap", Datagrams: 3, Bytes: 100}, {Name: "b.pcap"}}}
	if got, want := strings.Join(r.Unread(), "; "), "b.pcap: nothing could be read; no LLUDP circuits in a.pcap, b.pcap"; got != want {
		t.Errorf("Unread = %q, want %q", got, want)
	}
	if got := (&Report{}).Unread(); len(got) != 1 || got[0] != "no LLUDP circuits in the input" {
		t.Errorf("Unread of nothing = %q", got)
	}
}
