package report

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/connerr"
	"github.com/stampede-dev/stampede/hoststat"
	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/results/folder"
	"github.com/stampede-dev/stampede/results/slo"
	"github.com/stampede-dev/stampede/results/summary"
	"github.com/stampede-dev/stampede/results/track"
	"github.com/stampede-dev/stampede/spec"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// synthetic writes a small, fixed results folder: 20 clients, a restart at
// 1 s, ready at 1.5 s, back by 2.2 s; a 3 s run.
func synthetic(t *testing.T, dir, policy string, slowdown int) {
	t.Helper()
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	r := results.NewReport(start, 20)
	r.Track = &track.Record{} // the message protocol ran: lost is measured
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	for c := range uint32(20) {
		back := ms(1500 + int(c)*35*slowdown)
		r.Transitions = append(r.Transitions,
			results.Transition{Client: c, At: ms(50 + int(c))},
			results.Transition{Client: c, At: ms(1000)},
			results.Transition{Client: c, At: back, Up: true})
		r.Transitions[len(r.Transitions)-3].Up = true
		r.Timeline.At(ms(50)).Attempts++
		r.Timeline.At(ms(50)).Successes++
		r.Timeline.At(ms(1000)).Disconnects[connerr.Closed1006]++
		r.Timeline.At(ms(1200)).Attempts++
		r.Timeline.At(ms(1200)).Failures[connerr.Refused]++
		r.Timeline.At(back).Attempts++
		r.Timeline.At(back).Successes++
		results.RecordLatency(r.Connect, ms(1+int(c)%5))
		results.RecordLatency(r.TTR, back-ms(1000))
	}
	r.Timeline.At(ms(1500)).Failures[connerr.HandshakeTimeout] += 3
	r.Timeline.At(ms(1500)).Attempts += 3
	events := []results.Event{{Kind: "restart", Mode: "abrupt", Spec: "at 1s restart abrupt down=500ms", Start: ms(1000), End: ms(1400), Ready: ms(1500)}}
	cfg := map[string]any{"fleet": map[string]any{"policy": map[string]any{"kind": policy, "initial": int64(ms(100))}}}
	var pol backoff.Policy
	if b, err := json.Marshal(cfg["fleet"].(map[string]any)["policy"]); err != nil || json.Unmarshal(b, &pol) != nil {
		t.Fatalf("policy %s: %v", policy, err)
	}
	run := &spec.Run{Kind: spec.KindRun, Client: &spec.Client{Policy: pol}, Duration: 3 * time.Second}
	sum := summary.Summarize(summary.Input{RunID: summary.NewRunID(start, 7), Seed: 7, Config: cfg, Spec: run, Report: r, Events: events,
		End: 3 * time.Second, Kernel: results.KernelDelta{ListenOverflows: 12}})
	slos, _ := slo.ParseSLOs([]string{"lost==0", "r99<500ms"})
	sum.SetSLO(slo.EvalSLOs(slos, sum))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := folder.WriteSummary(dir, sum); err != nil {
		t.Fatal(err)
	}
	var tl bytes.Buffer
	folder.WriteTimelineCSV(&tl, folder.TimelineRows(r.Timeline, sum.Events, sum.DurationS))
	os.WriteFile(filepath.Join(dir, folder.TimelineFile), tl.Bytes(), 0o644)
	if err := folder.WriteHistogramLogs(dir, r, 3*time.Second); err != nil {
		t.Fatal(err)
	}
	var samples []hoststat.ResourceSample
	for i := range 4 {
		at := start.Add(time.Duration(i) * time.Second)
		samples = append(samples,
			hoststat.ResourceSample{At: at, Role: "loadgen", Processes: 1, RSSBytes: uint64(20+i) << 20, FDs: 30, Threads: 6, CPUSeconds: 0.1 * float64(i)},
			hoststat.ResourceSample{At: at, Role: "target", Processes: 1, RSSBytes: uint64(10+i) << 20, FDs: 25, Threads: 5, CPUSeconds: 0.05 * float64(i)})
	}
	var rc bytes.Buffer
	hoststat.WriteResourcesCSV(&rc, start, samples)
	os.WriteFile(filepath.Join(dir, results.ResourcesFile), rc.Bytes(), 0o644)
	os.WriteFile(filepath.Join(dir, results.KernelFile), []byte("t_s,ListenOverflows,ListenDrops\n0,0,0\n1,0,0\n2,12,12\n3,12,12\n"), 0o644)
}

