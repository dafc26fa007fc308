//go:build linux

package browsertest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/websocket"
)

// Chromium finds headless Chromium, installing Debian's package when it
// is missing and apt can run (as root); otherwise the test is skipped
// with the reason.
func Chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	apt, err := exec.LookPath("apt-get")
	if err != nil {
		t.Skip("skipped: chromium is not installed and there is no apt-get to install it")
	}
	if os.Geteuid() != 0 {
		t.Skip("skipped: chromium is not installed and only root can install it with apt-get")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	install := func() ([]byte, error) {
		cmd := exec.CommandContext(ctx, apt, "install", "-y", "chromium")
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		return cmd.CombinedOutput()
	}
	if _, err := install(); err != nil {
		// the package lists may be missing or stale on a fresh machine
		if upd, uerr := exec.CommandContext(ctx, apt, "update").CombinedOutput(); uerr != nil {
			t.Skipf("skipped: chromium is not installed and apt-get update failed (%v): %s", uerr, Tail(upd, 300))
		}
		if out, err := install(); err != nil {
			t.Skipf("skipped: chromium is not installed and apt-get install chromium failed (%v): %s", err, Tail(out, 300))
		}
	}
	p, err := exec.LookPath("chromium")
	if err != nil {
		t.Skipf("skipped: apt-get installed chromium but it is not on PATH: %v", err)
	}
	t.Logf("installed Debian's chromium: %s", p)
	return p
}

// Page is a DevTools-protocol connection to one page: requests by id,
// and the events collected as they come.
type Page struct {
	ws     *websocket.Conn
	nextID int
	// Events are the events received since the last Navigate (or
	// ClearEvents).
	Events []Message
}

// Message is a DevTools message: a command's answer or an event.
type Message struct {
	ID     int             `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

// Call sends one command and reads until its answer, keeping the events
// that arrive meanwhile; result, if not nil, receives the answer.
func (d *Page) Call(method string, params any, result any) error {
	d.nextID++
	id := d.nextID
	msg := map[string]any{"id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	if err := websocket.JSON.Send(d.ws, msg); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	for {
		var m Message
		if err := websocket.JSON.Receive(d.ws, &m); err != nil {
			return fmt.Errorf("%s: %w", method, err)
		}
		if m.ID == 0 {
			d.Events = append(d.Events, m)
			continue
		}
		if m.ID != id {
			continue
		}
		if m.Error != nil {
			return fmt.Errorf("%s: %s (%d)", method, m.Error.Message, m.Error.Code)
		}
		if result != nil {
			return json.Unmarshal(m.Result, result)
		}
		return nil
	}
}

// MustCall is Call, failing the test on an error.
func (d *Page) MustCall(t testing.TB, method string, params any, result any) {
	t.Helper()
	if err := d.Call(method, params, result); err != nil {
		t.Fatal(err)
	}
}

// WaitEvent reads until an event of the given method arrives (or has
// arrived since the events were cleared).
func (d *Page) WaitEvent(method string) error {
	for _, e := range d.Events {
		if e.Method == method {
			return nil
		}
	}
	for {
		var m Message
		if err := websocket.JSON.Receive(d.ws, &m); err != nil {
			return fmt.Errorf("waiting for %s: %w", method, err)
		}
		if m.ID == 0 {
			d.Events = append(d.Events, m)
			if m.Method == method {
				return nil
			}
		}
	}
}

// ClearEvents forgets the events received so far.
func (d *Page) ClearEvents() { d.Events = d.Events[:0] }

// Problems lists the console errors and warnings, uncaught exceptions and
// browser log errors (a blocked or failed load) among the events (the
// Runtime and Log domains must be enabled).
func (d *Page) Problems() []string {
	var out []string
	for _, e := range d.Events {
		switch e.Method {
		case "Runtime.consoleAPICalled":
			var p struct {
				Type string `json:"type"`
				Args []struct {
					Value       any    `json:"value"`
					Description string `json:"description"`
				} `json:"args"`
			}
			json.Unmarshal(e.Params, &p)
			if p.Type == "error" || p.Type == "warning" || p.Type == "assert" {
				out = append(out, fmt.Sprintf("console.%s %v", p.Type, p.Args))
			}
		case "Runtime.exceptionThrown":
			out = append(out, "exception: "+string(e.Params))
		case "Log.entryAdded":
			var p struct {
				Entry struct {
					Level, Source, Text, URL string
				} `json:"entry"`
			}
			json.Unmarshal(e.Params, &p)
			if p.Entry.Level == "error" || p.Entry.Level == "warning" {
				out = append(out, fmt.Sprintf("%s %s: %s %s", p.Entry.Level, p.Entry.Source, p.Entry.Text, p.Entry.URL))
			}
		}
	}
	return out
}

// Requests lists the URLs the page requested among the events (the
// Network domain must be enabled).
func (d *Page) Requests() []string {
	var out []string
	for _, e := range d.Events {
		if e.Method != "Network.requestWillBeSent" {
			continue
		}
		var p struct {
			Request struct {
				URL string `json:"url"`
			} `json:"request"`
		}
		json.Unmarshal(e.Params, &p)
		out = append(out, p.Request.URL)
	}
	return out
}

var devtoolsURL = regexp.MustCompile(`DevTools listening on (ws://[^\s]+)`)

// Start starts headless Chromium with DevTools on a free port and returns
// a connection to a new page, every call on which must end within
// deadline. Chromium and its children end with the test.
func Start(t testing.TB, chromium string, deadline time.Duration) *Page {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute+deadline)
	cmd := exec.CommandContext(ctx, chromium,
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-default-apps", "--disable-extensions", "--mute-audio", "--hide-scrollbars",
		"--user-data-dir="+t.TempDir(), "--remote-debugging-port=0", "--remote-allow-origins=*",
		"about:blank")
	// its own process group, so the renderer and GPU processes end with it
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		cancel()
		t.Skipf("skipped: chromium does not start: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		cmd.Wait()
	})
	found := make(chan string, 1)
	var logged bytes.Buffer
	go func() {
		sc := bufio.NewScanner(stderr)
		sent := false
		for sc.Scan() {
			if m := devtoolsURL.FindStringSubmatch(sc.Text()); m != nil && !sent {
				found <- m[1]
				sent = true
			} else if !sent && logged.Len() < 4000 {
				logged.WriteString(sc.Text() + "\n")
			}
		}
		if !sent {
			close(found)
		}
		io.Copy(io.Discard, stderr)
	}()
	var browserURL string
	select {
	case u, ok := <-found:
		if !ok {
			t.Fatalf("chromium exited without DevTools: %s", Tail(logged.Bytes(), 1000))
		}
		browserURL = u
	case <-ctx.Done():
		t.Fatalf("chromium did not open DevTools within a minute")
	}
	end := time.Now().Add(deadline)
	b, err := websocket.Dial(browserURL, "", "http://127.0.0.1/")
	if err != nil {
		t.Fatalf("devtools: %v", err)
	}
	defer b.Close()
	b.SetDeadline(end)
	browser := &Page{ws: b}
	var target struct {
		TargetID string `json:"targetId"`
	}
	if err := browser.Call("Target.createTarget", map[string]any{"url": "about:blank"}, &target); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(browserURL)
	if err != nil {
		t.Fatal(err)
	}
	pageURL := "ws://" + u.Host + "/devtools/page/" + target.TargetID
	ws, err := websocket.Dial(pageURL, "", "http://127.0.0.1/")
	if err != nil {
		t.Fatalf("devtools page: %v", err)
	}
	ws.MaxPayloadBytes = 64 << 20 // screenshots
	ws.SetDeadline(end)
	t.Cleanup(func() { ws.Close() })
	return &Page{ws: ws}
}

