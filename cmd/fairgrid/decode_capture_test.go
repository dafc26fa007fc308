package main

import (
	"bytes"
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/capture/capturetest"
	"github.com/fairgrid/fairgrid/lludp"
)

var (
	viewerEP = netip.MustParseAddrPort("10.1.2.3:50000")
	simEP    = netip.MustParseAddrPort("10.1.2.4:9000")
	start    = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
)

// writeTestCapture writes a small login and stream: sim numbers 1..20
// with 7 lost, a ping pair 30 ms apart, and a garbage datagram on 9000.
func writeTestCapture(t *testing.T, format capturetest.Format, cut int) string {
	t.Helper()
	agent := lludp.AgentData{AgentID: lludp.UUID{0xAA}, SessionID: lludp.UUID{0xBB}}
	var ds []capturetest.Datagram
	add := func(at time.Duration, up bool, h lludp.Header, m lludp.Typed) {
		b, err := lludp.AppendMessage(nil, h, m, nil)
		if err != nil {
			t.Fatal(err)
		}
		src, dst := simEP, viewerEP
		if up {
			src, dst = viewerEP, simEP
		}
		ds = append(ds, capturetest.Datagram{At: start.Add(at), Src: src, Dst: dst, Payload: b})
	}
	ms := time.Millisecond
	add(0, true, lludp.Header{Flags: lludp.FlagReliable, Sequence: 1}, &lludp.UseCircuitCode{Code: 42, SessionID: agent.SessionID, AgentID: agent.AgentID})
	add(ms, true, lludp.Header{Sequence: 2}, &lludp.StartPingCheck{PingID: 1})
	for seq := uint32(1); seq <= 20; seq++ {
		if seq != 7 {
			add(time.Duration(seq)*10*ms, false, lludp.Header{Flags: lludp.FlagReliable, Sequence: seq}, &lludp.LayerData{Type: lludp.LayerLand, Data: make([]byte, 100)})
		}
	}
	add(31*ms, false, lludp.Header{Sequence: 21}, &lludp.CompletePingCheck{PingID: 1})
	ds = append(ds, capturetest.Datagram{At: start.Add(300 * ms), Src: viewerEP, Dst: simEP, Payload: []byte("GET / HTTP/1.0")})
	var buf bytes.Buffer
	if err := capturetest.Write(&buf, format, ds); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	if cut > 0 {
		data = data[:len(data)-cut]
	}
	path := filepath.Join(t.TempDir(), "test."+format.String())
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestDecodeCaptureSummary(t *testing.T) {
	var outs []string
	for _, format := range []capturetest.Format{capturetest.Pcap, capturetest.Pcapng} {
		path := writeTestCapture(t, format, 0)
		code, out, errOut := runCmd(t, "", "decode", "--summary", "--format", "json", path)
		if code != exitOK {
			t.Fatalf("%v: exit %d: %s", format, code, errOut)
		}
		if !strings.Contains(errOut, "1 not LLUDP (unknown_message 1)") {
			t.Errorf("garbage on a game port not reported by reason: %q", errOut)
		}
		var s map[string]any
		if err := json.Unmarshal([]byte(out), &s); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		for _, key := range []string{"viewer", "sim", "agent_id", "session_id", "circuit_code", "first", "last", "down", "up", "rtt_ms", "rtt_samples", "ack_rtt_ms", "by_category"} {
			if _, ok := s[key]; !ok {
				t.Errorf("summary lacks %q", key)
			}
		}
		down := s["down"].(map[string]any)
		for _, key := range []string{"packets", "bytes", "reliable", "resent", "spurious_resends", "duplicates", "reordered", "lost", "loss_events", "loss_event_rate", "rate_bps"} {
			if _, ok := down[key]; !ok {
				t.Errorf("down lacks %q", key)
			}
		}
		if s["viewer"] != viewerEP.String() || s["sim"] != simEP.String() || s["circuit_code"] != 42.0 || down["lost"] != 1.0 || down["packets"] != 20.0 ||
			s["rtt_ms"] != 30.0 || s["rtt_samples"] != 1.0 || s["ack_rtt_ms"] != nil || s["by_category"].(map[string]any)["Land"] == 0.0 {
			t.Errorf("%v summary: %s", format, out)
		}
		outs = append(outs, out)
	}
	if outs[0] != outs[1] {
		t.Errorf("pcap and pcapng summaries differ:\n%s\n%s", outs[0], outs[1])
	}
	if code, out, _ := runCmd(t, "", "decode", "--summary", writeTestCapture(t, capturetest.Pcap, 0)); code != exitOK || !strings.Contains(out, "loss events") {
		t.Errorf("table: %d\n%s", code, out)
	}
}

func TestDecodeCaptureDatagrams(t *testing.T) {
	path := writeTestCapture(t, capturetest.Pcap, 0)
	code, out, _ := runCmd(t, "", "decode", "--format", "json", "--filter", "CompletePingCheck,StartPingCheck", path)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != exitFail || len(lines) != 3 { // 2 pings and the garbage datagram's error
		t.Fatalf("exit %d, %d lines:\n%s", code, len(lines), out)
	}
	if !strings.HasPrefix(lines[0], `{"time":"2026-12-02T12:00:00.001Z","direction":"up","viewer":"10.1.2.3:50000","sim":"10.1.2.4:9000","flags":`) {
		t.Errorf("first line %s", lines[0])
	}
	if !strings.Contains(lines[2], `"error":"message number High 72: unknown message number"`) || !strings.Contains(lines[2], `"direction":null`) {
		t.Errorf("error line %s", lines[2])
	}
	if code, _, errOut := runCmd(t, "", "decode", "--filter", "NoSuchMessage", path); code != exitUsage || !strings.Contains(errOut, "NoSuchMessage") {
		t.Errorf("unknown filter: %d %s", code, errOut)
	}
}

// TestDecodeBrokenCapture: a capture cut short says how far it got and
// keeps the measurements up to the break.
func TestDecodeBrokenCapture(t *testing.T) {
	path := writeTestCapture(t, capturetest.Pcap, 10)
	code, out, errOut := runCmd(t, "", "decode", "--summary", "--format", "json", path)
	if code != exitFail || !strings.Contains(errOut, "record 23 at byte ") || !strings.Contains(out, `"rtt_samples":1`) {
		t.Errorf("exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
}

func TestDecodeNoLLUDP(t *testing.T) {
	var buf bytes.Buffer
	err := capturetest.Write(&buf, capturetest.Pcap, []capturetest.Datagram{
		{At: start, Src: netip.MustParseAddrPort("10.0.0.1:53"), Dst: netip.MustParseAddrPort("10.0.0.2:53"), Payload: []byte("dns")},
	})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "dns.pcap")
	os.WriteFile(path, buf.Bytes(), 0o644)
	code, _, errOut := runCmd(t, "", "decode", "--summary", path)
	if code != exitFail || !strings.Contains(errOut, "no UDP datagrams on the simulator ports") {
		t.Errorf("exit %d: %s", code, errOut)
	}
	bad := filepath.Join(t.TempDir(), "bad.pcap")
	os.WriteFile(bad, []byte{0xD4, 0xC3, 0xB2, 0xA1, 1, 2}, 0o644)
	if code, _, errOut := runCmd(t, "", "decode", bad); code != exitFail || !strings.Contains(errOut, "bad.pcap") {
		t.Errorf("corrupt header: exit %d: %s", code, errOut)
	}
}
