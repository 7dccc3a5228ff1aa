package main

import (
	"bufio"
	"bytes"
	"errors"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/drill"
	"github.com/stampede-dev/stampede/internal/testenv"
)

// stampedeProc is stampede run as a real process: this test binary with
// testMainEnv set (TestMain then runs main), so its command line and
// children can be looked at and it can be sent Ctrl-C.
type stampedeProc struct {
	cmd    *exec.Cmd
	stdout bytes.Buffer
	mu     sync.Mutex
	stderr strings.Builder
	lines  chan string // stderr lines as they come
	done   chan error
}

func startStampede(t *testing.T, args ...string) *stampedeProc {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := &stampedeProc{cmd: exec.Command(exe, args...), lines: make(chan string, 1000), done: make(chan error, 1)}
	p.cmd.Env = append(os.Environ(), testMainEnv+"=1")
	p.cmd.Stdout = &p.stdout
	errPipe, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(errPipe)
		for sc.Scan() {
			p.mu.Lock()
			p.stderr.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			select {
			case p.lines <- sc.Text():
			default:
			}
		}
		close(p.lines)
		p.done <- p.cmd.Wait()
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.lines // drained or closed
	})
	return p
}

// waitLine waits for a stderr line containing s.
func (p *stampedeProc) waitLine(t *testing.T, s string, d time.Duration) {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				t.Fatalf("stampede ended before printing %q:\n%s", s, p.errText())
			}
			if strings.Contains(l, s) {
				return
			}
		case <-deadline:
			t.Fatalf("no %q within %s:\n%s", s, d, p.errText())
		}
	}
}

func (p *stampedeProc) errText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// wait waits for the process's exit status.
func (p *stampedeProc) wait(t *testing.T, d time.Duration) int {
	t.Helper()
	for range p.lines {
	}
	select {
	case err := <-p.done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(d):
		t.Fatalf("stampede still running after %s", d)
	}
	return -1
}

// descendants returns the PIDs of pid's children, theirs, and so on.
func descendants(pid int) []int {
	parent := map[int]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) > 1 {
			parent[n], _ = strconv.Atoi(f[1])
		}
	}
	var out []int
	for frontier := []int{pid}; len(frontier) > 0; {
		var next []int
		for child, p := range parent {
			for _, f := range frontier {
				if p == f {
					next = append(next, child)
				}
			}
		}
		out = append(out, next...)
		frontier = next
	}
	return out
}

// TestDrillSecretsStaySecret: a drill with an Authorization header, a
// secret header of its own and user info in the URL, its fleet in two
// agent processes and a deploy command running: the secrets are sent to
// the server, and appear in no process's command line on this machine
// while it runs, in no environment of its children, and in no file of the
// results folder nor the JUnit file.
func TestDrillSecretsStaySecret(t *testing.T) {
	const token, apiKey, password = "s3cr3t-XYZ", "k3y-QRS", "pa55-UVW"
	srv := newDrillServer(t)
	dir := t.TempDir()
	out, junit := filepath.Join(dir, "out"), filepath.Join(dir, "drill.xml")
	url := strings.Replace(srv.url, "ws://", "ws://drill:"+password+"@", 1)
	p := startStampede(t, "drill", "--url", url, "--clients", "20", "--loadgen-procs", "2", "--duration", "4s",
		"--header", "Authorization: Bearer "+token, "-H", "X-Api-Key: "+apiKey, "--secret-header", "x-api-key",
		"--restart-cmd", "echo token-free output; sleep 1.5", "--at", "500ms", "--out", out, "--junit", junit, "--progress", "1s")
	p.waitLine(t, "drill: target", 30*time.Second)
	secrets := []string{token, apiKey, password}
	seen := map[int]string{} // the children seen, by PID: their program and first argument
	check := func(path string, b []byte) {
		for _, s := range secrets {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("%s holds %q: %q", path, s, b)
			}
		}
	}
	// Until the drill has exited (its /proc entry gone or a zombie).
	running := func() bool {
		st, err := os.ReadFile("/proc/" + strconv.Itoa(p.cmd.Process.Pid) + "/stat")
		return err == nil && !bytes.Contains(st, []byte(") Z "))
	}
	for deadline := time.Now().Add(60 * time.Second); running() && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			if _, err := strconv.Atoi(e.Name()); err != nil {
				continue
			}
			b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
			if err == nil {
				check("/proc/"+e.Name()+"/cmdline", b)
			}
		}
		for _, pid := range descendants(p.cmd.Process.Pid) {
			dir := "/proc/" + strconv.Itoa(pid)
			if b, err := os.ReadFile(dir + "/environ"); err == nil {
				check(dir+"/environ", b)
			}
			if b, err := os.ReadFile(dir + "/cmdline"); err == nil && len(b) > 0 { // empty: a zombie
				f := bytes.SplitN(append(b, 0, 0), []byte{0}, 3)
				seen[pid] = string(f[0]) + " " + string(f[1])
			}
		}
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(p.cmd.Process.Pid) + "/cmdline"); err == nil && len(b) > 0 && !bytes.Contains(b, []byte("Authorization:")) {
			t.Errorf("the drill's own command line lost its header flag: %q", b)
		}
	}
	if code := p.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, p.stdout.String(), p.errText())
	}
	// It ran as meant: agents and the deploy command were there to look
	// at, and the server was sent the token.
	agents, shells := 0, 0
	for _, k := range seen {
		switch {
		case strings.HasSuffix(k, " agent"):
			agents++
		case strings.HasPrefix(k, "/bin/sh"):
			shells++
		}
	}
	if agents < 2 || shells < 1 {
		t.Errorf("children seen %v; want 2 agents and the deploy's shell", seen)
	}
	srv.mu.Lock()
	auth := srv.auth
	srv.mu.Unlock()
	if auth != "Bearer "+token {
		t.Errorf("the server saw Authorization %q, want the token", auth)
	}
	check("stdout", p.stdout.Bytes())
	check("stderr", []byte(p.errText()))
	files := 0
	for _, root := range []string{out, junit} {
		filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				b, err := os.ReadFile(path)
				if err != nil {
					t.Error(err)
				}
				check(path, b)
				files++
			}
			return nil
		})
	}
	if files < 5 {
		t.Errorf("%d files checked; the results folder is missing", files)
	}
	if b, _ := os.ReadFile(filepath.Join(out, "summary.json")); !bytes.Contains(b, []byte(`"Authorization: <redacted>"`)) {
		t.Errorf("summary.json shows no <redacted> header value")
	}
	privateFolder(t, out)
}

