package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/advise"
	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/results/folder"
)

func runAdvise(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := runApp(append([]string{"stampede", "advise"}, args...), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// TestAdviseUsageErrors: a bad search is one line naming the flag, exit 2,
// before anything is simulated.
func TestAdviseUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		args       []string
	}{
		{"no event", "stampede: --chaos: advise needs an event", nil},
		{"objective", "stampede: --objective: must be r99, wasted or peak", []string{"--chaos", "at 3s restart abrupt down=1s", "--objective", "fast"}},
		{"seeds", "stampede: --seeds: must be within", []string{"--chaos", "at 3s restart abrupt down=1s", "--seeds", "99"}},
		{"max delay", "stampede: --max-delay: must not be negative", []string{"--chaos", "at 3s restart abrupt down=1s", "--max-delay", "-1s"}},
		{"from", "stampede: --from: ", []string{"--from", filepath.Join(t.TempDir(), "none")}},
	} {
		code, out, errOut := runAdvise(t, append(tc.args, "--out", filepath.Join(t.TempDir(), "a"))...)
		if code != 2 || !strings.HasPrefix(errOut, tc.want) || strings.Count(errOut, "\n") != 1 || out != "" {
			t.Errorf("%s: exit %d, stderr %q, stdout %q; want exit 2 and one line %q...", tc.name, code, errOut, out, tc.want)
		}
	}
}

// TestAdviseVerify: a small search, then the recommended and the current
// policy for real (300 clients against the bundled target, 12 s each):
// the table, predicted against measured, and a folder whose summary.json
// holds the advice and whose report.html plots it.
func TestAdviseVerify(t *testing.T) {
	t.Setenv(testMainEnv, "1") // the storm's agents are this binary
	dir := filepath.Join(t.TempDir(), "advise")
	code, out, errOut := runAdvise(t, "--clients", "300", "--accept-rate", "100", "--backlog", "16",
		"--chaos", "at 3s restart abrupt down=1s", "--duration", "12s", "--policy", "fixed:initial=1s",
		"--candidates", "4", "--seeds", "1", "--max-delay", "4s", "--verify", "--quiet", "--out", dir)
	// A small fleet on a busy machine may miss the prediction: then the
	// verdict says NOT, and the exit status is 1.
	if want := map[bool]int{false: 0, true: 1}[strings.Contains(out, ": NOT ")]; code != want {
		t.Fatalf("exit %d, want %d, stderr %q, stdout:\n%s", code, want, errOut, out)
	}
	for _, want := range []string{"physical bound: 300 clients / 100 per s = 3.00s", "fixed:initial=1s", "recommended: ",
		"recommended  ", "r99_s", "verify: recommended R99 predicted", "results: " + dir} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	sum, err := folder.ReadSummary(filepath.Join(dir, folder.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	a := sum.Advise
	if a == nil || len(a.Candidates) == 0 || len(a.Verify) != 2 || len(a.Curves) != 2 || !sum.Simulated {
		t.Fatalf("summary.json advise: %+v", a)
	}
	rec, err := backoff.Parse(a.Candidates[a.Recommended].Policy)
	if err != nil {
		t.Fatal(err)
	}
	for a := 1; a <= 20; a++ {
		if d := rec.Delay(1, 7, a); d.Seconds() > 4 {
			t.Errorf("recommended %s waits %s before retry %d, over --max-delay 4s", rec, d, a)
		}
	}
	for _, v := range a.Verify {
		if _, err := os.Stat(filepath.Join(dir, v.Dir, folder.SummaryFile)); err != nil {
			t.Errorf("%s run: %v", v.Role, err)
		}
	}
	page, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Candidates", "<polyline", "<circle", "Verified with real sockets", "server capacity per 100 ms"} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	if i := bytes.Index(page, []byte("%!")); i >= 0 {
		t.Errorf("report.html has a formatting error: %s", page[i:min(len(page), i+60)])
	}
}

// TestAdviseURLRails: --url is checked before anything is simulated: a
// host other than loopback needs --allow-remote, and --url needs
// --verify and a deploy command.
func TestAdviseURLRails(t *testing.T) {
	ev := []string{"--chaos", "at 3s restart abrupt down=1s", "--out", filepath.Join(t.TempDir(), "a")}
	for _, tc := range []struct {
		name, want string
		args       []string
	}{
		{"remote", "stampede: --url: ws://example.com/ws: host example.com is not loopback", []string{"--url", "ws://example.com/ws", "--verify", "--restart-cmd", "true"}},
		{"no verify", "stampede: --url: only with --verify", []string{"--url", "ws://127.0.0.1:1/ws", "--restart-cmd", "true"}},
		{"no deploy", "stampede: --restart-cmd: required with --url", []string{"--url", "ws://127.0.0.1:1/ws", "--verify"}},
		{"rail without url", "stampede: --allow-remote: only with --url", []string{"--allow-remote", "example.com"}},
	} {
		code, out, errOut := runAdvise(t, append(tc.args, ev...)...)
		if code != 2 || !strings.HasPrefix(errOut, tc.want) || strings.Count(errOut, "\n") != 1 || out != "" {
			t.Errorf("%s: exit %d, stderr %q, stdout %q; want exit 2 and one line %q...", tc.name, code, errOut, out, tc.want)
		}
	}
}

// TestAdviseVerifyURL: --verify against a server of the user's (a small
// WebSocket server that restarts with 1012 and answers 503 for a second
// when the deploy command touches a file), as a drill: both runs have the
// deploy event and their figures beside the prediction.
func TestAdviseVerifyURL(t *testing.T) {
	t.Setenv(testMainEnv, "1")
	srv := newDrillServer(t)
	dir := t.TempDir()
	trigger := filepath.Join(dir, "deployed")
	var restarts atomic.Int32
	var watch func()
	watch = func() {
		onFile(t, trigger, func() {
			srv.restart(1012, time.Second, "1")
			os.Remove(trigger)
			if restarts.Add(1) < 2 {
				watch()
			}
		})
	}
	watch()
	out := filepath.Join(dir, "advise")
	code, stdout, stderr := runAdvise(t, "--clients", "50", "--accept-rate", "500", "--chaos", "at 2s restart graceful down=1s",
		"--duration", "8s", "--candidates", "3", "--seeds", "1", "--verify", "--quiet", "--out", out,
		"--url", srv.url, "--restart-cmd", "touch "+trigger)
	if want := map[bool]int{false: 0, true: 1}[strings.Contains(stdout, ": NOT ")]; code != want {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	sum, err := folder.ReadSummary(filepath.Join(out, folder.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Advise.Verify) != 2 || restarts.Load() != 2 {
		t.Fatalf("verify %+v, %d restarts; want two runs, each with its deploy", sum.Advise.Verify, restarts.Load())
	}
	for _, v := range sum.Advise.Verify {
		run, err := folder.ReadSummary(filepath.Join(out, v.Dir, folder.SummaryFile))
		if err != nil {
			t.Fatal(err)
		}
		if len(run.Events) == 0 || run.Events[0].Kind != "deploy" || run.Connect.Disconnects["closed_1012"] == 0 {
			t.Errorf("%s run: events %+v, disconnects %v; want the deploy and the 1012 closes", v.Role, run.Events, run.Connect.Disconnects)
		}
		if f, _ := advise.Figure(v, "r99_s"); f.Measured == nil {
			t.Errorf("%s run: no measured R99", v.Role)
		}
	}
}
