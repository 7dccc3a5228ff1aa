package report

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/internal/testenv"
	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/results/folder"
	"github.com/stampede-dev/stampede/results/summary"
	"github.com/stampede-dev/stampede/spec"
)

// geometry is what lab/check-report/geometry.js measured on a page laid
// out in Chromium at 1,400 px.
type geometry struct {
	Viewport int               `json:"viewport"`
	Cut      []json.RawMessage `json:"cut"`
	Midword  []string          `json:"midword"`
	Overlaps [][]string        `json:"overlaps"`
	Outside  [][]string        `json:"outside"`
	Labels   int               `json:"labels"`
}

// inBrowser lays page out in headless Chromium at 1,400 px with
// lab/check-report.sh and returns the DOM after the page's scripts ran,
// and what geometry.js measured in it. The script's own verdict (a cut
// table, a name wrapped inside a word, overlapping labels) is left to the
// caller, which asserts each figure itself.
func inBrowser(t *testing.T, page string) (string, geometry) {
	t.Helper()
	dom := filepath.Join(t.TempDir(), "dom.html")
	cmd := exec.Command("bash", "../lab/check-report.sh", page)
	cmd.Env = append(os.Environ(), "CHECK_REPORT_DOM="+dom)
	out, err := cmd.CombinedOutput()
	b, rerr := os.ReadFile(dom)
	if rerr != nil {
		t.Fatalf("check-report.sh %s: %v, %v\n%s", page, err, rerr, out)
	}
	m := regexp.MustCompile(`<pre id="geometry">(.*?)</pre>`).FindSubmatch(b)
	// What a person reads: the data and code of the scripts left out.
	b = regexp.MustCompile(`(?s)<script>.*?</script>`).ReplaceAll(b, nil)
	if m == nil {
		t.Fatalf("%s: not measured:\n%s", page, out)
	}
	var g geometry
	if err := json.Unmarshal(m[1], &g); err != nil {
		t.Fatalf("%s: geometry %s: %v", page, m[1], err)
	}
	return string(b), g
}

