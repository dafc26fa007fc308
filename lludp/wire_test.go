package lludp

import (
	"slices"
	"strings"
	"testing"
)

// TestParsePorts: the one reader of port lists (decode --ports, the
// daemon's capture.ports, the proxy's --allow-ports).
func TestParsePorts(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    Ports
		wantErr string
	}{
		{"", nil, ""},
		{"  ", nil, ""},
		{"9000-13100", Ports{{9000, 13100}}, ""},
		{"80, 443 ,9000 - 9010", Ports{{80, 80}, {443, 443}, {9000, 9010}}, ""},
		{"65535", Ports{{65535, 65535}}, ""},
		{"0", nil, `"0": want a port`},
		{"443-80", nil, `"443-80"`},
		{"80,http", nil, `"http"`},
		{"65536", nil, `"65536"`},
		{"80,", nil, `"": want a port`},
		{"-5", nil, `"-5"`},
	} {
		got, err := ParsePorts(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParsePorts(%q) = %v, %v; want an error with %s", tc.in, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("ParsePorts(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

// TestPortRangeText: a range reads back what it writes, and reads as
// ParsePortRange does (configuration files decode ranges with it).
func TestPortRangeText(t *testing.T) {
	for _, r := range []PortRange{{443, 443}, {9000, 13100}, {1, 65535}} {
		b, _ := r.MarshalText()
		var got PortRange
		if err := got.UnmarshalText(b); err != nil || got != r {
			t.Errorf("%v: wrote %q, read %v, %v", r, b, got, err)
		}
	}
	var r PortRange
	if err := r.UnmarshalText([]byte("13100-9000")); err == nil || !strings.Contains(err.Error(), `"13100-9000": want a port or a range`) {
		t.Errorf("a reversed range: %v", err)
	}
}
