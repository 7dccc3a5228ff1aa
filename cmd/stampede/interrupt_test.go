package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// signalled runs stampede as a real process, sends it sig once it has
// printed a line on stderr or after wait, and returns its exit status,
// its stderr and how long it took to end after the signal.
func signalled(t *testing.T, sig syscall.Signal, wait time.Duration, args ...string) (code int, stderr string, after time.Duration) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), testMainEnv+"=1")
	var e bytes.Buffer
	cmd.Stderr = &e
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	kill := time.AfterFunc(30*time.Second, func() { cmd.Process.Kill() })
	defer kill.Stop()
	time.Sleep(wait)
	sent := time.Now()
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	after = time.Since(sent)
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), e.String(), after
	}
	return 0, e.String(), after
}

// interruptedFolder fails t unless dir holds a summary.json marked
// interrupted and its timeline is not empty.
func interruptedFolder(t *testing.T, dir, timeline string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatalf("no summary: %v", err)
	}
	var s struct{ Interrupted bool }
	if err := json.Unmarshal(b, &s); err != nil || !s.Interrupted {
		t.Errorf("summary.json: interrupted %v (%v); want true", s.Interrupted, err)
	}
	if st, err := os.Stat(filepath.Join(dir, timeline)); err != nil || st.Size() == 0 {
		t.Errorf("%s: %v, %v; want rows", timeline, st, err)
	}
}

// TestHTTPFleetInterrupted: SIGTERM or SIGINT to an HTTP fleet ends it
// at once, exit 130, with its folder written and marked interrupted.
func TestHTTPFleetInterrupted(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(srv.Close)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			code, stderr, after := signalled(t, sig, 1500*time.Millisecond,
				"http", "--clients", "5", "--rate", "20", "--duration", "20s", "--out", out, srv.URL+"/")
			if code != exitInterrupted || !strings.Contains(stderr, "interrupted") {
				t.Errorf("exit %d, stderr %q; want %d and a line saying it was interrupted", code, stderr, exitInterrupted)
			}
			t.Logf("ended %s after the signal", after)
			interruptedFolder(t, out, "http_timeline.csv")
		})
	}
}

// TestSimulateAdviseInterrupted: SIGTERM to a long simulation or advice
// search ends it, exit 130, with a folder marked interrupted whose
// timeline holds the virtual time reached.
func TestSimulateAdviseInterrupted(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"simulate", []string{"simulate", "--clients", "200000", "--duration", "3000s", "--chaos", "every 5s restart abrupt down=1s", "-q"}},
		{"advise", []string{"advise", "--clients", "200000", "--duration", "3000s", "--chaos", "at 10s restart abrupt down=1s",
			"--accept-rate", "2000", "-q"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			code, stderr, after := signalled(t, syscall.SIGTERM, 1500*time.Millisecond, append(tc.args, "--out", out)...)
			if code != exitInterrupted || !strings.Contains(stderr, "interrupted") {
				t.Errorf("exit %d, stderr %q; want %d and a line saying it was interrupted", code, stderr, exitInterrupted)
			}
			t.Logf("ended %s after the signal", after)
			interruptedFolder(t, out, "timeline.csv")
		})
	}
}
