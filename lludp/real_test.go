package lludp

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// realDir returns ../shared/testdata/real beside the repository, or skips:
// a plain clone has no ../shared, CI has it.
func realDir(t testing.TB) string {
	t.Helper()
	dir, err := filepath.Abs("../../shared/testdata/real")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "MANIFEST.tsv")); err != nil {
		t.Skipf("real test material not found at %s (it lives in ../shared beside the repository): %v", dir, err)
	}
	return dir
}

type manifestRow struct {
	path            string
	flags           Flags
	seq             uint32
	extra           int
	acks            []uint32
	message         string
	expandedBodyLen int
}

// readManifest parses MANIFEST.tsv: one row per real single-datagram file
// with values decoded independently of this package.
func readManifest(t testing.TB, dir string) []manifestRow {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "MANIFEST.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []manifestRow
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || strings.HasPrefix(line, "path\t") || line == "" {
			continue
		}
		c := strings.Split(line, "\t")
		if len(c) < 9 {
			t.Fatalf("manifest row %q: %d columns", line, len(c))
		}
		var r manifestRow
		r.path, r.message = c[0], c[7]
		flags, err1 := strconv.ParseUint(c[3], 0, 8)
		seq, err2 := strconv.ParseUint(c[4], 10, 32)
		extra, err3 := strconv.Atoi(c[5])
		blen, err4 := strconv.Atoi(c[8])
		if err := errors.Join(err1, err2, err3, err4); err != nil {
			t.Fatalf("manifest row %q: %v", line, err)
		}
		r.flags, r.seq, r.extra, r.expandedBodyLen = Flags(flags), uint32(seq), extra, blen
		for _, a := range strings.FieldsFunc(c[6], func(r rune) bool { return r == ',' || r == ' ' }) {
			n, err := strconv.ParseUint(a, 10, 32)
			if err != nil {
				t.Fatalf("manifest row %q: ack %q: %v", line, a, err)
			}
			r.acks = append(r.acks, uint32(n))
		}
		rows = append(rows, r)
	}
	if len(rows) == 0 {
		t.Fatal("manifest has no rows")
	}
	return rows
}

func TestRealDatagramsMatchManifest(t *testing.T) {
	dir := realDir(t)
	rows := readManifest(t, dir)
	if len(rows) != 86 {
		t.Errorf("manifest lists %d datagrams, SOURCES.md says 86", len(rows))
	}
	var p Packet
	for _, r := range rows {
		t.Run(r.path, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(dir, r.path))
			if err != nil {
				t.Fatal(err)
			}
			if err := p.DecodeFromBytes(b); err != nil {
				t.Fatalf("decode: %v", err)
			}
			if p.Flags != r.flags || p.Sequence != r.seq || int(p.Extra) != r.extra || p.Message().Name != r.message {
				t.Errorf("got flags %#x seq %d extra %d %s, manifest says %#x %d %d %s",
					p.Flags, p.Sequence, p.Extra, p.Message().Name, r.flags, r.seq, r.extra, r.message)
			}
			if got := p.Acks.AppendTo(nil); !slices.Equal(got, r.acks) {
				t.Errorf("acks %v, manifest says %v", got, r.acks)
			}
			if got := len(p.Bytes()) - HeaderSize; got != r.expandedBodyLen {
				t.Errorf("expanded body %d bytes, manifest says %d", got, r.expandedBodyLen)
			}
			// Every real datagram was sent in canonical form: re-encoding
			// the decoded values gives back the same bytes.
			again, err := p.Decode().AppendTo(nil)
			if err != nil {
				t.Fatalf("encode: %v", err)
			}
			if !bytes.Equal(again, b) {
				t.Errorf("encode(decode(x)) != x\n got %x\nwant %x", again, b)
			}
		})
	}
}