// stubAssets replaces uPlot with placeholders, so the golden file holds
// stampede's own page and not 50 KB of library.
func stubAssets(t *testing.T) {
	js, css := uplotJS, uplotCSS
	uplotJS, uplotCSS = "/* uPlot */", "/* uPlot css */"
	t.Cleanup(func() { uplotJS, uplotCSS = js, css })
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		os.WriteFile(filepath.Join(t.TempDir(), name), got, 0o644)
		t.Errorf("%s differs from the golden file (go test ./report -update to accept); got:\n%s", path, got)
	}
}

// The page of one synthetic run, against testdata/one.golden.html. The
// folder path differs per test run, so it is written as DIR.
func TestGoldenOne(t *testing.T) {
	stubAssets(t)
	dir := filepath.Join(t.TempDir(), "run")
	synthetic(t, dir, "fixed", 1)
	run, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Missing) != 0 || run.Label != "run (fixed:initial=100ms)" {
		t.Errorf("missing %v, label %q", run.Missing, run.Label)
	}
	var b bytes.Buffer
	if err := Write(&b, []*Run{run}); err != nil {
		t.Fatal(err)
	}
	golden(t, "one.golden.html", bytes.ReplaceAll(b.Bytes(), []byte(dir), []byte("DIR")))
}

// A comparison of two runs, one of them through a bench folder.
func TestGoldenCompare(t *testing.T) {
	stubAssets(t)
	root := t.TempDir()
	synthetic(t, filepath.Join(root, "a"), "fixed", 1)
	synthetic(t, filepath.Join(root, "bench", "1-full"), "full", 3)
	os.WriteFile(filepath.Join(root, "bench", BenchFile), []byte(`{"runs": [{"policy": "full", "dir": "1-full"}, {"policy": "x", "dir": "2-failed", "error": "boom"}]}`), 0o644)
	runs, err := LoadDirs([]string{filepath.Join(root, "a"), filepath.Join(root, "bench")})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 {
		t.Fatalf("%d runs", len(runs))
	}
	var b bytes.Buffer
	if err := Write(&b, runs); err != nil {
		t.Fatal(err)
	}
	golden(t, "compare.golden.html", bytes.ReplaceAll(b.Bytes(), []byte(root), []byte("ROOT")))
}

// TestLabels: runs are named by their folder, with as much of its path as
// tells them apart, and their policy: two runs of one policy were both
// labelled by the policy alone and could not be told apart.
func TestLabels(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"x/run", "y/run", "z/other"} {
		synthetic(t, filepath.Join(root, d), "fixed", 1)
	}
	runs, err := LoadDirs([]string{filepath.Join(root, "x/run"), filepath.Join(root, "y/run"), filepath.Join(root, "z/other")})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range runs {
		got = append(got, r.Label)
	}
	want := []string{"x/run (fixed:initial=100ms)", "y/run (fixed:initial=100ms)", "other (fixed:initial=100ms)"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("labels %q, want %q", got, want)
	}
	var b bytes.Buffer
	if err := Write(&b, runs); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"x/run", "y/run"} {
		if !strings.Contains(b.String(), `<td class="name"><span class="nw">`+name+`</span><br>`) {
			t.Errorf("the comparison table has no row for %s", name)
		}
	}
}