// Navigate loads u, after clearing the events, and waits for its load
// event (the Page domain must be enabled).
func (d *Page) Navigate(t testing.TB, u string) {
	t.Helper()
	d.ClearEvents()
	if err := d.Call("Page.navigate", map[string]any{"url": u}, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.WaitEvent("Page.loadEventFired"); err != nil {
		t.Fatal(err)
	}
}

// EvalJSON runs expression, which returns a JSON string or a promise of
// one, in the page and decodes its value into v; what names the step in
// errors.
func (d *Page) EvalJSON(t testing.TB, what, expression string, v any) {
	t.Helper()
	var eval struct {
		Result struct {
			Value string `json:"value"`
		} `json:"result"`
		ExceptionDetails json.RawMessage `json:"exceptionDetails"`
	}
	if err := d.Call("Runtime.evaluate", map[string]any{"expression": expression, "returnByValue": true, "awaitPromise": true}, &eval); err != nil {
		t.Fatal(err)
	}
	if eval.ExceptionDetails != nil {
		t.Fatalf("%s: %s", what, eval.ExceptionDetails)
	}
	if err := json.Unmarshal([]byte(eval.Result.Value), v); err != nil {
		t.Fatalf("%s: %v: %s", what, err, eval.Result.Value)
	}
}

// Screenshot returns a PNG of the box (x, y, w, h, in CSS pixels of the
// page); w or h 0 takes the whole page's width or height.
func (d *Page) Screenshot(t testing.TB, x, y, w, h float64) []byte {
	t.Helper()
	if w == 0 || h == 0 {
		var size struct{ W, H float64 }
		d.EvalJSON(t, "measuring the page", `JSON.stringify({W: document.documentElement.scrollWidth, H: document.documentElement.scrollHeight})`, &size)
		w, h = max(w, size.W), max(h, size.H)
	}
	var shot struct {
		Data string `json:"data"`
	}
	clip := map[string]any{"x": x, "y": y, "width": w, "height": h, "scale": 1}
	if err := d.Call("Page.captureScreenshot", map[string]any{"format": "png", "clip": clip, "captureBeyondViewport": true}, &shot); err != nil {
		t.Fatal(err)
	}
	raw, err := base64.StdEncoding.DecodeString(shot.Data)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}