// TestRegionHandshakeValues checks the real OpenSim RegionHandshake against
// what its source project asserts: region "testland", 264-byte body.
func TestRegionHandshakeValues(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(realDir(t), "opensim-networking-2017/region_handshake.bin"))
	if err != nil {
		t.Fatal(err)
	}
	var p Packet
	if err := p.DecodeFromBytes(b); err != nil {
		t.Fatal(err)
	}
	msg := p.Message()
	bi := msg.BlockIndex("RegionInfo")
	name := p.Field(bi, 0, msg.Blocks[bi].FieldIndex("SimName"))
	if string(name) != "testland\x00" {
		t.Errorf("SimName %q, want testland", name)
	}
	if !p.Flags.ZeroCoded() || !p.Flags.Reliable() || p.Sequence != 1 {
		t.Errorf("flags %v seq %d, want zerocoded|reliable seq 1", p.Flags, p.Sequence)
	}
	if got := len(p.Bytes()) - HeaderSize; got != 264 {
		t.Errorf("expanded body %d bytes, want 264", got)
	}
}

type vectorRow struct {
	id, message string
	raw         []byte
	flags       Flags
	seq         uint32
}

func readVectors(t testing.TB) []vectorRow {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(realDir(t), "vectors/pyogp-hippolyzer-packets.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	var rows []vectorRow
	for _, line := range strings.Split(string(data), "\n") {
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "id\t") {
			continue
		}
		c := strings.Split(line, "\t")
		raw, err := hex.DecodeString(c[1])
		if err != nil {
			t.Fatalf("vector %s: %v", c[0], err)
		}
		flags, _ := strconv.ParseUint(c[3], 0, 8)
		seq, _ := strconv.ParseUint(c[4], 10, 32)
		rows = append(rows, vectorRow{c[0], c[2], raw, Flags(flags), uint32(seq)})
	}
	return rows
}

func TestPeerVectors(t *testing.T) {
	var p Packet
	for _, v := range readVectors(t) {
		t.Run(v.id, func(t *testing.T) {
			if err := p.DecodeFromBytes(v.raw); err != nil {
				t.Fatalf("decode: %v", err)
			}
			if p.Message().Name != v.message || p.Flags != v.flags || p.Sequence != v.seq {
				t.Fatalf("got %s flags %#x seq %d, want %s %#x %d", p.Message().Name, p.Flags, p.Sequence, v.message, v.flags, v.seq)
			}
			d := p.Decode()
			switch v.id {
			case "pyogp-2008-agent-data-update":
				// Asserted by the pyogp test.
				ad := d.Blocks[p.Message().BlockIndex("AgentData")].Instances[0]
				blk := &p.Message().Blocks[0]
				if got := string(ad[blk.FieldIndex("FirstName")].([]byte)); got != "JB\x00" {
					t.Errorf("FirstName %q", got)
				}
				if got := string(ad[blk.FieldIndex("LastName")].([]byte)); got != "Kraft\x00" {
					t.Errorf("LastName %q", got)
				}
			case "hippolyzer-coarse-location-update":
				// Asserted by Hippolyzer: empty Variable blocks, You = Prey = -1,
				// and a byte-exact round trip.
				if len(d.Blocks[0].Instances) != 0 || len(d.Blocks[2].Instances) != 0 {
					t.Errorf("Location/AgentData not empty: %v", d.Blocks)
				}
				idx := d.Blocks[1].Instances[0]
				if idx[0].(int16) != -1 || idx[1].(int16) != -1 {
					t.Errorf("Index %v, want -1 -1", idx)
				}
				again, err := d.AppendTo(nil)
				if err != nil || !bytes.Equal(again, v.raw) {
					t.Errorf("round trip: %x, %v; want %x", again, err, v.raw)
				}
			}
		})
	}
}

func TestZeroCodeCases(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(realDir(t), "vectors/zerocode-cases.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(data), "\n") {
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "encoded_hex") {
			continue
		}
		c := strings.Split(line, "\t")
		enc, err1 := hex.DecodeString(c[0])
		want, err2 := hex.DecodeString(c[1])
		if err := errors.Join(err1, err2); err != nil {
			t.Fatalf("case %q: %v", c[2], err)
		}
		n++
		t.Run(c[2], func(t *testing.T) {
			dst := make([]byte, MaxPacketSize)
			got, err := ZeroDecode(dst, enc)
			if err != nil || !bytes.Equal(dst[:got], want) {
				t.Errorf("ZeroDecode(%x) = %d bytes %v, want %d bytes", enc, got, err, len(want))
			}
		})
	}
	if n != 8 {
		t.Errorf("%d zero-coding cases, want 8", n)
	}
}