// The real page inlines uPlot whole, fetches nothing, and has a chart
// element for every plot.
func TestPageSelfContained(t *testing.T) {
	dir := t.TempDir()
	synthetic(t, dir, "exp", 1)
	if err := Render(dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, File))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	if !strings.Contains(page, uplotJS) || !strings.Contains(page, uplotCSS) {
		t.Error("uPlot is not inlined")
	}
	if m := regexp.MustCompile(`(?i)<(script|link|img)[^>]+(src|href)=`).FindString(page); m != "" {
		t.Errorf("the page loads something: %s", m)
	}
	for _, chart := range []string{"connected", "failures", "latency", "rss", "cpu", "fds", "kernel"} {
		if !strings.Contains(page, `data-chart="`+chart+`"`) {
			t.Errorf("no %s chart", chart)
		}
	}
	for _, a := range []string{uplotJS, uplotCSS, pageJS} {
		if strings.Contains(strings.ToLower(a), "</script") || strings.Contains(strings.ToLower(a), "</style") {
			t.Error("an inlined asset would end its element early")
		}
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Load(dir); err == nil {
		t.Error("Load of a folder without summary.json succeeded")
	}
	synthetic(t, dir, "fixed", 1)
	os.Remove(filepath.Join(dir, results.KernelFile))
	os.Remove(filepath.Join(dir, results.ResumeLogFile))
	run, err := Load(dir)
	if err != nil || strings.Join(run.Missing, ",") != "resume.hlog,kernel.csv" {
		t.Errorf("Load: %v, missing %v", err, run.Missing)
	}
	os.WriteFile(filepath.Join(dir, folder.TimelineFile), []byte("t_s\nnot a number\n"), 0o644)
	if _, err := Load(dir); err == nil {
		t.Error("Load with a corrupt timeline.csv succeeded")
	}
	if err := Write(&bytes.Buffer{}, nil); err == nil {
		t.Error("Write of no run succeeded")
	}
	empty := t.TempDir()
	os.WriteFile(filepath.Join(empty, BenchFile), []byte(`{"runs": []}`), 0o644)
	if _, err := LoadDirs([]string{empty}); err == nil {
		t.Error("an empty bench loaded")
	}
}

// markSimulated makes the results folder dir a simulated run's.
func markSimulated(t *testing.T, dir string) {
	t.Helper()
	path := filepath.Join(dir, folder.SummaryFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.Replace(b, []byte("{"), []byte(`{"simulated": true,`), 1)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestMixedBanner: a simulated run compared with a real one is said to be
// so in the page's title and a banner above the figures; runs of one kind
// get neither.
func TestMixedBanner(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"real", "sim", "real2"} {
		synthetic(t, filepath.Join(root, d), "fixed", 1)
	}
	markSimulated(t, filepath.Join(root, "sim"))
	for _, tc := range []struct {
		dirs  []string
		title string
		mixed bool
	}{
		{[]string{"sim", "real"}, "stampede: 2 runs compared, 1 of them simulated", true},
		{[]string{"real", "real2"}, "stampede: 2 runs compared", false},
		{[]string{"sim"}, "stampede: sim (fixed:initial=100ms) [simulated]", false},
	} {
		var paths []string
		for _, d := range tc.dirs {
			paths = append(paths, filepath.Join(root, d))
		}
		runs, err := LoadDirs(paths)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := Write(&b, runs); err != nil {
			t.Fatal(err)
		}
		page := b.String()
		if !strings.Contains(page, "<h1>"+tc.title+"</h1>") {
			t.Errorf("%v: the title is not %q", tc.dirs, tc.title)
		}
		banner := MixedBanner(runs)
		if (banner != "") != tc.mixed || strings.Contains(page, "simulated and real runs compared") != tc.mixed {
			t.Errorf("%v: banner %q (on the page: %v); want one: %v", tc.dirs, banner, strings.Contains(page, banner), tc.mixed)
		}
		if tc.mixed && !strings.HasPrefix(banner, "simulated and real runs compared: sim simulated (a model's figures, no sockets), real measured") {
			t.Errorf("banner %q", banner)
		}
	}
}

// TestPageGaveUp: clients whose policy ran out of attempts after an event
// (the attempts_exhausted class) are counted on the page apart from those
// still retrying; a run where none gave up says nothing of it.
func TestPageGaveUp(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	synthetic(t, dir, "fixed", 1)
	page := func() string {
		t.Helper()
		runs, err := LoadDirs([]string{dir})
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := Write(&b, runs); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	if p := page(); strings.Contains(p, "recovery-gaveup") {
		t.Error("a run where no client gave up has a gave-up line")
	}
	path := filepath.Join(dir, folder.SummaryFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var s map[string]any
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	rec := s["recovery"].([]any)[0].(map[string]any)
	rec["attempts_exhausted"], rec["still_retrying"] = 7, 2
	if b, err = json.Marshal(s); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	want := `<p class="sub recovery-gaveup">Event 0 (restart abrupt): 7 of 20 gave up (attempts exhausted), 2 still retrying at the end.</p>`
	if p := page(); !strings.Contains(p, want) {
		i := strings.Index(p, "recovery-")
		t.Errorf("the page lacks %s; near its recovery lines: %.300s", want, p[max(0, i-20):])
	}
}
