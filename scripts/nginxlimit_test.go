// Package scripts holds the tests of the shell scripts beside it.
package scripts

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// nginxUp runs `nginx-limit.sh up DIR args...` and returns the URL it
// printed last; it skips the test when nginx cannot be installed, unless
// STAMPEDE_REQUIRE_SERVICES=1. `down` runs at the end of the test.
func nginxUp(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := script(append([]string{"up", dir}, args...)...)
	t.Cleanup(func() {
		if out, err := script("down", dir); err != nil {
			t.Errorf("down: %v\n%s", err, out)
		}
	})
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 3 {
		if os.Getenv("STAMPEDE_REQUIRE_SERVICES") == "1" {
			t.Fatalf("nginx is required (STAMPEDE_REQUIRE_SERVICES=1): %s", out)
		}
		t.Skipf("nginx cannot be installed here: %s", out)
	}
	if err != nil {
		t.Fatalf("up: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	url := lines[len(lines)-1]
	if !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.HasSuffix(url, "/") {
		t.Fatalf("last line %q is not http://127.0.0.1:PORT/\n%s", url, out)
	}
	return url
}

// script runs nginx-limit.sh with args and returns its stdout and stderr.
func script(args ...string) ([]byte, error) {
	cmd := exec.Command("bash", append([]string{"nginx-limit.sh"}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.Bytes(), err
}

// get sends one GET and returns its status, Retry-After and body.
func get(t *testing.T, c *http.Client, url string) (int, string, string) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Retry-After"), string(body)
}

// TestNginxLimit: below the rate every request reaches the backend; above
// it nginx answers 429 with the configured Retry-After; a second up on the
// same directory fails while the first runs; down stops it.
//
// The rate is 2/s with a burst of 2, so the checks hold however slow the
// machine: requests spaced 600 ms apart never exceed it, and 20 requests
// back to back exceed it unless they take over 8 s.
func TestNginxLimit(t *testing.T) {
	dir := t.TempDir()
	url := nginxUp(t, dir, "--rate", "2", "--burst", "2", "--retry-after", "3")
	c := &http.Client{Timeout: 10 * time.Second}
	t.Cleanup(c.CloseIdleConnections)

	for i := range 3 {
		if i > 0 {
			time.Sleep(600 * time.Millisecond)
		}
		status, ra, body := get(t, c, url)
		if status != 200 || ra != "" || body != "ok\n" {
			t.Fatalf("below the rate, request %d: %d Retry-After %q body %q; want 200 from the backend", i, status, ra, body)
		}
	}

	var ok, limited int
	for i := range 20 {
		status, ra, _ := get(t, c, url)
		switch {
		case status == 200 && ra == "":
			ok++
		case status == 429 && ra == "3":
			limited++
		default:
			t.Fatalf("above the rate, request %d: %d Retry-After %q", i, status, ra)
		}
	}
	if limited == 0 || ok == 0 {
		t.Fatalf("above the rate: %d answered 200, %d 429; want both", ok, limited)
	}

	if out, err := script("up", dir, "--rate", "2"); err == nil || !strings.Contains(string(out), "already up") {
		t.Fatalf("second up: %v, %s; want a failure saying it is already up", err, out)
	}
	if status, _, _ := get(t, c, url); status != 200 && status != 429 {
		t.Fatalf("the first nginx stopped answering after the second up: %d", status)
	}

	c.CloseIdleConnections()
	if out, err := script("down", dir); err != nil {
		t.Fatalf("down: %v\n%s", err, out)
	}
	if conn, err := net.DialTimeout("tcp", strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/"), time.Second); err == nil {
		conn.Close()
		t.Fatal("nginx still accepts after down")
	}
}

// TestNginxLimitBadFlags: usage errors exit 2 with one line, before
// anything is installed or started.
func TestNginxLimitBadFlags(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"up", dir},
		{"up", dir, "--rate", "0"},
		{"up", dir, "--rate", "1.5"},
		{"up", dir, "--rate", "5", "--retry-after", "2s"},
		{"sideways", dir},
	} {
		out, err := script(args...)
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 || bytes.Count(out, []byte("\n")) != 1 {
			t.Errorf("%q: %v, %q; want exit 2 and one line", args, err, out)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("a usage error wrote into DIR: %v", entries)
	}
}
