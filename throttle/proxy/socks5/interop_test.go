package socks5

import (
	"context"
	"fmt"
	"github.com/fairgrid/fairgrid/lludp"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// The interoperability tests drive the server with clients nobody here
// wrote. The project's test set-up installs them (Debian: curl,
// python3-socks); without them the tests skip and say which is missing.

func httpTarget(t *testing.T) (*httptest.Server, uint16) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello %s via %s", r.URL.Path, r.Host)
	}))
	t.Cleanup(srv.Close)
	port := addrPortOf(srv.Listener.Addr()).Port()
	return srv, port
}

func TestCurlConnect(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl not installed (apt-get install curl)")
	}
	_, port := httpTarget(t)
	creds := &Auth{Username: "viewer", Password: "s3cret"}
	cases := []struct {
		name      string
		auth      *Auth
		proxyFlag string
		host      string
		user      string
		wantFail  bool
		wantCause RefusalCause
	}{
		{name: "socks5 no auth", proxyFlag: "--socks5", host: "127.0.0.1"},
		{name: "socks5-hostname no auth", proxyFlag: "--socks5-hostname", host: "localhost"},
		{name: "socks5 username/password", auth: creds, proxyFlag: "--socks5", host: "127.0.0.1", user: "viewer:s3cret"},
		{name: "socks5-hostname username/password", auth: creds, proxyFlag: "--socks5-hostname", host: "localhost", user: "viewer:s3cret"},
		{name: "wrong password", auth: creds, proxyFlag: "--socks5-hostname", host: "localhost", user: "viewer:nope", wantFail: true, wantCause: RefusedAuthFailed},
		{name: "no credentials for server with auth", auth: creds, proxyFlag: "--socks5", host: "127.0.0.1", wantFail: true, wantCause: RefusedNoMethod},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := startServer(t, Config{Auth: tc.auth, AllowedPorts: lludp.Ports{{Lo: port, Hi: port}}})
			url := "http://" + net.JoinHostPort(tc.host, strconv.Itoa(int(port))) + "/grid"
			args := []string{"-sS", "--max-time", "5", tc.proxyFlag, srv.addr}
			if tc.user != "" {
				args = append(args, "--proxy-user", tc.user)
			}
			out, err := exec.Command(curl, append(args, url)...).CombinedOutput()
			if tc.wantFail {
				if err == nil {
					t.Fatalf("curl succeeded: %s", out)
				}
				if srv.Refused(tc.wantCause) != 1 {
					t.Errorf("refused[%s] = %d, want 1 (curl: %s)", tc.wantCause, srv.Refused(tc.wantCause), out)
				}
				return
			}
			if err != nil {
				t.Fatalf("curl: %v: %s", err, out)
			}
			want := "hello /grid via " + net.JoinHostPort(tc.host, strconv.Itoa(int(port)))
			if string(out) != want {
				t.Errorf("curl got %q, want %q", out, want)
			}
			if n := srv.stats.connectsAll.Load(); n != 1 {
				t.Errorf("%d connects counted, want 1", n)
			}
		})
	}
}

// pysocksPython is the interpreter that has PySocks: Debian's python3 with
// python3-socks (a pyenv python3 on PATH usually lacks it).
func pysocksPython(t *testing.T) string {
	const py = "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		t.Skip("/usr/bin/python3 not installed (apt-get install python3-socks)")
	}
	if err := exec.Command(py, "-c", "import socks").Run(); err != nil {
		t.Skip("PySocks missing for /usr/bin/python3 (apt-get install python3-socks)")
	}
	return py
}

// udpEcho answers every datagram with "echo " and the datagram.
func udpEcho(t *testing.T) *net.UDPConn {
	pc := udpPeer(t)
	go func() {
		buf := make([]byte, 2048)
		for {
			n, from, err := pc.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			pc.WriteToUDPAddrPort(append([]byte("echo "), buf[:n]...), from)
		}
	}()
	return pc
}

func TestPySocksUDPAssociate(t *testing.T) {
	py := pysocksPython(t)
	echo := udpEcho(t)
	echoAddr := addrPortOf(echo.LocalAddr())
	creds := &Auth{Username: "viewer", Password: "s3cret"}
	for _, auth := range []*Auth{nil, creds} {
		t.Run(map[bool]string{true: "no auth", false: "username/password"}[auth == nil], func(t *testing.T) {
			rec := newRecorder()
			srv := startServer(t, Config{Auth: auth, Hooks: rec})
			args := []string{"testdata/pysocks_udp.py", strconv.Itoa(int(addrPortOf(mustResolve(t, srv.addr)).Port())), strconv.Itoa(int(echoAddr.Port()))}
			if auth != nil {
				args = append(args, auth.Username, auth.Password)
			}
			ctx, cancel := context.WithTimeout(context.Background(), ioDeadline*2)
			defer cancel()
			out, err := exec.CommandContext(ctx, py, args...).CombinedOutput()
			if err != nil {
				t.Fatalf("pysocks: %v: %s", err, out)
			}
			var want strings.Builder
			for i := range 3 {
				fmt.Fprintf(&want, "echo ping %d %s\n", i, echoAddr)
			}
			if string(out) != want.String() {
				t.Errorf("pysocks printed\n%s\nwant\n%s", out, want.String())
			}
			if n := srv.stats.datagrams[dirClientToRemote].Load(); n != 3 {
				t.Errorf("%d client datagrams relayed, want 3", n)
			}
			<-rec.closed // the script closed its control connection
		})
	}
}

func mustResolve(t *testing.T, addr string) net.Addr {
	a, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestDialerHTTP uses the package's own client as an http.Transport dialer,
// the way the synthetic viewer will reach login and capabilities.
func TestDialerHTTP(t *testing.T) {
	_, port := httpTarget(t)
	creds := &Auth{Username: "viewer", Password: "s3cret"}
	srv := startServer(t, Config{Auth: creds, AllowedPorts: lludp.Ports{{Lo: port, Hi: port}}})
	d := &Dialer{ProxyAddr: srv.addr, Auth: creds}
	client := &http.Client{Transport: &http.Transport{DialContext: d.DialContext}, Timeout: ioDeadline}
	defer client.CloseIdleConnections()
	for _, host := range []string{"127.0.0.1", "localhost"} {
		resp, err := client.Get("http://" + net.JoinHostPort(host, strconv.Itoa(int(port))) + "/caps")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := "hello /caps via " + net.JoinHostPort(host, strconv.Itoa(int(port))); string(body) != want {
			t.Errorf("got %q, want %q", body, want)
		}
	}
	bad := &Dialer{ProxyAddr: srv.addr, Auth: &Auth{Username: "viewer", Password: "x"}}
	if _, err := bad.DialContext(context.Background(), "tcp", "127.0.0.1:"+strconv.Itoa(int(port))); err == nil {
		t.Error("wrong password accepted")
	}
}
