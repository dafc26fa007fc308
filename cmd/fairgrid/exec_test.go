package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/capture"
	"github.com/fairgrid/fairgrid/capture/capturetest"
)

// The binary the user runs, built once for the tests that exec it.
var (
	builtOnce sync.Once
	builtPath string
	builtErr  error
)

// builtBinary builds cmd/fairgrid once per test binary and returns its
// path; skipped with -short, and when the go tool is missing.
func builtBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("skipped with -short: builds and runs the binary")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("skipped: the go tool is needed to build the binary: %v", err)
	}
	builtOnce.Do(func() {
		dir, err := os.MkdirTemp("", "fairgrid-bin-")
		if err != nil {
			builtErr = err
			return
		}
		builtPath = filepath.Join(dir, "fairgrid")
		if out, err := exec.Command(goTool, "build", "-o", builtPath, ".").CombinedOutput(); err != nil {
			builtErr = errors.New("go build: " + err.Error() + "\n" + string(out))
		}
	})
	if builtErr != nil {
		t.Fatal(builtErr)
	}
	return builtPath
}

// removeBuiltBinary removes the binary builtBinary built (TestMain calls
// it after the tests).
func removeBuiltBinary() {
	if builtPath != "" {
		os.RemoveAll(filepath.Dir(builtPath))
	}
}

// started is a command run as a user would, its stderr read line by line.
type started struct {
	cmd    *exec.Cmd
	stdout bytes.Buffer
	lines  chan string
	stderr bytes.Buffer
	mu     sync.Mutex
}

func startBinary(t *testing.T, timeout time.Duration, args ...string) *started {
	t.Helper()
	return startBinaryTo(t, timeout, nil, args...)
}

// startBinaryTo is startBinary with stdout sent to out; nil keeps it for
// what stop returns.
func startBinaryTo(t *testing.T, timeout time.Duration, out io.Writer, args ...string) *started {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	t.Cleanup(cancel)
	s := &started{cmd: exec.CommandContext(ctx, builtBinary(t), args...), lines: make(chan string, 1000)}
	s.cmd.Stdout = &s.stdout
	if out != nil {
		s.cmd.Stdout = out
	}
	pr, err := s.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(s.lines)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			s.mu.Lock()
			s.stderr.WriteString(sc.Text() + "\n")
			s.mu.Unlock()
			s.lines <- sc.Text()
		}
		io.Copy(io.Discard, pr)
	}()
	return s
}

// waitLine reads stderr until a line matches re and returns its first
// submatch; "" if stderr ends first.
func (s *started) waitLine(re *regexp.Regexp) string {
	for l := range s.lines {
		if m := re.FindStringSubmatch(l); m != nil {
			return m[1]
		}
	}
	return ""
}

// errText is stderr so far.
func (s *started) errText() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stderr.String()
}

// interrupt sends SIGINT, as Ctrl-C does, and waits for the exit.
func (s *started) interrupt(t *testing.T) (code int, stdout, stderr string) {
	t.Helper()
	return s.stop(t, os.Interrupt)
}

// stop sends sig and waits for the exit.
func (s *started) stop(t *testing.T, sig os.Signal) (code int, stdout, stderr string) {
	t.Helper()
	if runtime.GOOS == "windows" {
		s.cmd.Process.Kill()
		t.Skip("skipped: Windows has no signals to send")
	}
	if err := s.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	for range s.lines { // drain
	}
	err := s.cmd.Wait()
	code = s.cmd.ProcessState.ExitCode()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return code, s.stdout.String(), s.stderr.String()
}

