package configs

import (
	"encoding"
	"os"
	"reflect"
	"testing"
)

// FuzzParse: any file either loads into a configuration that validates
// and converts, or is refused with an error; nothing panics.
func FuzzParse(f *testing.F) {
	if b, err := os.ReadFile("fairgrid.toml"); err == nil {
		f.Add(b)
	}
	f.Add([]byte("[capture]\nports = [\"9000-9100\", \"13000\"]\n[control]\ninterval = \"2s\"\n"))
	f.Add([]byte("[control]\nmin_bps = 9\nmax_bps = 1\n"))
	f.Add([]byte("[proxy]\nlisten = \"[::1]:1080\"\nallow_ports = [\"443\", \"9000-9100\"]\nusername = \"viewer\"\npassword_file = \"pass\"\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Parse(b)
		if err != nil {
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("Parse accepted a file Validate refuses: %v\n%s", err, b)
		}
		checkRoundTrip(t, c)
		c.Throttle()
		c.GatewayConfig()
		if s := c.ProxyConfig(); len(s.AllowPorts) == 0 || s.MaxAssociations < 1 || s.MaxConnects < 1 {
			t.Fatalf("valid file, proxy settings %+v", s)
		}
	})
}

// checkRoundTrip: each typed value of c writes as text (a flag's default,
// --help) that reads back to the same value.
func checkRoundTrip(t *testing.T, c *File) {
	t.Helper()
	for _, key := range Keys() {
		v := c.Field(key)
		m, ok := v.Interface().(encoding.TextMarshaler)
		if !ok {
			continue
		}
		text, err := m.MarshalText()
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		again := reflect.New(v.Type())
		if err := again.Interface().(encoding.TextUnmarshaler).UnmarshalText(text); err != nil {
			t.Fatalf("%s = %v wrote %q, which does not read back: %v", key, v, text, err)
		}
		if !reflect.DeepEqual(again.Elem().Interface(), v.Interface()) && !(v.Kind() == reflect.Slice && v.Len() == 0 && again.Elem().Len() == 0) {
			t.Fatalf("%s = %v wrote %q, which reads back as %v", key, v, text, again.Elem())
		}
	}
}
