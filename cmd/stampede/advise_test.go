package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/results"
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
	if code != 0 {
		t.Fatalf("exit %d, stderr %q, stdout:\n%s", code, errOut, out)
	}
	for _, want := range []string{"physical bound: 300 clients / 100 per s = 3.00s", "fixed:initial=1s", "recommended: ",
		"recommended  ", "r99_s", "verify: recommended R99 predicted", "results: " + dir} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	sum, err := results.ReadSummary(filepath.Join(dir, results.SummaryFile))
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
		if _, err := os.Stat(filepath.Join(dir, v.Dir, results.SummaryFile)); err != nil {
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
}