// TestLabInterrupted: Ctrl-C during a lab scenario prints what the runs
// that finished measured, writes it with --out, says how many did not
// finish, exits 0, and logs no "context canceled". Its progress shows on
// stderr as each run ends.
func TestLabInterrupted(t *testing.T) {
	t.Parallel() // a separate process; its SIGINT goes to that process alone
	out := t.TempDir()
	s := startBinary(t, 2*time.Minute, "lab", "wireless-buffers", "--duration", "5s", "--parallel", "1", "--out", out)
	progress := regexp.MustCompile(`^fairgrid lab: wireless-buffers: run 1 of 19 done \((wireless [^)]+)\), \d+:\d\d in$`)
	run := s.waitLine(progress)
	if run == "" {
		_, _, errOut := s.interrupt(t)
		t.Fatalf("no progress line on stderr:\n%s", errOut)
	}
	code, stdout, stderr := s.interrupt(t)
	if code != exitOK {
		t.Errorf("exit %d after Ctrl-C, want 0\n%s", code, stderr)
	}
	if !regexp.MustCompile(`(?m)^Interrupted after \d+ s: [12] of 19 runs of wireless-buffers finished; what they measured`).MatchString(stdout) ||
		!regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(run)+` .* \d+ kbit/s`).MatchString(stdout) {
		t.Errorf("stdout does not give the measurement of %q, the run that finished:\n%s", run, stdout)
	}
	if strings.Contains(stderr, "context canceled") {
		t.Errorf("stderr logs the interruption as errors:\n%s", stderr)
	}
	if !strings.Contains(stderr, "fairgrid lab: Ctrl-C: stopping; Ctrl-C again quits at once\n") {
		t.Errorf("stderr does not say it is stopping, nor how to quit at once:\n%s", stderr)
	}
	b, err := os.ReadFile(filepath.Join(out, "wireless-buffers.json"))
	if err != nil || !strings.Contains(string(b), `"name": "`+run+`"`) {
		t.Errorf("--out has no JSON of the finished run: %v\n%s", err, b)
	}
}

// TestLabGatewayInterrupted: Ctrl-C during lab gateway's warm-up says
// that nothing was measured yet and exits 0.
func TestLabGatewayInterrupted(t *testing.T) {
	s := startBinary(t, time.Minute, "lab", "gateway", "--arms", "stock")
	if s.waitLine(regexp.MustCompile(`^fairgrid lab gateway: (1) arms at once`)) == "" {
		_, _, errOut := s.interrupt(t)
		t.Fatalf("no start line on stderr:\n%s", errOut)
	}
	code, stdout, stderr := s.interrupt(t)
	if code != exitOK || !strings.Contains(stdout, "Interrupted during the 20s warm-up: nothing measured yet.") || strings.Contains(stderr, "interrupt signal") ||
		!strings.Contains(stderr, "fairgrid lab gateway: Ctrl-C: stopping; Ctrl-C again quits at once\n") {
		t.Errorf("exit %d after Ctrl-C, stdout %q, stderr %q; want 0, the warm-up named, no error, the notice that it stops", code, stdout, stderr)
	}
}

