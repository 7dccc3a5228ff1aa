// Package metricstest starts a real Prometheus Pushgateway for the tests of
// --pushgateway: the Debian package prometheus-pushgateway's binary, on a
// free loopback port, stopped by its PID when the test ends.
package metricstest

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Binary is the Pushgateway's command, as the Debian package installs it.
const Binary = "prometheus-pushgateway"

// Pushgateway starts a Pushgateway listening on 127.0.0.1 only and returns
// its base URL (http://127.0.0.1:PORT). Without the binary the test skips,
// unless STAMPEDE_REQUIRE_SERVICES=1 (CI), when it fails.
func Pushgateway(t testing.TB) string {
	t.Helper()
	exe, err := exec.LookPath(Binary)
	if err != nil {
		msg := fmt.Sprintf("%s is not installed (apt-get install prometheus-pushgateway)", Binary)
		if os.Getenv("STAMPEDE_REQUIRE_SERVICES") == "1" {
			t.Fatal(msg + "; STAMPEDE_REQUIRE_SERVICES=1 requires it")
		}
		t.Skip(msg + "; skipping (set STAMPEDE_REQUIRE_SERVICES=1 to fail instead)")
	}
	var lastErr error
	for range 3 { // another process may take the free port first
		u, err := start(t, exe)
		if err == nil {
			return u
		}
		lastErr = err
	}
	t.Fatalf("starting %s: %v", Binary, lastErr)
	return ""
}

// start runs one Pushgateway on a port free a moment ago and waits for it
// to be ready.
func start(t testing.TB, exe string) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := ln.Addr().String()
	ln.Close()
	var log lockedBuffer
	cmd := exec.Command(exe, "--web.listen-address="+addr, "--log.level=warn",
		"--persistence.file="+filepath.Join(t.TempDir(), "pushgateway.data"))
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		return "", err
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	stop := func() {
		cmd.Process.Kill() // by its PID: only the process started here
		<-exited
	}
	base := "http://" + addr
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case <-exited:
			return "", fmt.Errorf("exited: %s", strings.TrimSpace(log.String()))
		default:
		}
		if resp, err := http.Get(base + "/-/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				t.Cleanup(stop)
				return base, nil
			}
		}
		if time.Now().After(deadline) {
			stop()
			return "", fmt.Errorf("not ready on %s after 10 s: %s", addr, strings.TrimSpace(log.String()))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Samples GETs the Pushgateway's /metrics and returns its sample lines
// whose metric name starts with prefix, as "name{labels}" -> value.
func Samples(t testing.TB, base, prefix string) map[string]string {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		out[line[:i]] = line[i+1:]
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// Value returns the value of the sample named name whose labels include
// every one given (`run_id="x"`), "" if there is none. The Pushgateway
// adds labels of its own (job, instance, the grouping key).
func Value(samples map[string]string, name string, labels ...string) string {
next:
	for k, v := range samples {
		n, rest, _ := strings.Cut(k, "{")
		if n != name {
			continue
		}
		for _, l := range labels {
			if !strings.Contains(","+strings.TrimSuffix(rest, "}")+",", ","+l+",") {
				continue next
			}
		}
		return v
	}
	return ""
}

// lockedBuffer is the Pushgateway's output, written by exec's copying
// goroutine and read by the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
