package scripts

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/haproxy"
)

var (
	buildOnce   sync.Once
	stampedeBin string
	buildErr    error
)

// stampede builds ./cmd/stampede once for the tests of this package
// (without the race detector: it runs as real processes).
func stampede(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "scripts-test-")
		if err != nil {
			buildErr = err
			return
		}
		stampedeBin = filepath.Join(dir, "stampede")
		out, err := exec.Command("go", "build", "-o", stampedeBin, "github.com/stampede-dev/stampede/cmd/stampede").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("building stampede: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return stampedeBin
}

// run runs a script of this folder with args and STAMPEDE set, and
// returns its stdout and stderr.
func run(t *testing.T, name string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := exec.Command("bash", append([]string{name}, args...)...)
	cmd.Env = append(os.Environ(), "STAMPEDE="+stampede(t))
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}

// lbUp runs `lb.sh up DIR args...` and returns the URL it printed last;
// it skips the test when haproxy cannot be installed, unless
// STAMPEDE_REQUIRE_SERVICES=1. `down` runs at the end of the test and
// must leave none of the processes of DIR's pid files alive.
func lbUp(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, errOut, err := run(t, "lb.sh", append([]string{"up", dir}, args...)...)
	t.Cleanup(func() {
		pids := pidFiles(t, dir)
		if o, e, err := run(t, "lb.sh", "down", dir); err != nil {
			t.Errorf("down: %v\n%s%s", err, o, e)
		}
		for f, pid := range pids {
			if syscall.Kill(pid, 0) == nil {
				t.Errorf("down left %s (pid %d) running", f, pid)
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 3 {
		if os.Getenv("STAMPEDE_REQUIRE_SERVICES") == "1" {
			t.Fatalf("haproxy is required (STAMPEDE_REQUIRE_SERVICES=1): %s", errOut)
		}
		t.Skipf("haproxy (or node) cannot be installed here: %s", errOut)
	}
	if err != nil {
		t.Fatalf("up: %v\n%s%s", err, out, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	url := lines[len(lines)-1]
	if !regexp.MustCompile(`^wss?://127\.0\.0\.1:[0-9]+/$`).MatchString(url) {
		t.Fatalf("last line %q is not ws[s]://127.0.0.1:PORT/\n%s", url, out)
	}
	return url
}

// pidFiles reads every *.pid of dir: file name to pid.
func pidFiles(t *testing.T, dir string) map[string]int {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.pid"))
	out := map[string]int{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			out[filepath.Base(f)] = pid
		}
	}
	return out
}

// frontendSessions sums the frontend's open sessions over the instances.
func frontendSessions(t *testing.T, dir string) uint64 {
	t.Helper()
	socks, _ := filepath.Glob(filepath.Join(dir, "haproxy-*.sock"))
	var n uint64
	for _, s := range socks {
		st, err := (&haproxy.Client{Socket: s}).ShowStat(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range st {
			if r.Server == "FRONTEND" {
				n += r.Scur
			}
		}
	}
	return n
}

// waitSessions waits up to 60 s until the frontend holds n sessions.
func waitSessions(t *testing.T, dir string, n uint64, what string) {
	t.Helper()
	var got uint64
	for end := time.Now().Add(60 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		if got = frontendSessions(t, dir); got == n {
			return
		}
	}
	t.Fatalf("%s: HAProxy's frontend holds %d sessions, want %d", what, got, n)
}

// fleet is a `stampede loadgen` started by a test.
type fleet struct {
	cmd  *exec.Cmd
	out  *os.File
	done chan struct{}
}

// startFleet starts `stampede loadgen args...` in its own process group,
// output in a file; the end of the test kills the group if it still runs.
func startFleet(t *testing.T, args ...string) *fleet {
	t.Helper()
	out, err := os.Create(filepath.Join(t.TempDir(), "loadgen.out"))
	if err != nil {
		t.Fatal(err)
	}
	f := &fleet{cmd: exec.Command(stampede(t), append([]string{"loadgen"}, args...)...), out: out, done: make(chan struct{})}
	f.cmd.Stdout, f.cmd.Stderr = out, out
	f.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := f.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { f.cmd.Wait(); close(f.done) }()
	t.Cleanup(func() {
		syscall.Kill(-f.cmd.Process.Pid, syscall.SIGKILL)
		<-f.done
		out.Close()
	})
	return f
}

// stop interrupts the fleet (its results are still written) and waits up
// to 60 s for it to exit; it returns what the fleet printed.
func (f *fleet) stop(t *testing.T) string {
	t.Helper()
	f.cmd.Process.Signal(os.Interrupt)
	select {
	case <-f.done:
	case <-time.After(60 * time.Second):
		t.Errorf("loadgen did not stop on SIGINT")
	}
	b, _ := os.ReadFile(f.out.Name())
	return string(b)
}

// TestLBRollingDeploy: lb.sh starts HAProxy (two instances) in front of
// three bundled targets; a small fleet connects through it; a rolling
// deploy moves every backend (new pid, one step line each) and the whole
// fleet is connected through HAProxy again; the fleet's results hold
// HAProxy's counters (every server went DOWN once); down leaves no process.
func TestLBRollingDeploy(t *testing.T) {
	dir := t.TempDir()
	url := lbUp(t, dir, "--backlog", "64", "--accept-rate", "500")
	before := pidFiles(t, dir)
	for _, f := range []string{"s1.pid", "s2.pid", "s3.pid", "haproxy-1.pid", "haproxy-2.pid"} {
		if before[f] == 0 {
			t.Fatalf("up wrote no %s: %v", f, before)
		}
	}

	const clients = 60
	out := filepath.Join(t.TempDir(), "results")
	fl := startFleet(t, "--url", url, "--clients", strconv.Itoa(clients), "--duration", "5m",
		"--policy", "exp:initial=200ms,max=2s,jitter=0.5", "--haproxy-socket", filepath.Join(dir, "haproxy-*.sock"),
		"--out", out, "--quiet")
	waitSessions(t, dir, clients, "before the deploy")

	// KILL, as a crash or an expired grace period ends a process: the
	// kernel closes the backend's sockets, HAProxy the clients' (1006).
	stdout, stderr, err := run(t, "rolling-deploy.sh", dir, "--signal", "KILL")
	if err != nil {
		t.Fatalf("rolling-deploy: %v\n%s%s", err, stdout, stderr)
	}
	var steps []string
	sc := bufio.NewScanner(strings.NewReader(stdout))
	line := regexp.MustCompile(`^stampede-event: (\S+) (\S+) \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z`)
	for sc.Scan() {
		m := line.FindStringSubmatch(sc.Text())
		if m == nil {
			t.Errorf("line %q is not a stampede-event line", sc.Text())
			continue
		}
		steps = append(steps, m[1]+" "+m[2])
	}
	want := "deploy-start deploy,drain s1,restart s1,up s1,ready s1,drain s2,restart s2,up s2,ready s2,drain s3,restart s3,up s3,ready s3,deploy-end deploy"
	if got := strings.Join(steps, ","); got != want {
		t.Errorf("steps\n%s\nwant\n%s", got, want)
	}
	after := pidFiles(t, dir)
	for _, s := range []string{"s1.pid", "s2.pid", "s3.pid"} {
		if after[s] == before[s] {
			t.Errorf("%s: pid %d unchanged, the backend was not restarted", s, after[s])
		}
	}
	waitSessions(t, dir, clients, "after the deploy")

	fleetOut := fl.stop(t)
	var sum struct {
		Connect struct {
			Successes uint64 `json:"successes"`
		} `json:"connect"`
		Events []struct {
			Disconnects map[string]uint64 `json:"disconnects"`
		} `json:"events"`
		HAProxy *haproxy.Totals `json:"haproxy"`
	}
	b, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil {
		t.Fatalf("%v\n%s", err, fleetOut)
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	if sum.HAProxy == nil || sum.HAProxy.Instances != 2 || sum.HAProxy.Samples < 2 {
		t.Fatalf("summary.json haproxy: %+v", sum.HAProxy)
	}
	down := map[string]uint64{}
	for _, r := range sum.HAProxy.Rows {
		down[r.Server] = r.ChecksDown
	}
	for _, s := range []string{"s1", "s2", "s3"} {
		// Each restart is seen DOWN once by each of the two instances.
		if down[s] < 2 {
			t.Errorf("%s went DOWN %d times in HAProxy's counters, want at least 2 (once per instance)", s, down[s])
		}
	}
	var abrupt, graceful uint64
	for _, e := range sum.Events {
		abrupt += e.Disconnects["closed_1006"]
		graceful += e.Disconnects["closed_1001"]
	}
	if abrupt == 0 || graceful != 0 {
		t.Errorf("disconnects closed_1006 %d, closed_1001 %d: want only 1006 from a deploy with --signal KILL", abrupt, graceful)
	}
	if sum.Connect.Successes <= clients {
		t.Errorf("%d successful connects, want more than the %d first ones (the deploy's reconnects)", sum.Connect.Successes, clients)
	}
	csv, err := os.ReadFile(filepath.Join(out, "haproxy.csv"))
	if err != nil || !strings.HasPrefix(string(csv), haproxy.CSVHeader+"\n") {
		t.Errorf("haproxy.csv: %v\n%.300s", err, csv)
	}
}

// TestLBRollingDeploySpread: a rolling deploy with --spread and --hint
// stops each bundled target through its control API: its clients are
// closed 1013 with a return hint (relayed by HAProxy), over the spread,
// none 1006 or 1001, and the whole fleet is back through HAProxy.
func TestLBRollingDeploySpread(t *testing.T) {
	dir := t.TempDir()
	url := lbUp(t, dir, "--backlog", "64", "--accept-rate", "500", "--instances", "1")
	const clients = 30
	out := filepath.Join(t.TempDir(), "results")
	fl := startFleet(t, "--url", url, "--clients", strconv.Itoa(clients), "--duration", "5m",
		"--policy", "exp:initial=200ms,max=2s,jitter=0.5", "--out", out, "--quiet")
	waitSessions(t, dir, clients, "before the deploy")
	if stdout, stderr, err := run(t, "rolling-deploy.sh", dir, "--drain-timeout", "0", "--spread", "1", "--hint", "2"); err != nil {
		t.Fatalf("rolling-deploy: %v\n%s%s", err, stdout, stderr)
	}
	waitSessions(t, dir, clients, "after the deploy")
	fleetOut := fl.stop(t)
	var sum struct {
		Connect struct {
			Disconnects map[string]uint64 `json:"disconnects"`
		} `json:"connect"`
	}
	b, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil {
		t.Fatalf("%v\n%s", err, fleetOut)
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	d := sum.Connect.Disconnects
	if d["closed_1013"] == 0 || d["closed_1006"] != 0 || d["closed_1001"] != 0 {
		t.Errorf("disconnects %v: want 1013 closes only, from the shaped stops", d)
	}
	for _, args := range [][]string{{"--spread", "1", "--signal", "KILL"}, {"--hint", "soon"}} {
		if _, stderr, err := run(t, "rolling-deploy.sh", append([]string{dir}, args...)...); err == nil || !strings.Contains(stderr, args[len(args)-2]) {
			t.Errorf("rolling-deploy %v: %v %q, want an error naming %s", args, err, stderr, args[len(args)-2])
		}
	}
}

// TestLBNode: the Node ws server behind HAProxy (--backend node) takes a
// fleet and survives a rolling deploy with every client back.
func TestLBNode(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil && os.Getenv("STAMPEDE_REQUIRE_SERVICES") != "1" {
		t.Skip("node is not installed (apt-get install nodejs npm)")
	}
	dir := t.TempDir()
	url := lbUp(t, dir, "--backend", "node", "--instances", "1")
	const clients = 30
	fl := startFleet(t, "--url", url, "--clients", strconv.Itoa(clients), "--duration", "5m",
		"--mode", "echo", "--msg-rate", "1", "--policy", "exp:initial=200ms,max=2s,jitter=0.5")
	waitSessions(t, dir, clients, "before the deploy")
	if stdout, stderr, err := run(t, "rolling-deploy.sh", dir); err != nil {
		t.Fatalf("rolling-deploy: %v\n%s%s", err, stdout, stderr)
	}
	waitSessions(t, dir, clients, "after the deploy")
	fleetOut := fl.stop(t)
	// Echo mode: the Node server answered the fleet's messages.
	m := regexp.MustCompile(`(?m)^messages: sent (\d+), delivered (\d+)`).FindStringSubmatch(fleetOut)
	if m == nil || m[2] == "0" {
		t.Errorf("no echo came back through HAProxy from the Node server:\n%s", fleetOut)
	}
}

// TestLBUsage: bad flags fail with status 2 and a message naming the flag,
// before anything starts; down on a folder that never went up is no error.
func TestLBUsage(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"up", dir, "--backlog", "0"}, "--backlog"},
		{[]string{"up", dir, "--backend", "nginx"}, "--backend"},
		{[]string{"up", dir, "--backend", "node", "--accept-rate", "5"}, "--accept-rate"},
		{[]string{"sideways", dir}, "usage"},
		{[]string{"up", dir, "--queue", "0"}, "--queue"},
	} {
		_, stderr, err := run(t, "lb.sh", c.args...)
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("lb.sh %v: %v %q, want status 2 naming %s", c.args, err, stderr, c.want)
		}
	}
	if _, stderr, err := run(t, "lb.sh", "down", dir); err != nil {
		t.Errorf("down of a folder never up: %v %s", err, stderr)
	}
	if _, stderr, err := run(t, "rolling-deploy.sh", dir, "--signal", "HUP"); err == nil || !strings.Contains(stderr, "--signal") {
		t.Errorf("rolling-deploy --signal HUP: %v %q, want an error naming --signal", err, stderr)
	}
	if _, stderr, err := run(t, "rolling-deploy.sh", dir); err == nil || !strings.Contains(stderr, "lb.env") {
		t.Errorf("rolling-deploy of a folder never up: %v %q, want an error naming lb.env", err, stderr)
	}
}

// TestLBTLS: HAProxy terminates TLS with lb.sh's test CA; a drill through
// it connects with --ca, fails every attempt with the tls class without
// it (exit 1), and connects with --insecure, saying so in a warning.
func TestLBTLS(t *testing.T) {
	dir := t.TempDir()
	url := lbUp(t, dir, "--tls", "--backends", "1", "--instances", "1")
	if !strings.HasPrefix(url, "wss://") {
		t.Fatalf("--tls URL %q, want wss://", url)
	}
	drill := func(args ...string) (string, int) {
		cmd := exec.Command(stampede(t), append([]string{"drill", "--url", url, "--clients", "10", "--duration", "2s",
			"--restart-cmd", "true", "--at", "1s", "--quiet", "--out", filepath.Join(t.TempDir(), "r")}, args...)...)
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatal(err)
		}
		return string(out), cmd.ProcessState.ExitCode()
	}
	connect := regexp.MustCompile(`(?m)^connect: (\d+) attempts, (\d+) successes(.*)$`)
	out, code := drill("--ca", filepath.Join(dir, "tls", "ca.pem"))
	if m := connect.FindStringSubmatch(out); code != 0 || m == nil || m[2] != "10" {
		t.Errorf("--ca: exit %d, want 0 and 10 successes:\n%s", code, out)
	}
	out, code = drill()
	if m := connect.FindStringSubmatch(out); code != 1 || m == nil || m[2] != "0" || !strings.Contains(m[3], "tls "+m[1]) {
		t.Errorf("no CA: exit %d, want 1 and every attempt failed as tls:\n%s", code, out)
	}
	out, code = drill("--insecure")
	if m := connect.FindStringSubmatch(out); code != 0 || m == nil || m[2] != "10" || !strings.Contains(out, "warning: insecure:") {
		t.Errorf("--insecure: exit %d, want 0, 10 successes and a warning:\n%s", code, out)
	}
}

// TestLBDrill: `stampede drill --restart-cmd 'rolling-deploy.sh DIR'`
// through HAProxy records the deploy as an event whose steps are the
// backends' drain-to-ready spans (from the script's step lines, drawn in
// report.html's timeline) and each backend's restart as a recovery event
// of its own, reads
// HAProxy's counters, passes its gates and writes a JUnit file all passed.
func TestLBDrill(t *testing.T) {
	dir := t.TempDir()
	url := lbUp(t, dir, "--backends", "2", "--instances", "1")
	res := filepath.Join(t.TempDir(), "results")
	junit := filepath.Join(t.TempDir(), "junit.xml")
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(stampede(t), "drill", "--url", url, "--clients", "20", "--duration", "40s",
		"--policy", "exp:initial=200ms,max=2s,jitter=0.5", "--restart-cmd", filepath.Join(wd, "rolling-deploy.sh")+" "+dir, "--at", "2s",
		"--haproxy-socket", filepath.Join(dir, "haproxy-*.sock"), "--slo", "recovered_share==100%",
		"--junit", junit, "--out", res, "--quiet")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("drill: %v\n%s", err, out)
	}
	var sum struct {
		Events []struct {
			Kind        string         `json:"kind"`
			Spec        string         `json:"spec"`
			StartS      float64        `json:"start_s"`
			ReadyS      *float64       `json:"ready_s"`
			Disconnects map[string]int `json:"disconnects"`
			Steps       []struct {
				Proc   int     `json:"proc"`
				StartS float64 `json:"start_s"`
				EndS   float64 `json:"end_s"`
				ReadyS float64 `json:"ready_s"`
				Conns  int64   `json:"conns"`
			} `json:"steps"`
		} `json:"events"`
		Recovery []struct {
			Event           int `json:"event"`
			ConnectedBefore int `json:"connected_before"`
			Disconnected    int `json:"disconnected"`
			Recovered       int `json:"recovered"`
		} `json:"recovery"`
		HAProxy *haproxy.Totals `json:"haproxy"`
	}
	b, err := os.ReadFile(filepath.Join(res, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	var steps int
	var backends []string
	for i, e := range sum.Events {
		if e.Kind == "backend" {
			// Drained first, with the other backend in rotation: ready at
			// its restart, every client it cut back by the end.
			backends = append(backends, e.Spec)
			if e.ReadyS == nil || *e.ReadyS != e.StartS || e.StartS < 2 {
				t.Errorf("backend event %s: start %v ready %v, want ready at its restart after 2 s", e.Spec, e.StartS, e.ReadyS)
			}
			for _, r := range sum.Recovery {
				if r.Event == i && (r.Disconnected == 0 || r.Recovered != r.ConnectedBefore) {
					t.Errorf("backend event %s recovery %+v: want its cut clients, all back", e.Spec, r)
				}
				// SIGTERM (the default): the target says goodbye with 1001.
				if r.Event == i && e.Disconnects["closed_1001"] != r.Disconnected {
					t.Errorf("backend event %s: disconnects %v, want all %d closed_1001", e.Spec, e.Disconnects, r.Disconnected)
				}
			}
		}
		if e.Kind != "deploy" {
			continue
		}
		for i, s := range e.Steps {
			steps++
			if s.Proc != i+1 || s.StartS < 2 || s.EndS < s.StartS || s.ReadyS < s.EndS || s.Conns < 0 {
				t.Errorf("step %d: %+v, want backend s%d drained, up and ready in that order after 2 s", i, s, i+1)
			}
		}
	}
	if steps != 2 {
		t.Errorf("deploy steps %d, want 2 (one per backend)\n%s", steps, b)
	}
	if strings.Join(backends, ",") != "s1,s2" {
		t.Errorf("backend events %q, want s1,s2 (one recovery event per backend restarted)", backends)
	}
	if sum.HAProxy == nil || sum.HAProxy.Samples < 2 {
		t.Errorf("summary.json haproxy: %+v", sum.HAProxy)
	}
	html, err := os.ReadFile(filepath.Join(res, "report.html"))
	if err != nil || !strings.Contains(string(html), "backend 1: drain to ready") || !strings.Contains(string(html), "backend 2: drain to ready") || !strings.Contains(string(html), "backend s2 restart") {
		t.Errorf("report.html does not show each backend's drain-to-ready span: %v", err)
	}
	j, err := os.ReadFile(junit)
	if err != nil || !strings.Contains(string(j), "<testcase") || strings.Contains(string(j), "<failure") {
		t.Errorf("junit: %v\n%s", err, j)
	}
}