// TestDrillCtrlC: the first Ctrl-C stops the fleet and lets the deploy
// command go on, saying so; a second stops the command at once and says
// the service may be down; the results are still written: exit 130,
// summary.json interrupted, deploy.log saying why the command was
// stopped, JUnit failing the run and the deploy.
func TestDrillCtrlC(t *testing.T) {
	srv := newDrillServer(t)
	dir := t.TempDir()
	out, junit := filepath.Join(dir, "out"), filepath.Join(dir, "drill.xml")
	pidFile := filepath.Join(dir, "sleep.pid")
	p := startStampede(t, "drill", "--url", srv.url, "--clients", "10", "--duration", "60s",
		"--restart-cmd", "sleep 60 & echo $! > "+pidFile+"; wait", "--at", "100ms", "--out", out, "--junit", junit, "--progress", "0")
	p.waitLine(t, "drill: deploy started", 30*time.Second)
	time.Sleep(300 * time.Millisecond)
	p.cmd.Process.Signal(os.Interrupt)
	p.waitLine(t, "waiting up to 2m0s for it to finish", 10*time.Second)
	sent := time.Now()
	p.cmd.Process.Signal(os.Interrupt)
	if code := p.wait(t, 20*time.Second); code != exitInterrupted {
		t.Fatalf("exit %d, want %d\n%s", code, exitInterrupted, p.errText())
	}
	t.Logf("stopped %s after the second Ctrl-C", time.Since(sent).Round(time.Millisecond))
	if !strings.Contains(p.errText(), "the service may be down; check it now") {
		t.Errorf("stderr does not say the service may be down:\n%s", p.errText())
	}
	s := readDrillSummary(t, out)
	if !s.Interrupted || s.Pass {
		t.Errorf("summary interrupted %v pass %v; want interrupted, not passed", s.Interrupted, s.Pass)
	}
	if b, err := os.ReadFile(filepath.Join(out, drill.DeployLogFile)); err != nil || !strings.Contains(string(b), "killed: interrupted a second time: the service may be down") {
		t.Errorf("deploy.log: %q, %v", b, err)
	}
	if b, err := os.ReadFile(pidFile); err == nil {
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		if pid > 0 && syscall.Kill(pid, 0) == nil {
			if st, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); !bytes.Contains(st, []byte(") Z ")) {
				t.Errorf("the deploy command's child %d still runs", pid)
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
	f := failedCases(readJUnit(t, junit).Suites[0])
	if strings.Join(f, ",") != "deploy,run" {
		t.Errorf("failed testcases %v; want deploy and run", f)
	}
}

// TestDrillCtrlCDuringDeploy: a deploy script stops the server, sleeps,
// and starts it again; Ctrl-C while it sleeps stops the load but not the
// script, so the server listens again afterwards, and the drill exits 130.
func TestDrillCtrlCDuringDeploy(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	addr := freeAddr(t)
	pidFile := filepath.Join(dir, "server.pid")
	startServer := testMainEnv + "=1 " + exe + " target --addr " + addr + " >/dev/null 2>&1 & echo $! > " + pidFile
	if err := exec.Command("/bin/sh", "-c", startServer).Run(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if b, err := os.ReadFile(pidFile); err == nil {
			if pid, _ := strconv.Atoi(strings.TrimSpace(string(b))); pid > 0 {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	waitListening(t, addr, 20*time.Second)
	script := "kill $(cat " + pidFile + "); echo stopped; sleep 2; " + startServer + "; echo started"
	p := startStampede(t, "drill", "--url", "ws://"+addr+"/", "--clients", "10", "--duration", "60s",
		"--restart-cmd", script, "--at", "1s", "--out", filepath.Join(dir, "out"), "--progress", "0")
	p.waitLine(t, "deploy: stopped", 30*time.Second)
	p.cmd.Process.Signal(os.Interrupt)
	if code := p.wait(t, 30*time.Second); code != exitInterrupted {
		t.Fatalf("exit %d, want %d\n%s", code, exitInterrupted, p.errText())
	}
	if !strings.Contains(p.errText(), "deploy: started") {
		t.Errorf("the deploy script did not finish:\n%s", p.errText())
	}
	waitListening(t, addr, 10*time.Second)
}

// freeAddr returns a loopback address with a port nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// waitListening waits until a TCP connect to addr succeeds.
func waitListening(t *testing.T, addr string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing listens on %s after %s: %v", addr, d, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestDrillDeploysOnlyIntoAFleet: a drill against a port nothing listens
// on stops at its deploy's time (and the reports' lag), exit 1 with one
// line, and the deploy command never runs.
func TestDrillDeploysOnlyIntoAFleet(t *testing.T) {
	dir := t.TempDir()
	touched := filepath.Join(dir, "touched")
	script := filepath.Join(dir, "touch-a-file.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\ntouch "+touched+"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	code, _, stderr := runDrill(t, "--url", "ws://"+freeAddr(t)+"/", "--restart-cmd", script, "--at", "1s", "--duration", "60s",
		"--clients", "20", "--out", filepath.Join(dir, "out"), "--progress", "0")
	last := stderr[strings.LastIndex(strings.TrimSuffix(stderr, "\n"), "\n")+1:]
	if code != 1 || !strings.HasPrefix(last, "stampede: the fleet is not connected: 0 of 20 clients (0%)") {
		t.Fatalf("exit %d, last line %q; want 1 and the fleet not connected\n%s", code, last, stderr)
	}
	if time.Since(start) > 45*time.Second { // not a speed bound: it must stop long before --duration
		t.Errorf("the drill ran %s; want it stopped at its deploy's time, not at its end", time.Since(start))
	}
	if _, err := os.Stat(touched); err == nil {
		t.Errorf("the deploy command ran")
	}
	if strings.Contains(stderr, "drill: deploy started") {
		t.Errorf("stderr says the deploy started:\n%s", stderr)
	}
}

// TestDrillRefusesRemoteWithoutSocket: a URL on a host that is not
// loopback is refused with one line, exit 2, and the process opens no
// socket at all on the way (strace sees every socket and connect call of
// it and its threads).
func TestDrillRefusesRemoteWithoutSocket(t *testing.T) {
	strace, err := exec.LookPath("strace")
	if err != nil {
		testenv.SkipUnlessRequired(t, "strace is not installed (apt-get install -y strace): cannot watch the process's system calls")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	trace := filepath.Join(t.TempDir(), "trace")
	cmd := exec.Command(strace, "-f", "-e", "trace=socket,connect", "-o", trace, exe, "drill", "--url", "ws://10.1.2.3/",
		"--clients", "10", "--restart-cmd", "true", "--at", "1s", "--out", filepath.Join(t.TempDir(), "out"))
	cmd.Env = append(os.Environ(), testMainEnv+"=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("exit %v; want 2\n%s", err, stderr.String())
	}
	want := "stampede: --url: ws://10.1.2.3/: host 10.1.2.3 is not loopback; a drill sends load to another host only when --allow-remote 10.1.2.3 names it\n"
	if stderr.String() != want || stdout.Len() != 0 {
		t.Errorf("stdout %q stderr %q; want one line %q", stdout.String(), stderr.String(), want)
	}
	b, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) == 0 && !bytes.Contains(b, []byte("exited")) {
		// strace wrote nothing about the process: it may not have run.
		t.Logf("trace is empty (no socket or connect call)")
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, "socket(") || strings.Contains(l, "connect(") {
			t.Errorf("system call on the way to the refusal: %s", l)
		}
	}
}
