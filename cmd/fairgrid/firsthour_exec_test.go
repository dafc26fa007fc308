package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestFirstHourMessages runs the built binary as a new user would, with
// the mistakes of a first hour, and checks each answer: the exit code,
// one line on stderr that says what to do next, and nothing on stdout.
// The tests beside each feature check the same messages in-process; this
// one checks that they reach a user's terminal as such.
func TestFirstHourMessages(t *testing.T) {
	bin := builtBinary(t)
	t.Parallel() // separate processes
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	busy := held.Addr().String()
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"flag typo", []string{"viewer", "--clinets", "3"}, exitUsage, "unknown flag --clinets (did you mean --clients?)"},
		{"duration without a unit", []string{"rate", "--rtt", "100"}, exitUsage, "a duration needs a unit, such as 100ms"},
		{"unknown command", []string{"demo"}, exitUsage, "did you mean fairgrid run --demo?"},
		{"scenario typo", []string{"lab", "mongose"}, exitUsage, "did you mean mongoose?"},
		{"a link rate without a unit", []string{"link", "--rate", "1000"}, exitUsage, "rates are bits/s: did you mean 1000k?"},
		{"a client rate without a unit", []string{"sim", "--client-max", "1500"}, exitUsage, "rates are bits/s: did you mean 1500k?"},
		{"no such interface", []string{"run", "--interface", "nosuch0", "--dry-run", "--metrics", ""}, exitFail, `no interface "nosuch0" here (interfaces: `},
		{"prose to decode", []string{"decode", "../../README.md"}, exitFail, "neither a capture nor hex datagrams"},
		{"SOCKS 5 port in use", []string{"proxy", "--listen", busy, "--metrics", ""}, exitFail, "choose another with --listen ADDR"},
		{"sim's metrics port in use", []string{"sim", "--listen", "127.0.0.1:0", "--metrics", busy, "--duration", "5s"}, exitFail, "(sim --metrics): the address is in use, perhaps by another fairgrid; choose another with --metrics ADDR"},
		{"metrics port in use", []string{"proxy", "--listen", "127.0.0.1:0", "--metrics", busy}, exitFail, "(metrics.proxy_address): the address is in use, perhaps by another fairgrid; choose another with --metrics ADDR"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, tc.args...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			code := 0
			if exit := (*exec.ExitError)(nil); errors.As(err, &exit) {
				code = exit.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			if code != tc.code || len(lines) != 1 || !strings.Contains(lines[0], tc.want) || stdout.Len() != 0 {
				t.Errorf("fairgrid %s: exit %d, stdout %q, stderr %q; want exit %d and one line with %q", strings.Join(tc.args, " "), code, stdout.String(), stderr.String(), tc.code, tc.want)
			}
		})
	}
}
