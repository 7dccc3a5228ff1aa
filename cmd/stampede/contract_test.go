package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"
)

// contractTimeout bounds each run of TestSummaryContract; the runs last a
// few seconds each and go side by side.
const contractTimeout = 60 * time.Second

// runStampede runs stampede as a real process (this test binary running
// main, as its agents do) and returns its exit status and output; it is
// killed at contractTimeout.
func runStampede(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runStampedeWithin(t, contractTimeout, args...)
}

// runStampedeWithin is runStampede killed at limit: a command of several
// runs (a bench) is given each run's contractTimeout.
func runStampedeWithin(t *testing.T, limit time.Duration, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Env = append(os.Environ(), testMainEnv+"=1")
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("stampede %s: still running after %s\n%s", strings.Join(args, " "), limit, e.String())
	case errors.As(err, &ee):
		return ee.ExitCode(), o.String(), e.String()
	case err != nil:
		t.Fatal(err)
	}
	return 0, o.String(), e.String()
}

// contractRun is one kind of run of TestSummaryContract: its command line
// (the results folder appended) and what it needs around it.
type contractRun struct {
	kind string
	args func(t *testing.T) []string
}

// A fleet of 50 clients whose policy brings it back well within the run.
const contractPolicy = "exp:initial=100ms,max=1s,jitter=0.5"

var contractRuns = []contractRun{
	{"run", func(*testing.T) []string {
		return []string{"run", "--clients", "50", "--policy", contractPolicy, "--chaos", "at 1s restart abrupt down=300ms",
			"--duration", "3s", "--slo", "connect_p99<60s", "-q"}
	}},
	{"run", func(t *testing.T) []string { // wss://: connect's TLS counts and tls_handshakes
		return []string{"run", "--clients", "50", "--policy", contractPolicy, "--chaos", "at 1s restart abrupt down=300ms",
			"--tls-ticket-keys", filepath.Join(t.TempDir(), "ticket.keys"), "--duration", "3s", "--slo", "connect_p99<60s", "-q"}
	}},
	{"bench", func(*testing.T) []string {
		return []string{"bench", "--clients", "50", "--policies", contractPolicy, "--chaos", "at 1s restart abrupt down=300ms",
			"--duration", "3s", "--slo", "connect_p99<60s", "-q"}
	}},
	{"loadgen", func(t *testing.T) []string {
		// A server the test restarts once the fleet is up: the loadgen
		// detects the outage.
		srv := newDrillServer(t)
		go func() {
			for deadline := time.Now().Add(contractTimeout); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
				if _, _, n, _ := srv.stats(); n >= 50 {
					time.Sleep(500 * time.Millisecond)
					srv.restart(1012, 300*time.Millisecond, "1")
					return
				}
			}
		}()
		return []string{"loadgen", "--url", srv.url, "--clients", "50", "--policy", contractPolicy, "--duration", "4s",
			"--slo", "connect_p99<60s", "-q"}
	}},
	{"drill", func(t *testing.T) []string {
		srv := newDrillServer(t)
		trigger := filepath.Join(t.TempDir(), "deployed")
		onFile(t, trigger, func() { srv.restart(1012, 300*time.Millisecond, "1") })
		return []string{"drill", "--url", srv.url, "--clients", "50", "--policy", contractPolicy, "--duration", "4s",
			"--restart-cmd", "touch " + trigger, "--at", "1s", "--slo", "connect_p99<60s", "-q"}
	}},
	{"http", func(t *testing.T) []string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
		t.Cleanup(srv.Close)
		return []string{"http", "--clients", "5", "--rate", "50", "--duration", "1s", "--slo", "http_p99<60s", srv.URL + "/"}
	}},
	{"simulate", func(*testing.T) []string {
		return []string{"simulate", "--clients", "1000", "--policy", contractPolicy, "--chaos", "at 1s restart abrupt down=300ms",
			"--duration", "5s", "--slo", "connect_p99<60s", "-q"}
	}},
	{"advise", func(*testing.T) []string {
		return []string{"advise", "--clients", "1000", "--accept-rate", "2000", "--chaos", "at 1s restart abrupt down=300ms",
			"--duration", "5s", "--seeds", "1", "--candidates", "4", "-q"}
	}},
}

// TestSummaryContract: docs/summary-json.md and the summary.json of a real
// run of each kind agree both ways: every field the page gives for the
// kind is written (optional ones aside), every field written is on the
// page for that kind, null only where the page allows it, every class in
// every class map; and `config` holds the command's flags by name.
func TestSummaryContract(t *testing.T) {
	doc, err := parseSummaryDoc(summaryDocPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range contractRuns {
		t.Run(r.kind, func(t *testing.T) {
			t.Parallel()
			out := filepath.Join(t.TempDir(), "out")
			args := append(r.args(t), "--out", out) // after http's URL too
			code, stdout, stderr := runStampede(t, args...)
			if code != 0 {
				t.Fatalf("stampede %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, stdout, stderr)
			}
			files := []string{filepath.Join(out, "summary.json")}
			if r.kind == "bench" {
				files, _ = filepath.Glob(filepath.Join(out, "*", "summary.json"))
				if len(files) != 1 {
					t.Fatalf("bench of one policy: summaries %v", files)
				}
			}
			for _, f := range files {
				b, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range doc.checkSummary(r.kind, b) {
					t.Errorf("%s: %s", r.kind, e)
				}
				checkConfigKeys(t, r.kind, b)
				checkKernelNote(t, r.kind, b)
			}
		})
	}
}

// checkConfigKeys: summary.json `config` has the command's flags by their
// names (less --out and --config), `sizing` in the four kinds that size a
// fleet, `args` for http.
func checkConfigKeys(t *testing.T, kind string, b []byte) {
	t.Helper()
	var s struct {
		Config map[string]json.RawMessage `json:"config"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, f := range flagsOf(kind) {
		if v, ok := f.(cli.VisibleFlag); ok && !v.IsVisible() {
			continue // -H, the twin of --header, is recorded as header
		}
		if n := f.Names()[0]; n != "out" && n != "config" && n != "help" {
			want = append(want, n)
		}
	}
	switch kind {
	case "bench":
		want = append(want, "sizing", "policy") // each run's own policy
	case "run", "loadgen", "drill":
		want = append(want, "sizing")
	case "http":
		want = append(want, "args")
	}
	var got []string
	for k := range s.Config {
		got = append(got, k)
	}
	slices.Sort(want)
	slices.Sort(got)
	for _, k := range got {
		if !slices.Contains(want, k) {
			t.Errorf("%s: config.%s: no flag of stampede %s", kind, k, kind)
		}
	}
	for _, k := range want {
		if !slices.Contains(got, k) {
			t.Errorf("%s: config lacks %q (a flag of stampede %s)", kind, k, kind)
		}
	}
}

// checkKernelNote: kernel_note says why kernel_read is false, and is
// absent when it is true.
func checkKernelNote(t *testing.T, kind string, b []byte) {
	t.Helper()
	var s struct {
		KernelRead bool    `json:"kernel_read"`
		KernelNote *string `json:"kernel_note"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	if s.KernelRead != (s.KernelNote == nil) || (s.KernelNote != nil && *s.KernelNote == "") {
		t.Errorf("%s: kernel_read %v with kernel_note %v; want a note exactly when it is false", kind, s.KernelRead, s.KernelNote)
	}
}
