// Package metricstest starts a real Prometheus Pushgateway for the tests of
// --pushgateway: the Debian package prometheus-pushgateway's binary, on a
// free loopback port, stopped by its PID when the test ends.
package metricstest

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
	dir := t.TempDir()
	log, err := os.Create(filepath.Join(dir, "pushgateway.log"))
	if err != nil {
		return "", err
	}
	defer log.Close() // the child has its own descriptor
	logText := func() string { b, _ := os.ReadFile(log.Name()); return strings.TrimSpace(string(b)) }
	cmd := exec.Command(exe, longOpt("web.listen-address", addr), longOpt("log.level", "warn"),
		longOpt("persistence.file", filepath.Join(dir, "pushgateway.data")))
	cmd.Stdout, cmd.Stderr = log, log
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
			return "", fmt.Errorf("exited: %s", logText())
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
			return "", fmt.Errorf("not ready on %s after 10 s: %s", addr, logText())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Samples GETs url (a /metrics endpoint: a Pushgateway's or a run's) and
// returns its sample lines whose metric name starts with prefix, as
// "name{labels}" -> value.
func Samples(t testing.TB, url, prefix string) map[string]string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %s: %s", url, resp.Status, b)
	}
	out := map[string]string{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") || !strings.HasPrefix(line, prefix) {
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

// longOpt writes the Pushgateway's option name=value.
func longOpt(name, value string) string { return "--" + name + "=" + value }