// TestViewerLastLineVerdict: the viewer's output, run as a user runs it
// against fairgrid sim, ends with a verdict in words, and its rates carry
// their unit; the sim, stopped with Ctrl-C, says what happened in words.
func TestViewerLastLineVerdict(t *testing.T) {
	sim := startBinary(t, time.Minute, "sim", "--listen", "127.0.0.1:0", "--metrics", "127.0.0.1:0", "--duration", "20s")
	addr := regexp.MustCompile(`msg="region listening" addr=(127\.0\.0\.1:\d+)`)
	simAddr := sim.waitLine(addr)
	if simAddr == "" {
		t.Fatal("fairgrid sim did not say where it listens")
	}
	out, err := exec.Command(builtBinary(t), "viewer", "--sim", simAddr, "--duration", "2s").Output()
	if err != nil {
		t.Fatalf("viewer: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	last := lines[len(lines)-1]
	if !regexp.MustCompile(`^127\.0\.0\.1:\d+: verdict: no loss: the path had room to spare, so no TCP-fair rate bounds it$`).MatchString(last) {
		t.Errorf("last line %q is no verdict", last)
	}
	if !regexp.MustCompile(`received \d+\.\d kbit/s \(asked 1536\.0 kbit/s\)`).MatchString(lines[0]) {
		t.Errorf("rates without their unit: %q", lines[0])
	}
	// the region's own last words: counts in words, no Go struct
	code, simOut, simErr := sim.interrupt(t)
	if code != exitOK || !strings.Contains(simOut, "circuits ended: 1 logged out") || regexp.MustCompile(`\{[A-Z]\w*:`).MatchString(simOut+simErr) {
		t.Errorf("fairgrid sim ended %d:\n%s%s", code, simOut, simErr)
	}
}

// TestDurationsNeedUnits: every duration a command takes, given as a bare
// number as users type it, is refused in one line that suggests the unit
// (exit 2); so are the durations and loss rates inside string flags.
func TestDurationsNeedUnits(t *testing.T) {
	bin := builtBinary(t)
	durationFlag := regexp.MustCompile(`(?m)^\s+-([a-z0-9-]+) duration\b`)
	type tc struct {
		args []string
		want string // a regular expression
	}
	var cases []tc
	for _, c := range append(commands(), command{name: "lab fairness"}) {
		if c.name == "version" {
			continue
		}
		args := strings.Fields(c.name)
		help, _ := exec.Command(bin, append(args, "--help")...).CombinedOutput()
		for _, m := range durationFlag.FindAllStringSubmatch(string(help), -1) {
			// A setting's flag names its key too: "--interval 7 (control.interval): …".
			cases = append(cases, tc{append(append([]string(nil), args...), "--"+m[1], "7"), regexp.QuoteMeta("--"+m[1]+" 7") + `( \([a-z_.]+\))?: ` + regexp.QuoteMeta("a duration needs a unit, such as 7ms or 7s")})
		}
	}
	if len(cases) < 12 {
		t.Fatalf("found %d duration flags in the commands' help: the pattern missed them", len(cases))
	}
	for _, c := range []tc{
		{[]string{"link", "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:9", "--delay", "50"}, `--delay "50": a duration needs a unit, such as 50ms or 50s`},
		{[]string{"run", "--demo", "--link", "2M,50,3%,100"}, `--link delay "50": a duration needs a unit, such as 50ms or 50s`},
		{[]string{"run", "--demo", "--link", "2M,50ms,3,100"}, "for 3 %, write 3%"},
		{[]string{"rate", "--loss", "3", "--rtt", "100ms"}, "for 3 %, write 3%"},
		{[]string{"link", "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:9", "--loss", "3"}, "for 3 %, write 3%"},
	} {
		cases = append(cases, tc{c.args, regexp.QuoteMeta(c.want)})
	}
	for _, c := range cases {
		cmd := exec.Command(bin, c.args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		code := cmd.ProcessState.ExitCode()
		lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
		if code != exitUsage || len(lines) != 1 || !regexp.MustCompile(c.want).MatchString(lines[0]) {
			t.Errorf("fairgrid %s: exit %d (%v), stderr %q; want exit 2 and one line with %q", strings.Join(c.args, " "), code, err, stderr.String(), c.want)
		}
	}
}

// TestAuditRelayCapture: auditing a capture made on a relay's host (both
// legs of each session, as the loopback capture of sim, link and
// viewer had) warns and names the flag that keeps one leg; with that flag
// the warning is gone and every datagram of the kept leg is counted.
// Upstream rows get no verdict, in the table and in the HTML page, and the
// page states the counts its tables hold.
func TestAuditRelayCapture(t *testing.T) {
	bin := builtBinary(t)
	ds, err := capture.ReadFile(auditRealCapture(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	in := make([]capturetest.Datagram, len(ds))
	for i, d := range ds {
		in[i] = capturetest.Datagram(d)
	}
	relay := netip.MustParseAddrPort("127.0.0.1:9100")
	both := capturetest.Relay(in, relay, 9000)
	dir := t.TempDir()
	pcap := filepath.Join(dir, "relay.pcap")
	f, err := os.Create(pcap)
	if err != nil {
		t.Fatal(err)
	}
	if err := capturetest.Write(f, capturetest.Pcap, both); err != nil {
		t.Fatal(err)
	}
	f.Close()
	audit := func(args ...string) (int, string, string) {
		cmd := exec.Command(bin, append([]string{"audit"}, args...)...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		cmd.Run()
		return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
	}
	html := filepath.Join(dir, "report.html")
	code, out, errOut := audit("--html", html, pcap)
	warn := regexp.MustCompile(`fairgrid audit: warning: agent \S+ is on two circuits at once, .*both legs of a relay.*--sim 127\.0\.0\.1:9100`)
	if code != exitOK || len(warn.FindAllString(errOut, -1)) != 2 {
		t.Errorf("exit %d; stderr does not warn about each agent's two legs:\n%s", code, errOut)
	}
	if n := strings.Count(out, "no verdict: upstream, not throttled"); n != 4 {
		t.Errorf("%d upstream rows without a verdict, want 4:\n%s", n, out)
	}
	page, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	counts := regexp.MustCompile(`1 file\(s\), ([0-9\x{2009}]+) datagrams, 8 circuit directions`).FindStringSubmatch(string(page))
	if !strings.Contains(string(page), "both legs of a relay") || counts == nil || strings.ReplaceAll(counts[1], "\u2009", "") != strconv.Itoa(len(both)) {
		t.Errorf("the page lacks the warning or the counts of %d datagrams and 8 circuit directions: %q", len(both), counts)
	}
	code, out, errOut = audit("--sim", relay.String(), pcap)
	if code != exitOK || strings.Contains(errOut, "relay") {
		t.Errorf("--sim %s: exit %d, stderr:\n%s", relay, code, errOut)
	}
	if rows := regexp.MustCompile(`(?m)^\S.* > 127\.0\.0\.1:9100 `).FindAllString(out, -1); len(rows) != 4 || strings.Contains(out, "> 127.0.0.1:9000 ") {
		t.Errorf("--sim %s keeps %d rows of the relay's leg, want 4 and none of the other:\n%s", relay, len(rows), out)
	}
	if !strings.Contains(out, fmt.Sprintf("relay.pcap: %d bytes, %d UDP datagrams", mustSize(t, pcap), len(both))) {
		t.Errorf("not every datagram counted:\n%s", out)
	}
}

func mustSize(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// TestLabFairnessInterrupted: Ctrl-C during lab fairness prints what the
// runs that finished measured, or that none had, and exits 0 (it ended 1
// with "context canceled" and nothing on stdout).
func TestLabFairnessInterrupted(t *testing.T) {
	for _, tc := range []struct {
		name string
		wait *regexp.Regexp // the stderr line after which Ctrl-C comes (one submatch)
		want *regexp.Regexp // on stdout
	}{
		{"none finished", regexp.MustCompile(`^fairgrid lab fairness: (1 cells × 2 seeds)`),
			regexp.MustCompile(`(?m)^Interrupted: none of the 2 runs had finished; nothing measured\.$`)},
		{"one finished", regexp.MustCompile(`^\[1/2\] (.*seed 1): viewer ÷ TCP \d`),
			regexp.MustCompile(`(?ms)^Interrupted: 1 of 2 runs finished; what they measured .*^\| vtcp \| — \| saturating \| vtcp \| cubic \| 1 \|.*\| 1 \|$`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // separate processes, waiting on their clocks
			s := startBinary(t, 2*time.Minute, "lab", "fairness", "--design", "centre", "--controllers", "vtcp", "--tcp", "cubic",
				"--seeds", "2", "--parallel", "1", "--warmup", "5s", "--duration", "5s")
			if s.waitLine(tc.wait) == "" {
				_, _, errOut := s.interrupt(t)
				t.Fatalf("no line %v on stderr:\n%s", tc.wait, errOut)
			}
			code, stdout, stderr := s.interrupt(t)
			if code != exitOK || !tc.want.MatchString(stdout) || strings.Contains(stderr, "context canceled") {
				t.Errorf("exit %d; stdout:\n%s\nstderr:\n%s\nwant exit 0, %v on stdout and no context canceled", code, stdout, stderr, tc.want)
			}
		})
	}
}
