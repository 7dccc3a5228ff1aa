package haproxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// startHAProxy runs a real HAProxy (the Debian package) with a frontend on
// a free loopback port in front of backend "be" with one server, srv, at
// addr, checked every 200 ms; it returns the runtime API client and the
// frontend's address. Without haproxy the test skips, unless
// STAMPEDE_REQUIRE_SERVICES=1.
func startHAProxy(t *testing.T, addr string) (*Client, string) {
	t.Helper()
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		bin = "/usr/sbin/haproxy"
		if _, err := os.Stat(bin); err != nil {
			if os.Getenv("STAMPEDE_REQUIRE_SERVICES") == "1" {
				t.Fatal("haproxy is required (STAMPEDE_REQUIRE_SERVICES=1): apt-get install haproxy")
			}
			t.Skip("haproxy is not installed (apt-get install haproxy; scripts/lb.sh installs it)")
		}
	}
	dir := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	front := l.Addr().String()
	l.Close() // HAProxy binds it (a race with another listener is unlikely and fails loudly)
	sock := filepath.Join(dir, "api.sock")
	cfg := fmt.Sprintf(`global
	stats socket %s mode 600 level admin
defaults
	mode http
	timeout connect 2s
	timeout client 10s
	timeout server 10s
frontend fe
	bind %s
	default_backend be
backend be
	option httpchk GET /
	server srv %s check inter 200ms fall 1 rise 1
`, sock, front, addr)
	cfgPath := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-db", "-f", cfgPath)
	var log strings.Builder
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
	})
	c := &Client{Socket: sock}
	waitFor(t, "the runtime API answers", func() bool {
		select {
		case <-done:
			t.Fatalf("haproxy exited: %s", log.String())
		default:
		}
		_, err := c.ShowStat(context.Background())
		return err == nil
	})
	return c, front
}

// waitFor polls cond every 50 ms for up to 20 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting until %s", what)
}

// row returns proxy/server's row of one `show stat`.
func row(t *testing.T, c *Client, key string) Stat {
	t.Helper()
	st, err := c.ShowStat(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range st {
		if s.Key() == key {
			return s
		}
	}
	t.Fatalf("no row %s in show stat", key)
	return Stat{}
}

// TestClientAndSampler drives a real HAProxy: its server goes UP, a
// request through it counts a session, drain and ready change its status,
// an unknown server is a command error, and once the server is gone the
// 503s HAProxy answers itself show in the sampler's totals and CSV.
func TestClientAndSampler(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer backend.Close()
	c, front := startHAProxy(t, backend.Listener.Addr().String())
	ctx := context.Background()
	waitFor(t, "be/srv is UP", func() bool { return row(t, c, "be/srv").Status == "UP" })

	s := &Sampler{Clients: []*Client{c}}
	if err := s.Check(ctx); err != nil {
		t.Fatal(err)
	}
	s.Sample(ctx)
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	get := func() int {
		resp, err := hc.Get("http://" + front + "/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get(); code != 200 {
		t.Fatalf("GET through HAProxy: %d, want 200", code)
	}
	if n := row(t, c, "be/srv").Stot; n != 1 {
		t.Errorf("be/srv stot %d after one request, want 1", n)
	}

	if err := c.SetServerState(ctx, "be", "srv", StateDrain); err != nil {
		t.Fatal(err)
	}
	if st := row(t, c, "be/srv").Status; st != "DRAIN" {
		t.Errorf("status after drain %q, want DRAIN", st)
	}
	if err := c.SetServerState(ctx, "be", "srv", StateReady); err != nil {
		t.Fatal(err)
	}
	if st := row(t, c, "be/srv").Status; st != "UP" {
		t.Errorf("status after ready %q, want UP", st)
	}
	if err := c.SetServerState(ctx, "be", "nosuch", StateDrain); !errors.Is(err, ErrCommand) {
		t.Errorf("unknown server: %v, want ErrCommand", err)
	}
	if err := c.SetServerState(ctx, "be", "srv", "up"); err == nil {
		t.Error("state \"up\" accepted, want an error naming the states")
	}

	backend.Close()
	waitFor(t, "be/srv is DOWN", func() bool { return row(t, c, "be/srv").Status == "DOWN" })
	for range 3 {
		if code := get(); code != 503 {
			t.Fatalf("GET with no server: %d, want 503", code)
		}
	}
	// HAProxy counts a session's answer when the session ends, a moment
	// after the client has read it.
	waitFor(t, "the frontend counted 3 5xx", func() bool { return row(t, c, "fe/FRONTEND").Hrsp5xx >= 3 })
	s.Sample(ctx)
	tot := s.Totals()
	var fe, srv RowTotals
	for _, r := range tot.Rows {
		switch r.Proxy + "/" + r.Server {
		case "fe/FRONTEND":
			fe = r
		case "be/srv":
			srv = r
		}
	}
	if fe.HTTP5xx != 3 || fe.Sessions != 4 {
		t.Errorf("frontend totals %+v, want 3 5xx of 4 sessions", fe)
	}
	if srv.ChecksDown != 1 || srv.LastStatus != "DOWN" || srv.Sessions != 1 {
		t.Errorf("server totals %+v, want 1 check down, DOWN, 1 session", srv)
	}
	if tot.Note != "" {
		t.Errorf("note %q, want none", tot.Note)
	}

	bad := &Sampler{Clients: []*Client{{Socket: filepath.Join(t.TempDir(), "none.sock")}}}
	if err := bad.Check(ctx); err == nil || !strings.Contains(err.Error(), "none.sock") {
		t.Errorf("Check of a missing socket: %v, want an error naming it", err)
	}
}
