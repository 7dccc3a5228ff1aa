package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stampede-dev/stampede/connerr"
	"github.com/stampede-dev/stampede/results/folder"
	"github.com/stampede-dev/stampede/results/summary"
	"github.com/stampede-dev/stampede/storm"
)

// TestBenchMitigations: a bench of mitigations runs one policy against
// each mitigation with real sockets (every restart graceful), prints one
// row per mitigation and the simulator's prediction of each, and writes
// mitigations.json; the hint row's clients were closed 1013 and the shed
// row's target had the knob.
func TestBenchMitigations(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	// Five runs of 5 s, one a mitigation, each bounded as one run is.
	code, stdout, stderr := runStampedeWithin(t, 5*contractTimeout, "bench", "--mitigations", "--policy", "fixed:initial=300ms", "--clients", "60",
		"--accept-rate", "100", "--backlog", "16", "--chaos", "at 1500ms restart abrupt down=300ms", "--duration", "5s",
		"-q", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"mitigation", "none", "admit-ramp=1s", "shed=1s", "spread=1s", "hint=1s",
		"predicted by the simulator", "order by wasted attempts"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	b, err := os.ReadFile(filepath.Join(out, "mitigations.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Measured, Predicted []struct {
			Mitigation string `json:"mitigation"`
		}
	}
	if err := json.Unmarshal(b, &m); err != nil || len(m.Measured) != 5 || len(m.Predicted) != 5 {
		t.Fatalf("mitigations.json: %v\n%s", err, b)
	}
	b, err = os.ReadFile(filepath.Join(out, storm.BenchFile))
	if err != nil {
		t.Fatal(err)
	}
	var idx struct {
		Runs []storm.BenchRun `json:"runs"`
	}
	if err := json.Unmarshal(b, &idx); err != nil || len(idx.Runs) != 5 {
		t.Fatalf("bench.json: %v\n%s", err, b)
	}
	sums := map[string]*summary.Summary{}
	for _, r := range idx.Runs {
		sum, err := folder.ReadSummary(filepath.Join(out, r.Dir, folder.SummaryFile))
		if err != nil {
			t.Fatal(err)
		}
		sums[r.Mitigation] = sum
		if len(sum.Events) != 1 || sum.Events[0].Mode != "graceful" {
			t.Errorf("%s: events %+v; want one graceful restart", r.Mitigation, sum.Events)
		}
	}
	closed := func(m string, c connerr.Class) uint64 {
		if s := sums[m]; s != nil && len(s.Events) == 1 {
			return s.Events[0].Disconnects[c.String()]
		}
		return 0
	}
	if got := closed("hint=1s", connerr.Closed1013); got == 0 {
		t.Errorf("hint=1s: no client was closed 1013: %+v", sums["hint=1s"].Events)
	}
	if got, want := closed("none", connerr.Closed1001), uint64(60); got != want {
		t.Errorf("none: %d clients closed 1001, want all %d", got, want)
	}
}