// edit rewrites the summary.json of dir through f.
func edit(t *testing.T, dir string, f func(s *summary.Summary)) {
	t.Helper()
	s, err := folder.ReadSummary(filepath.Join(dir, folder.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	f(s)
	if err := folder.WriteSummary(dir, s); err != nil {
		t.Fatal(err)
	}
}

func writePage(t *testing.T, path string, dirs ...string) {
	t.Helper()
	runs, err := LoadDirs(dirs)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, runs); err != nil {
		t.Fatal(err)
	}
}

// TestPagesInBrowser: the pages a person reads, laid out in headless
// Chromium at 1,400 px as they would see them and checked by geometry
// and DOM, not by a screenshot diff: a bench's side-by-side table fits the
// window, folder names and policies wrap only at their joints, event
// labels close in time never overlap, the title is said once, an empty
// distribution shows no 0.00, a simulated run warns about no file it
// never writes, a simulated run beside the real one gets the simulator's
// error table, a run taken on a busy machine says so, and every event
// says what its R figures count from.
func TestPagesInBrowser(t *testing.T) {
	if _, err := exec.LookPath("chromium"); err != nil {
		testenv.SkipUnlessRequired(t, "chromium not installed: the pages are not laid out")
	}
	root := t.TempDir()

	// A bench of the four default policies, in the folders bench makes.
	bench := filepath.Join(root, "bench")
	policies := []string{"fixed:initial=1s", "exp:initial=1s,multiplier=2,max=60s",
		"exp:initial=1s,multiplier=2,max=60s,jitter=0.5,spread=100ms-500ms", "full:initial=1s,multiplier=2,max=60s"}
	var index []map[string]string
	for i, p := range policies {
		name := strings.NewReplacer(":", "_", ",", "_", "=", "-").Replace(p)
		name = string(rune('1'+i)) + "-" + name
		dir := filepath.Join(bench, name)
		synthetic(t, dir, "fixed", i+1)
		edit(t, dir, func(s *summary.Summary) {
			pol, err := backoff.Parse(p)
			if err != nil {
				t.Fatal(err)
			}
			s.Spec = &spec.Run{Kind: spec.KindBench, Client: &spec.Client{Policy: pol}}
			s.Kernel.ListenOverflows = 1234567 // a wide figure in the last columns
			s.Machine = &results.MachineLoad{Cores: 2, OwnCPUShare: 0.5, OtherCPUShare: 0.02}
			if i == 2 {
				s.Machine.OtherCPUShare = 0.4
			}
			s.Machine.Judge()
		})
		index = append(index, map[string]string{"policy": p, "dir": name})
	}
	b, _ := json.Marshal(map[string]any{"runs": index})
	os.WriteFile(filepath.Join(bench, BenchFile), b, 0o644)
	page := filepath.Join(root, "bench.html")
	writePage(t, page, bench)
	dom, g := inBrowser(t, page)
	if g.Viewport < 1300 || len(g.Cut) > 0 {
		t.Errorf("bench: a table is cut at %d px: %s", g.Viewport, g.Cut)
	}
	if len(g.Midword) > 0 {
		t.Errorf("bench: wrapped inside a word: %q", g.Midword)
	}
	busy := regexp.MustCompile(`(?s)<div class="note busy-list">.*?</div>`).FindString(dom)
	if n := strings.Count(dom, `class="note busy-run"`); n != 1 || strings.Count(busy, "<li>") != 1 ||
		!strings.Contains(busy, "<li><b>3-exp_initial-1s_multiplier-2_max-60s_jitter-0.5_spread-100ms-500ms</b>: other processes took 40 % of the CPU") {
		t.Errorf("bench: %d busy notes in the runs' sections, under the table %q; want the busy run's alone", n, busy)
	}

	// One run whose events come close together: a deploy command, the
	// outage it caused, and a restart right after, as a drill sees them,
	// and the deploy's steps.
	one := filepath.Join(root, "drill")
	synthetic(t, one, "fixed", 1)
	edit(t, one, func(s *summary.Summary) {
		e := s.Events[0]
		s.Events = []summary.EventSummary{
			{Kind: "deploy", Mode: "command", StartS: 0.95, EndS: 1.6, ReadyS: e.ReadyS},
			e,
			{Kind: "outage", Detected: true, StartS: 1.05, ReadyS: e.ReadyS},
		}
		// A deploy through a load balancer of 16 backends, drained one
		// after another: more labels at once than a plot has rows.
		for i := range 16 {
			at := 1.0 + 0.02*float64(i)
			s.Events[0].Steps = append(s.Events[0].Steps, summary.StepSummary{Proc: i, StartS: at, EndS: at + 0.01, ReadyS: at + 0.02})
		}
		s.Recovery[0].Note = "every client was back by the last restarted process ready at 1.50s: R50-R100 count from then, not from the event's start"
	})
	page = filepath.Join(one, File)
	writePage(t, page, one)
	dom, g = inBrowser(t, page)
	// At least the three events' labels on each of the six plots with a
	// time axis; as many steps' as fit.
	t.Logf("one run: %d event labels drawn", g.Labels)
	if g.Labels < 15 || len(g.Overlaps) > 0 || len(g.Outside) > 0 {
		t.Errorf("one run: %d labels, overlapping %q, outside their plot %q", g.Labels, g.Overlaps, g.Outside)
	}
	run, _ := Load(one)
	if n := strings.Count(dom, run.Label); n != 2 { // <title> and <h1>
		t.Errorf("one run: the label %q is said %d times, want the title's 2", run.Label, n)
	}
	if n := strings.Count(dom, run.Summary.RunID); n != 1 {
		t.Errorf("one run: the run id is said %d times", n)
	}
	for _, l := range []string{"message_rtt", "message_rtt_scheduled", "resume"} {
		if !strings.Contains(dom, "<tr><td>"+l+"</td><td>0</td><td>-</td><td>-</td><td>-</td><td>-</td><td>-</td></tr>") {
			t.Errorf("one run: the empty distribution %s shows figures", l)
		}
	}
	if !strings.Contains(dom, "<th>R counted from</th>") || !strings.Contains(dom, "<td>target ready</td>") ||
		!strings.Contains(dom, "R50-R100 count from then, not from the event's start") {
		t.Error("one run: the events do not say what their R figures count from")
	}

	// A simulated run, alone and beside the real one.
	sim := filepath.Join(root, "sim")
	synthetic(t, sim, "fixed", 2)
	os.Remove(filepath.Join(sim, results.ResourcesFile))
	os.Remove(filepath.Join(sim, results.KernelFile))
	edit(t, sim, func(s *summary.Summary) { s.Simulated = true; s.Kernel.ListenOverflows = 30 })
	writePage(t, filepath.Join(sim, File), sim)
	if dom, _ = inBrowser(t, filepath.Join(sim, File)); strings.Contains(dom, "Not in the folder") {
		t.Error("a simulated run warns about files the simulator never writes")
	}
	page = filepath.Join(root, "compare.html")
	writePage(t, page, one, sim)
	dom, g = inBrowser(t, page)
	m := regexp.MustCompile(`(?s)<section id="sim-error">.*?</section>`).FindString(dom)
	// Counts are integers, as the terminal prints them.
	for _, row := range []string{`<td>R50 s</td><td>0.32</td><td>0.63</td><td>\+100 %</td>`, `<td>herd peak/100ms</td><td>\d+</td><td>\d+</td>`,
		`<td>ListenOverflows</td><td>12</td><td>30</td><td>\+150 %</td>`} {
		if !regexp.MustCompile(row).MatchString(m) {
			t.Errorf("compare: the simulator's error table lacks %s:\n%s", row, m)
		}
	}
	if len(g.Cut) > 0 || len(g.Midword) > 0 || len(g.Overlaps) > 0 {
		t.Errorf("compare: cut %s, wrapped inside a word %q, overlapping labels %q", g.Cut, g.Midword, g.Overlaps)
	}
}
