package realservers

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/internal/testenv"
)

var (
	npmOnce sync.Once
	npmErr  error
)

// nodeDir returns the node/ folder with its packages installed (npm ci,
// once per test process), or skips the test when node or npm is missing.
func nodeDir(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.SkipUnlessRequired(t, "%s is not installed (apt-get install nodejs npm)", tool)
		}
	}
	dir, err := filepath.Abs("node")
	if err != nil {
		t.Fatal(err)
	}
	npmOnce.Do(func() {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json")); err == nil {
			return
		}
		cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			npmErr = fmt.Errorf("npm ci: %v\n%s", err, out)
		}
	})
	if npmErr != nil {
		testenv.SkipUnlessRequired(t, "the node packages did not install: %v", npmErr)
	}
	return dir
}

// nodeServer is one real server run by node (or a program of its own,
// exe) on a loopback port; its counts at GET /stats on statsPort, or on
// port when that is 0.
type nodeServer struct {
	t         *testing.T
	script    string
	exe       string
	lead      []string // exe's arguments before the port
	args      []string
	port      int
	statsPort int
	cmd       *exec.Cmd
}

// startNode runs node script with the port and args, and waits for its
// "listening PORT" line.
func startNode(t *testing.T, script string, args ...string) *nodeServer {
	t.Helper()
	s := &nodeServer{t: t, script: script, args: args, port: freePort(t)}
	s.start()
	t.Cleanup(s.kill)
	return s
}

func (s *nodeServer) start() {
	s.t.Helper()
	var cmd *exec.Cmd
	if s.exe != "" {
		argv := append(append(append([]string{}, s.lead...), fmt.Sprint(s.port)), s.args...)
		cmd = exec.Command(s.exe, argv...)
	} else {
		dir := nodeDir(s.t)
		cmd = exec.Command("node", append([]string{filepath.Join(dir, s.script), fmt.Sprint(s.port)}, s.args...)...)
		cmd.Dir = dir
	}
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		s.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	s.cmd = cmd
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if line := sc.Text(); strings.HasPrefix(line, "listening ") {
				ready <- line
			}
		}
		close(ready)
	}()
	select {
	case line, ok := <-ready:
		if !ok {
			s.t.Fatalf("%s exited before listening", s.script)
		}
		_ = line
	case <-time.After(20 * time.Second):
		s.t.Fatalf("%s did not listen within 20s", s.script)
	}
}

// kill ends the server with SIGKILL (no close frames: an abrupt restart).
func (s *nodeServer) kill() {
	if s.cmd == nil {
		return
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	_ = s.cmd.Wait()
	s.cmd = nil
}

// restart kills the server and starts it again on the same port.
func (s *nodeServer) restart() {
	s.t.Helper()
	s.kill()
	s.start()
}

// url is the server's address with path.
func (s *nodeServer) url(scheme, path string) string {
	return fmt.Sprintf("%s://127.0.0.1:%d%s", scheme, s.port, path)
}

// stats reads the server's own counts from GET /stats.
func (s *nodeServer) stats() (map[string]int, error) {
	u := s.url("http", "/stats")
	if s.statsPort != 0 {
		u = fmt.Sprintf("http://127.0.0.1:%d/stats", s.statsPort)
	}
	resp, err := http.Get(u)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var m map[string]int
	return m, json.NewDecoder(resp.Body).Decode(&m)
}

// waitStats polls the server's counts until ok accepts them, or fails t
// after d.
func (s *nodeServer) waitStats(ctx context.Context, d time.Duration, what string, ok func(map[string]int) bool) map[string]int {
	s.t.Helper()
	deadline := time.Now().Add(d)
	var last map[string]int
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if m, err := s.stats(); err == nil {
			last = m
			if ok(m) {
				return m
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.t.Fatalf("%s: the server's counts %v never showed %s within %s", s.script, last, what, d)
	return nil
}

// freePort returns a loopback port nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
