package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/sim"
)

func runSimulate(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := runApp(append([]string{"stampede", "simulate"}, args...), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// TestSimulate: the command writes a results folder marked simulated, with
// the event's recovery, and `stampede report` sets it beside another run
// (here a second simulation posing as the real one) figure by figure.
func TestSimulate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sim")
	code, out, errOut := runSimulate(t, "--clients", "2000", "--backlog", "64", "--accept-rate", "1000",
		"--chaos", "at 3s restart abrupt down=1s", "--duration", "15s", "--out", dir, "--slo", "recovered_share>=100%")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q, stdout:\n%s", code, errOut, out)
	}
	for _, want := range []string{"restart abrupt", "2000/2000", "(simulated)", "SLO recovered_share>=100%: pass"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, f := range []string{results.SummaryFile, results.TimelineFile, results.ConnectLogFile, results.TTRLogFile, "report.html"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("results folder: %v", err)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, results.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	var sum results.Summary
	if err := json.Unmarshal(b, &sum); err != nil || !sum.Simulated || len(sum.Recovery) != 1 || sum.Recovery[0].R99S == nil {
		t.Fatalf("summary.json: simulated %v, recovery %+v, err %v", sum.Simulated, sum.Recovery, err)
	}
	if sum.SimulatedNote != "" || strings.Contains(out, "note:") {
		t.Errorf("2,000 clients, within the calibrated range: simulated_note %q, output:\n%s", sum.SimulatedNote, out)
	}
	if year := time.Now().UTC().Format("2006"); !strings.HasPrefix(sum.RunID, year) {
		t.Errorf("run_id %q does not name the day it was simulated", sum.RunID)
	}

	// Mark a copy real, as if it came from `stampede run`.
	realDir := filepath.Join(t.TempDir(), "real")
	if err := os.MkdirAll(realDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{results.TimelineFile, results.ConnectLogFile, results.TTRLogFile} {
		b, _ := os.ReadFile(filepath.Join(dir, f))
		os.WriteFile(filepath.Join(realDir, f), b, 0o644)
	}
	os.WriteFile(filepath.Join(realDir, results.SummaryFile), bytes.Replace(b, []byte(`"simulated": true,`), nil, 1), 0o644)
	var stdout, stderr bytes.Buffer
	code = runApp([]string{"stampede", "report", "--out", filepath.Join(t.TempDir(), "c.html"), dir, realDir}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("report: exit %d, %s", code, stderr.String())
	}
	for _, want := range []string{"[simulated]", "figure", "R90 s", "+0 %"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("report output lacks %q:\n%s", want, stdout.String())
		}
	}
}

// TestSimulateExtrapolated: a fleet above the largest calibrated real run
// is said to be extrapolated, in the text and in summary.json.
func TestSimulateExtrapolated(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sim")
	n := sim.MaxCalibratedClients + 1
	code, out, errOut := runSimulate(t, "--clients", strconv.Itoa(n), "--duration", "2s", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d, stderr %q, stdout:\n%s", code, errOut, out)
	}
	want := sim.CalibrationNote(n)
	if want == "" || !strings.Contains(out, "\nnote: "+want+"\n") {
		t.Errorf("output lacks the note %q:\n%s", want, out)
	}
	sum, err := results.ReadSummary(filepath.Join(dir, results.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	if sum.SimulatedNote != want {
		t.Errorf("simulated_note %q, want %q", sum.SimulatedNote, want)
	}
}

// TestSimulateUsage: bad flags are named.
func TestSimulateUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--clients", "0"}, "--clients"},
		{[]string{"--chaos", "at 1s proxy reset for 1s"}, "not modelled"},
		{[]string{"--syn-schedule", "2s,1s"}, "--syn-schedule"},
		{[]string{"--rtt", "-1ms"}, "--rtt"},
		{[]string{"--cores", "-2"}, "--cores"},
	} {
		code, _, errOut := runSimulate(t, append(c.args, "--out", t.TempDir())...)
		if code == 0 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stderr %q, want an error naming %s", c.args, code, errOut, c.want)
		}
	}
}

// TestSimulateCores: --cores gives the model the machine's cores, which
// a 20,000-client fleet's herd outruns: its recovery is slower than
// without, and the summary records the flag.
func TestSimulateCores(t *testing.T) {
	r99 := func(args ...string) (float64, string) {
		dir := filepath.Join(t.TempDir(), "sim")
		code, out, errOut := runSimulate(t, append([]string{"--clients", "20000", "--procs", "2",
			"--chaos", "at 5s restart abrupt down=1s", "--duration", "40s", "--out", dir}, args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d, stderr %q, stdout:\n%s", args, code, errOut, out)
		}
		b, err := os.ReadFile(filepath.Join(dir, results.SummaryFile))
		if err != nil {
			t.Fatal(err)
		}
		sum, err := results.ReadSummary(filepath.Join(dir, results.SummaryFile))
		if err != nil || len(sum.Recovery) != 1 || sum.Recovery[0].R99S == nil {
			t.Fatalf("%v: recovery %+v, err %v", args, sum.Recovery, err)
		}
		return *sum.Recovery[0].R99S, string(b)
	}
	free, _ := r99()
	one, js := r99("--cores", "1")
	if !(one > 2*free) {
		t.Errorf("R99 on one core %.2fs, without --cores %.2fs: want the core to slow it", one, free)
	}
	if !strings.Contains(js, `"cores": 1`) {
		t.Errorf("summary.json does not record --cores 1")
	}
}
