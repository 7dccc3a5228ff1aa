package proxy_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/chaos"
	"github.com/stampede-dev/stampede/childproc"
	"github.com/stampede-dev/stampede/controlapi"
	"github.com/stampede-dev/stampede/fault"
	"github.com/stampede-dev/stampede/internal/tcptest"
	"github.com/stampede-dev/stampede/proxy"
)

// proxyChildEnv makes the test binary a `stampede proxy` process, so group
// tests start real processes without building the stampede binary. An init
// hook, not TestMain, so the package's other tests may have their own.
const proxyChildEnv = "STAMPEDE_PROXY_CHILD"

func init() {
	if os.Getenv(proxyChildEnv) != "1" {
		return
	}
	var rc proxy.RunConfig
	if err := childproc.ReadPlan(os.Stdin, &rc.Proxy); err != nil {
		fmt.Fprintln(os.Stderr, "proxy child:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := proxy.Run(ctx, rc); err != nil {
		fmt.Fprintln(os.Stderr, "proxy child:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// testProxySpawner starts this test binary as a proxy group's process
// (the init hook above runs it), its plan on stdin as the stampede binary's
// own spawner gives it.
func testProxySpawner(t testing.TB) proxy.Spawner {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return func(ctx context.Context, cfg proxy.Config, timeout time.Duration) (*childproc.Child, childproc.ReadyLine, error) {
		cmd := exec.Command(exe)
		cmd.Env = append(os.Environ(), proxyChildEnv+"=1")
		cmd.Stderr = os.Stderr
		var l childproc.ReadyLine
		c, err := childproc.Start(ctx, "proxy group", cmd, cfg, &l, timeout)
		return c, l, err
	}
}

// TestProxyGroupSpreadsAndSwitches runs two proxy processes on one port:
// connections spread over both, Set reaches both, Close stops both.
func TestProxyGroupSpreadsAndSwitches(t *testing.T) {
	g, err := proxy.StartGroup(context.Background(), proxy.GroupConfig{
		Spawn: testProxySpawner(t), Procs: 2,
		Proxy:     proxy.Config{Upstream: tcptest.Echo(t), Seed: 5},
		SourceIPs: []netip.Addr{netip.MustParseAddr("127.0.0.1")},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	if pids := g.PIDs(); len(pids) != 2 {
		t.Fatalf("PIDs %v, want 2 processes", pids)
	}
	var conns []net.Conn
	for i := range 20 {
		c, err := net.DialTimeout("tcp", g.Addr(), 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if err := tcptest.EchoOnce(c, []byte{byte(i)}, 5*time.Second); err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	ctx := context.Background()
	st, err := g.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Accepted != 20 || st.Active != 20 {
		t.Errorf("group stats %+v: want 20 accepted and open", st)
	}
	for _, c := range g.Children() {
		if s := procStats(t, c); s.Accepted == 0 {
			t.Errorf("process %d accepted nothing: SO_REUSEPORT should spread 20 connections", c.PID)
		}
	}

	g.Set(fault.Set{Latency: 100 * time.Millisecond})
	for _, c := range []net.Conn{conns[0], conns[19]} {
		start := time.Now()
		if err := tcptest.EchoOnce(c, []byte("slow"), 5*time.Second); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d < 200*time.Millisecond {
			t.Errorf("echo with latency=100ms took %v, want at least 200 ms", d)
		}
	}
	g.Set(fault.Set{Reset: true})
	for i, c := range conns {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Read(make([]byte, 1)); !tcptest.IsReset(err) {
			t.Errorf("connection %d: %v, want a reset", i, err)
		}
	}
	if st, _ := g.Stats(ctx); st.Reset != 20 || st.Fault != "reset" {
		t.Errorf("after reset: %+v, want 20 reset", st)
	}
	g.Close()
	if pids := g.PIDs(); len(pids) != 0 {
		t.Errorf("after Close: %v still running", pids)
	}
}

func procStats(t *testing.T, line childproc.ReadyLine) proxy.Stats {
	t.Helper()
	req, err := controlapi.NewRequest(context.Background(), "GET", "http://"+line.Control+"/stats", line.Token)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st proxy.Stats
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestRunProxyAppliesSchedule runs `stampede proxy` in this process with a
// schedule: the fault is on during its window and off after it, and the
// run ends after its duration.
func TestRunProxyAppliesSchedule(t *testing.T) {
	sched, err := chaos.Parse("at 600ms proxy latency=50ms jitter=10ms for 400ms")
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	logs := &syncWriter{w: &strings.Builder{}}
	done := make(chan error, 1)
	go func() {
		done <- proxy.Run(context.Background(), proxy.RunConfig{
			// 2 s with the fault off after the window, so a poll on a
			// loaded machine sees it before the proxy stops.
			Proxy: proxy.Config{Upstream: tcptest.Echo(t)}, Schedule: sched, Duration: 3 * time.Second,
			Initial: fault.Set{Bandwidth: 1 << 20}, Stdout: pw, Log: logs,
		})
		pw.Close()
	}()
	raw, err := bufio.NewReader(pr).ReadBytes('\n')
	if err != nil {
		t.Fatalf("no ready line: %v", err)
	}
	go io.Copy(io.Discard, pr)
	var line childproc.ReadyLine
	if err := json.Unmarshal(raw, &line); err != nil || !line.Ready || line.Addr == "" || line.Control == "" {
		t.Fatalf("ready line %s: %v", raw, err)
	}
	fault := func() string {
		req, err := controlapi.NewRequest(context.Background(), "GET", "http://"+line.Control+"/fault", line.Token)
		if err != nil {
			return err.Error()
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return strings.TrimSpace(string(b))
	}
	if got := fault(); got != "bandwidth=1MiB/s" {
		t.Errorf("fault at start %q, want the initial bandwidth=1MiB/s", got)
	}
	seen := map[string]bool{}
	deadline := time.Now().Add(5 * time.Second)
	for !seen["off"] && time.Now().Before(deadline) {
		seen[fault()] = true
		time.Sleep(20 * time.Millisecond)
	}
	if !seen["latency=50ms jitter=10ms"] || !seen["off"] {
		t.Errorf("faults seen %v: want the scheduled latency, then off", seen)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not end after its 3 s duration")
	}
	if !strings.Contains(logs.String(), "chaos: at 600ms proxy latency=50ms jitter=10ms for 400ms at") {
		t.Errorf("log %q: want the event", logs.String())
	}
}

func TestRunProxyRefusesTargetEvents(t *testing.T) {
	sched, err := chaos.Parse("at 1s proxy reset for 1s\nat 2s restart abrupt")
	if err != nil {
		t.Fatal(err)
	}
	err = proxy.Run(context.Background(), proxy.RunConfig{Proxy: proxy.Config{Upstream: "127.0.0.1:9"}, Schedule: sched})
	want := `proxy: Schedule: line 2: "at 2s restart abrupt" is a restart event: a proxy on its own applies only proxy events`
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

// TestRunProxyProcsCap: a proxy process count past the cap is refused
// with the cap, before anything is forked.
func TestRunProxyProcsCap(t *testing.T) {
	err := proxy.Run(context.Background(), proxy.RunConfig{Proxy: proxy.Config{Upstream: "127.0.0.1:9"}, Procs: 1000})
	want := "proxy: Procs: 1000 is above the cap of 256 proxy processes"
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

// OnExit hears of a proxy process killed from outside, and of none that
// Close stops.
func TestProxyGroupOnExit(t *testing.T) {
	exits := make(chan int, 4)
	g, err := proxy.StartGroup(context.Background(), proxy.GroupConfig{
		Spawn: testProxySpawner(t), Procs: 2,
		Proxy:  proxy.Config{Upstream: tcptest.Echo(t), Seed: 5},
		OnExit: func(pid int, err error) { exits <- pid },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	victim := int(g.PIDs()[0])
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case pid := <-exits:
		if pid != victim {
			t.Fatalf("OnExit for %d; want the killed %d", pid, victim)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no OnExit for a proxy process killed from outside")
	}
	g.Close()
	select {
	case pid := <-exits:
		t.Fatalf("OnExit for %d, which Close stopped", pid)
	case <-time.After(200 * time.Millisecond):
	}
}

// TestRunProxyControlNeedsToken: the proxy's control API refuses a fault
// asked without the token (401) or from a foreign page (403), and the
// relay carries on without it.
func TestRunProxyControlNeedsToken(t *testing.T) {
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- proxy.Run(ctx, proxy.RunConfig{Proxy: proxy.Config{Upstream: tcptest.Echo(t)}, Stdout: pw})
		pw.Close()
	}()
	defer func() { cancel(); <-done }()
	raw, err := bufio.NewReader(pr).ReadBytes('\n')
	if err != nil {
		t.Fatalf("no ready line: %v", err)
	}
	go io.Copy(io.Discard, pr)
	var line childproc.ReadyLine
	if err := json.Unmarshal(raw, &line); err != nil || len(line.Token) != 64 {
		t.Fatalf("ready line %s: %v; want a token", raw, err)
	}
	for _, tc := range []struct {
		name, token, origin string
		want                int
	}{
		{"no token", "", "", 401},
		{"wrong token", controlapi.NewToken(), "", 401},
		{"foreign origin", line.Token, "http://evil.example", 403},
	} {
		req, _ := http.NewRequest("POST", "http://"+line.Control+"/fault?reset", nil)
		if tc.token != "" {
			controlapi.SetToken(req, tc.token)
		}
		if tc.origin != "" {
			req.Header.Set("Origin", tc.origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, resp.StatusCode, tc.want)
		}
	}
	c, err := net.Dial("tcp", line.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := tcptest.EchoOnce(c, []byte("still relayed"), 5*time.Second); err != nil {
		t.Fatalf("relay after refused control requests: %v", err)
	}
	if st := procStats(t, line); st.Reset != 0 || st.Fault != "" {
		t.Fatalf("stats %+v: a refused reset was applied", st)
	}
}
