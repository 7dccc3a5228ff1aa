package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/chaos"
	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/results/folder"
	"github.com/stampede-dev/stampede/results/summary"
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
	for _, f := range []string{folder.SummaryFile, folder.TimelineFile, results.ConnectLogFile, results.TTRLogFile, "report.html"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("results folder: %v", err)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, folder.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	var sum summary.Summary
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
	for _, f := range []string{folder.TimelineFile, results.ConnectLogFile, results.TTRLogFile} {
		b, _ := os.ReadFile(filepath.Join(dir, f))
		os.WriteFile(filepath.Join(realDir, f), b, 0o644)
	}
	os.WriteFile(filepath.Join(realDir, folder.SummaryFile), bytes.Replace(b, []byte(`"simulated": true,`), nil, 1), 0o644)
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
	sum, err := folder.ReadSummary(filepath.Join(dir, folder.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	if sum.SimulatedNote != want {
		t.Errorf("simulated_note %q, want %q", sum.SimulatedNote, want)
	}
}

// TestSimulateCPUFlags: --cpu-costs and --cpu-per-connect are checked
// before anything runs (no results folder), by simulate and advise, each
// mistake one line naming the flag, and the key where one is at fault;
// from a config file too.
func TestSimulateCPUFlags(t *testing.T) {
	file := writeFile(t, "cpu.yaml", "cpu-per-connect: 65us,60us\n")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--cpu-costs", "attempt=30us"}, "--cpu-costs needs --cores: the costs are of the cores --cores models"},
		{[]string{"--cores", "0", "--cpu-per-connect", "65us,60us"}, "--cpu-per-connect needs --cores: the costs are of the cores --cores models"},
		{[]string{"--config", file}, "--cpu-per-connect needs --cores: the costs are of the cores --cores models"},
		{[]string{"--cores", "2", "--cpu-costs", "attempt=4x"}, `--cpu-costs: attempt: want a duration with a unit such as 44us, got "4x"`},
		{[]string{"--cores", "2", "--cpu-costs", "upgrade=-1us"}, "--cpu-costs: upgrade: must not be negative, got -1us"},
		{[]string{"--cores", "2", "--cpu-costs", "ping=0s"}, "--cpu-costs: ping: must be positive, got 0s (leave ping out for the default 47us)"},
		{[]string{"--cores", "2", "--cpu-costs", "loadgen_share=-1"}, `--cpu-costs: loadgen_share: want a positive number such as 2.4, got "-1"`},
		{[]string{"--cores", "2", "--cpu-costs", "attempts=30us"}, `--cpu-costs: unknown key "attempts" (want one of attempt, upgrade, disconnect, accept, close, segment, ping, slice, loadgen_share, loadgen_growth, target_growth)`},
		{[]string{"--cores", "2", "--cpu-per-connect", "65us"}, `--cpu-per-connect: invalid value "65us": want LOADGEN,TARGET, each end's CPU per first connect, two positive durations such as 65us,60us`},
		{[]string{"--cores", "2", "--cpu-per-connect", "65us,-1us"}, `--cpu-per-connect: invalid value "65us,-1us": want LOADGEN,TARGET, each end's CPU per first connect, two positive durations such as 65us,60us`},
		{[]string{"--cores", "2", "--cpu-per-connect", "65us,60us", "--cpu-costs", "slice=1ms,upgrade=50us"}, "--cpu-per-connect and --cpu-costs upgrade: give one; --cpu-per-connect sets attempt, upgrade and accept"},
		{[]string{"--cores", "2", "--config", file, "--cpu-costs", "accept=50us"}, "--cpu-per-connect and --cpu-costs accept: give one; --cpu-per-connect sets attempt, upgrade and accept"},
	} {
		for _, cmd := range []string{"simulate", "advise"} {
			if cmd == "advise" && slices.Contains(c.args, "--config") {
				continue // advise takes no config file
			}
			out := filepath.Join(t.TempDir(), "out")
			var stdout, stderr bytes.Buffer
			args := append([]string{"stampede", cmd, "--clients", "100", "--chaos", "at 1s restart abrupt down=1s", "--out", out}, c.args...)
			code := runApp(args, &stdout, &stderr)
			if got := strings.TrimSuffix(stderr.String(), "\n"); code != 2 || got != "stampede: "+c.want {
				t.Errorf("%s %v: exit %d, stderr %q; want exit 2 and %q", cmd, c.args, code, got, "stampede: "+c.want)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%s %v: wrote %s", cmd, c.args, out)
			}
		}
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
		b, err := os.ReadFile(filepath.Join(dir, folder.SummaryFile))
		if err != nil {
			t.Fatal(err)
		}
		sum, err := folder.ReadSummary(filepath.Join(dir, folder.SummaryFile))
		if err != nil || len(sum.Recovery) != 1 || sum.Recovery[0].R99S == nil {
			t.Fatalf("%v: recovery %+v, err %v", args, sum.Recovery, err)
		}
		return *sum.Recovery[0].R99S, string(b)
	}
	free, _ := r99()
	one, js := r99("--cores", "0.25")
	if !(one > 2*free) {
		t.Errorf("R99 on a quarter core %.2fs, without --cores %.2fs: want the core to slow it", one, free)
	}
	if !strings.Contains(js, `"cores": 0.25`) {
		t.Errorf("summary.json does not record --cores 0.25")
	}
}

// TestSimulateCPUCosts: --cpu-per-connect sets each end's CPU per first
// connect, the loadgen's split over attempt and upgrade in the default
// ratio: the run is the one --cpu-costs gives with those three keys; a
// cheaper machine recovers sooner than the default costs'; stderr says the
// costs a connect was charged, and summary.json records every cost used,
// so its config given back as a file reproduces the run.
func TestSimulateCPUCosts(t *testing.T) {
	simulate := func(args ...string) (summary.Recovery, map[string]any, string) {
		t.Helper()
		dir := filepath.Join(t.TempDir(), "sim")
		code, out, errOut := runSimulate(t, append([]string{"--clients", "20000", "--procs", "2",
			"--chaos", "at 5s restart abrupt down=1s", "--duration", "40s", "--cores", "0.25", "--out", dir}, args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d, stderr %q, stdout:\n%s", args, code, errOut, out)
		}
		sum, err := folder.ReadSummary(filepath.Join(dir, folder.SummaryFile))
		if err != nil || len(sum.Recovery) != 1 || sum.Recovery[0].R99S == nil {
			t.Fatalf("%v: recovery %+v, err %v", args, sum.Recovery, err)
		}
		var config map[string]any
		if err := json.Unmarshal(sum.Config, &config); err != nil {
			t.Fatal(err)
		}
		return sum.Recovery[0], config, errOut
	}
	def, defConfig, defErr := simulate()
	cheap, config, errOut := simulate("--cpu-per-connect", "10us,10us")
	same, _, _ := simulate("--cpu-costs", "attempt=4.335us,upgrade=5.665us,accept=10us")
	if *cheap.R99S != *same.R99S || *cheap.R50S != *same.R50S {
		t.Errorf("--cpu-per-connect 10us,10us: R50 %.2fs R99 %.2fs; --cpu-costs attempt=4.335us,upgrade=5.665us,accept=10us: %.2fs, %.2fs; want the same run",
			*cheap.R50S, *cheap.R99S, *same.R50S, *same.R99S)
	}
	if !(*cheap.R99S < *def.R99S) {
		t.Errorf("R99 at 10 µs a connect a side %.2fs, at the defaults (35.1 and 23.1 µs) %.2fs: want it sooner", *cheap.R99S, *def.R99S)
	}
	line := func(k sim.CPUCosts) string {
		k = k.AtFleet(20000)
		return fmt.Sprintf("cpu on 0.25 cores, a connect at this fleet costing the loadgen %s (attempt %s + upgrade %s) and the target %s (accept): ",
			k.LoadgenPerConnect(), k.Attempt, k.Upgrade, k.TargetPerConnect())
	}
	for _, c := range []struct {
		stderr string
		want   string
	}{
		{defErr, line(sim.CPUCosts{})},
		{errOut, line(sim.CPUCosts{Attempt: 4335, Upgrade: 5665, Accept: 10 * time.Microsecond})},
	} {
		if !strings.Contains(c.stderr, c.want) {
			t.Errorf("stderr %q: no %q", c.stderr, c.want)
		}
	}
	for _, c := range []struct {
		config map[string]any
		costs  string
	}{
		{defConfig, sim.DefaultCPUCosts.String()},
		{config, "attempt=4.335us,upgrade=5.665us,disconnect=17.6us,accept=10us,close=14.1us,segment=3us,ping=47us,slice=1.5ms,loadgen_share=2.4,loadgen_growth=0.346,target_growth=0.462"},
	} {
		if c.config["cpu-costs"] != c.costs || c.config["cpu-per-connect"] != "" {
			t.Errorf("summary.json config: cpu-costs %q, cpu-per-connect %q; want %q and \"\"", c.config["cpu-costs"], c.config["cpu-per-connect"], c.costs)
		}
	}
	b, err := json.Marshal(config)
	if err != nil {
		t.Fatal(err)
	}
	again, _, _ := simulate("--config", writeFile(t, "again.yaml", string(b)))
	if *again.R99S != *cheap.R99S || again.Recovered != cheap.Recovered {
		t.Errorf("the recorded config given back: R99 %.2fs, %d back; the run's %.2fs, %d", *again.R99S, again.Recovered, *cheap.R99S, cheap.Recovered)
	}
}

// TestSimulateChecksScheduleAsRun: simulate and advise refuse a schedule
// that run refuses, with one line naming --chaos and before anything is
// simulated or written: one that fires every microsecond, and a file of
// 10,000 repeating entries.
func TestSimulateChecksScheduleAsRun(t *testing.T) {
	file := filepath.Join(t.TempDir(), "many.chaos")
	if err := os.WriteFile(file, []byte(strings.Repeat("every 10ms stall 1ms\n", chaos.MaxEntries)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"simulate", "advise"} {
		for _, sched := range [][]string{{"--chaos", "every 1us restart"}, {"--chaos-file", file}} {
			out := filepath.Join(t.TempDir(), "out")
			args := append([]string{"stampede", cmd, "--clients", "10", "--duration", "2s", "--out", out}, sched...)
			done := make(chan struct{})
			var code int
			var stdout, stderr bytes.Buffer
			go func() {
				defer close(done)
				code = runApp(args, &stdout, &stderr)
			}()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Fatalf("%s %s: still simulating after 30s", cmd, sched[0])
			}
			if errOut := stderr.String(); code != 2 || !strings.HasPrefix(errOut, "stampede: --chaos: ") || strings.Count(errOut, "\n") != 1 {
				t.Errorf("%s %s: exit %d, stderr %q; want exit 2 and one line naming --chaos", cmd, sched[0], code, errOut)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%s %s: wrote %s", cmd, sched[0], out)
			}
		}
	}
}
