package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/calibration"
	"github.com/stampede-dev/stampede/spec"
)

// TestCloseRate reads a restart's close rate from a timeline: 900 of
// 1,000 connections of 2 processes gone 0.3 s after Start (the end of the
// third bucket) is 0.9·500/0.3 = 1,500 a second per process, what the
// model's even spread over conns/rate gives.
func TestCloseRate(t *testing.T) {
	dir := t.TempDir()
	timeline := "t_s,connected,disconnects\n" +
		"4.9,1000,0\n" + // before Start: not counted
		"5,700,300\n" +
		"5.1,400,300\n" +
		"5.2,100,300\n" + // 900 gone by 5.3
		"5.3,0,100\n"
	if err := os.WriteFile(filepath.Join(dir, "timeline.csv"), []byte(timeline), 0o644); err != nil {
		t.Fatal(err)
	}
	s := &summary{Events: []event{{StartS: 5}}, Recovery: []recovery{{ConnectedBefore: 1000}}}
	if got := closeRate(dir, s, 2); got < 1499.9 || got > 1500.1 {
		t.Errorf("close rate %g, want 1500", got)
	}
	if got := closeRate(dir, s, 0); got != 0 {
		t.Errorf("close rate without processes %g, want 0 (the model's default)", got)
	}
}

// TestIssueRate reads the loadgens' rate of starting attempts from a
// timeline: its fastest 100 ms bucket, 5,943 attempts, is 59,430 a second
// (the jittered 50,000-client run's, in the outage); a run without a
// timeline gives the bench machine's old 40,000.
func TestIssueRate(t *testing.T) {
	dir := t.TempDir()
	timeline := "t_s,connected,attempts\n" +
		"34.3,0,5439\n" +
		"34.4,0,5832\n" +
		"34.5,0,5943\n" +
		"34.6,0,5420\n"
	if err := os.WriteFile(filepath.Join(dir, "timeline.csv"), []byte(timeline), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := issueRate(dir); got != 59430 {
		t.Errorf("issue rate %g, want 59430", got)
	}
	if got := issueRate(t.TempDir()); got != 40000 {
		t.Errorf("issue rate without a timeline %g, want 40000", got)
	}
}

// TestSimArgs builds the simulation of a real run on its own inputs: the
// command's flags, its layout, the restart's stop time (exit less down=)
// and start time, and the cores the run had, its machine's less the share
// other processes took.
func TestSimArgs(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "timeline.csv"), []byte("t_s,connected,attempts\n0,0,100\n0.1,0,800\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := &summary{Events: []event{{StartS: 120, EndS: 182.5, ReadyS: 187.5}}}
	s.Spec = &spec.Run{Server: &spec.Server{Procs: 56}}
	p, err := backoff.Parse("exp:initial=1s")
	if err != nil {
		t.Fatal(err)
	}
	rc := &runConfig{Spec: &spec.Run{Client: &spec.Client{Clients: 1e6, Policy: p}, Server: &spec.Server{},
		Chaos: "at 120s restart abrupt down=2s", Duration: 600 * time.Second}}
	rc.Machine.Cores, rc.Machine.OtherCPUShare = 2, 0.25
	args, err := simArgs(dir, s, rc, 65536, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(args, " ")
	for _, want := range []string{"--clients 1000000", "--policy exp:initial=1s", "--duration 600s",
		"--chaos at 120s restart abrupt down=2s", "--procs 56", "--stop-time 60.500s", "--start-time 5.000s",
		"--issue-rate 8000", "--cores 1.5", "--netdev-backlog 65536"} {
		if !strings.Contains(got, want) {
			t.Errorf("simulate %s: no %q", got, want)
		}
	}
	if strings.Contains(got, "--accept-rate") || strings.Contains(got, "--shed") {
		t.Errorf("simulate %s: a zero flag passed", got)
	}
}

// TestSimArgsPerConnect simulates a real million-client run from its
// results folder (testdata/million: its summary.json, less what calibrate
// does not read, and a few lines of its timeline.csv) on all its inputs:
// with --cores, the CPU each end spent per first connect on that machine,
// its summary.json resources.loadgen.cpu_us_per_connect and
// resources.target.cpu_us_per_connect (78.9 and 83.4 µs), less the model's
// growth to a million (÷ 1.346 and ÷ 1.462: 58.6 and 57.0 µs); without
// them, or without --cores, no --cpu-per-connect.
func TestSimArgsPerConnect(t *testing.T) {
	dir, s, rc := millionRun(t)
	args, err := simArgs(dir, s, rc, 65536, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	want := "simulate -q --clients 1000000 --policy exp:initial=1s,max=60s,jitter=0.5,spread=100ms-500ms --seed 1 --duration 600s " +
		"--chaos at 120s restart abrupt down=2s --backlog 128 --connect-timeout 10s --handshake-timeout 10s --max-inflight 2000 " +
		"--procs 56 --stop-time 31.719s --start-time 3.030s --issue-rate 66740 --cores 1.54 --cpu-per-connect 58.6us,57us --netdev-backlog 65536"
	if got := strings.Join(args, " "); got != want {
		t.Errorf("simulate\n%s\nwant\n%s", got, want)
	}

	noCores := *rc
	noCores.Machine.Cores = 0
	args, err = simArgs(dir, s, &noCores, 0, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(args, " "); strings.Contains(got, "--cpu-per-connect") || strings.Contains(got, "--cores") {
		t.Errorf("simulate %s: without the machine's cores, no --cores nor --cpu-per-connect", got)
	}

	oneEnd := *rc
	oneEnd.Resources.Target.CPUUsPerConnect = nil
	args, err = simArgs(dir, s, &oneEnd, 0, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(args, " "); strings.Contains(got, "--cpu-per-connect") || !strings.Contains(got, "--cores 1.54") {
		t.Errorf("simulate %s: with one end's figure only, --cores and no --cpu-per-connect", got)
	}
}

// TestMeasureCosts: a run of 1,000 clients connected in its first second
// (half of them in its first 100 ms), idle to its event at 30 s, pinging
// every 10 s (pong timeout 10 s: a sweep every 2.5 s). Per first connect
// over the ramp alone, to the end of the 100 ms the last client connected
// in (1.0 s): the loadgen's 0.05 CPU-s and the target's 0.04, 50 µs and
// 40 µs. Per ping over the sweeps from 2.5 to 27.5 s: the clients
// connected at 0 s are pinged at the sweeps of 10 and 20 s, those at 0.5
// and 0.9 s at those of 12.5 and 22.5 s, 2,000 pings in all, for 1.3
// CPU-s of both ends': 650 µs. With the event at 23.5 s the last sweep
// counted is 20 s's, and the pings of 22.5 s's are left out with the CPU
// after it: 1,500 pings for 1.2 CPU-s, 800 µs.
func TestMeasureCosts(t *testing.T) {
	timeline := "t_s,connected,successes\n" +
		"0,500,500\n" +
		"0.5,700,200\n" +
		"0.9,1000,300\n" + // all connected: the ramp ends at 1.0
		"1,1000,0\n"
	resources := "t_s,role,cpu_s\n" +
		"-0.5,loadgen,0.01\n-0.5,target,0.02\n" +
		"0.5,loadgen,0.04\n0.5,target,0.05\n" +
		"1.5,loadgen,0.08\n1.5,target,0.07\n" + // at 1.0: 0.06 and 0.06
		"2.5,loadgen,0.1\n2.5,target,0.1\n" +
		"22.5,loadgen,0.6\n22.5,target,0.8\n" +
		"27.5,loadgen,0.7\n27.5,target,0.8\n" +
		"31,loadgen,0.9\n31,target,0.9\n"
	dir := runDir(t, timeline, resources)
	s := &summary{Events: []event{{StartS: 30}}, Recovery: []recovery{{ConnectedBefore: 1000}}}
	mc, ok := measureCosts(dir, s, 10*time.Second, 10*time.Second)
	near := func(got, want float64) bool { return got > want-1e-6 && got < want+1e-6 }
	if !ok || !near(mc.RampEnd, 1.0) || !near(mc.Loadgen, 50) || !near(mc.Target, 40) || !near(mc.Ping, 650) {
		t.Errorf("measureCosts = %+v, %v; want ramp end 1.0 s, 50 µs and 40 µs a connect, 650 µs a ping", mc, ok)
	}
	early := &summary{Events: []event{{StartS: 23.5}}, Recovery: []recovery{{ConnectedBefore: 1000}}}
	if mc, ok := measureCosts(dir, early, 10*time.Second, 10*time.Second); !ok || !near(mc.Ping, 800) {
		t.Errorf("event at 23.5 s: %+v, %v; want 800 µs a ping", mc, ok)
	}
	if mc, ok := measureCosts(dir, s, 0, 0); !ok || mc.Ping != 0 {
		t.Errorf("without pings: %+v, %v; want no ping cost", mc, ok)
	}
	// Ten clients connected at 0 s, 990 at 0.5 s, the event at 13.1 s:
	// the window's one sweep with pings, 10 s's, pings ten clients, under
	// a tenth of the fleet, and its 1.8 CPU-s are the idle processes'.
	few := runDir(t, "t_s,connected,successes\n0,10,10\n0.5,1000,990\n1,1000,0\n",
		"t_s,role,cpu_s\n-0.5,loadgen,0\n-0.5,target,0\n2.5,loadgen,0.1\n2.5,target,0.1\n"+
			"12.5,loadgen,1.0\n12.5,target,1.0\n14,loadgen,1.1\n14,target,1.1\n")
	late := &summary{Events: []event{{StartS: 13.1}}, Recovery: []recovery{{ConnectedBefore: 1000}}}
	if mc, ok := measureCosts(few, late, 10*time.Second, 10*time.Second); !ok || mc.Ping != 0 {
		t.Errorf("ten pings of a thousand clients: %+v, %v; want no ping cost", mc, ok)
	}
	short := &summary{Events: []event{{StartS: 0.5}}, Recovery: []recovery{{ConnectedBefore: 1000}}}
	if _, ok := measureCosts(dir, short, 10*time.Second, 10*time.Second); ok {
		t.Error("an event before the fleet was all connected: measured anyway")
	}
}

// TestMeasureHerd: a restart whose targets are Ready at 10 s, 1,000
// clients connected before it. The 100 ms from 10.0 s bring 200 back of
// 500 attempts, those from 10.1 s 750 of 800: 950 back, 90 % reached,
// the window 10.0-10.2 s. In it the loadgen spent 0.13 CPU-s, 100 µs an
// attempt; with a ramp of 101.5 µs a first connect (the model's split,
// 15.129 : 19.771) an upgrade is 57.5 µs of it, an attempt (130,000 -
// 950 x 57.5) / 1,300 = 57.981 µs; the target 0.095 CPU-s, 100 µs an
// upgrade.
// The 100 ms after the window, and what came before Ready, are not
// counted.
func TestMeasureHerd(t *testing.T) {
	timeline := "t_s,connected,attempts,successes\n" +
		"9.9,0,400,0\n" +
		"10,200,500,200\n" +
		"10.1,950,800,750\n" +
		"10.2,1000,50,50\n"
	resources := "t_s,role,cpu_s\n" +
		"9.5,loadgen,0.5\n9.5,target,0.1\n" +
		"10,loadgen,1\n10,target,0.2\n" +
		"10.2,loadgen,1.13\n10.2,target,0.295\n" +
		"11,loadgen,2\n11,target,1\n"
	dir := runDir(t, timeline, resources)
	s := &summary{Events: []event{{StartS: 5, ReadyS: 10}}, Recovery: []recovery{{ConnectedBefore: 1000}}}
	h, ok := measureHerd(dir, s, 101.5)
	near := func(got, want float64) bool { return got > want-1e-3 && got < want+1e-3 }
	if !ok || !near(h.From, 10) || !near(h.To, 10.2) || h.Attempts != 1300 || h.Upgrades != 950 ||
		!near(h.LoadgenPerAttempt, 100) || !near(h.Upgrade, 57.5) || !near(h.Attempt, 57.981) || !near(h.Accept, 100) {
		t.Errorf("measureHerd = %+v, %v; want 10.0-10.2 s, 1,300 attempts, 950 upgrades, 100 µs an attempt (57.981 less 57.5 an upgrade), 100 µs an accept", h, ok)
	}
	if got, want := h.cpuCosts("19.3us"), "attempt=58us,upgrade=57.5us,accept=100us,ping=19.3us"; got != want {
		t.Errorf("cpuCosts = %q, want %q", got, want)
	}
	if _, ok := measureHerd(dir, &summary{Events: []event{{StartS: 5}}, Recovery: []recovery{{ConnectedBefore: 1000}}}, 101.5); ok {
		t.Error("an event with no Ready: measured anyway")
	}
}

// TestSimArgsHerd: with a herd's costs the simulation gets them as
// --cpu-costs attempt=, upgrade=, accept=, and no --cpu-per-connect.
func TestSimArgsHerd(t *testing.T) {
	dir, s, rc := millionRun(t)
	args, err := simArgs(dir, s, rc, 0, &herdCosts{Attempt: 48.54, Upgrade: 27.9, Accept: 65.6}, "")
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(args, " ")
	if !strings.Contains(got, "--cores 1.54 --cpu-costs attempt=48.5us,upgrade=27.9us,accept=65.6us") || strings.Contains(got, "--cpu-per-connect") {
		t.Errorf("simulate %s: want the herd's --cpu-costs and no --cpu-per-connect", got)
	}
}

// TestSimArgsLaw: with a cost law the simulation gets no
// --cpu-per-connect; the model's own law (-law) passes nothing in its
// place, a given one (-law-costs) passes it as --cpu-costs, and the
// run's ping with it only when the law gives none.
func TestSimArgsLaw(t *testing.T) {
	dir, s, rc := millionRun(t)
	const law = "attempt=20us,upgrade=26us,accept=24us,loadgen_growth=0.5,target_growth=0.8"
	for _, c := range []struct {
		law, want string
	}{
		{modelLaw, "--cores 1.54"},
		{law, "--cores 1.54 --cpu-costs " + law},
		{law + ",ping=3us", "--cores 1.54 --cpu-costs " + law + ",ping=3us"},
	} {
		args, err := simArgs(dir, s, rc, 0, nil, c.law)
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Join(args, " ")
		if !strings.Contains(got, c.want) || strings.Contains(got, "--cpu-per-connect") || strings.Count(got, "ping=") > 1 {
			t.Errorf("law %s: simulate %s: want %q, no --cpu-per-connect and one ping at most", c.law, got, c.want)
		}
	}
}

// millionRun loads testdata/million: its folder, summary and run config.
func millionRun(t *testing.T) (string, *summary, *runConfig) {
	t.Helper()
	dir := filepath.Join("testdata", "million")
	rc, err := readRunConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	return dir, load(dir), rc
}

// runDir returns a new folder holding a run's timeline.csv and
// resources.csv with these bodies.
func runDir(t *testing.T, timeline, resources string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range map[string]string{"timeline.csv": timeline, "resources.csv": resources} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestWriteCalibration: -write-calibration puts a run's herd costs into
// the calibration file in place of the product's, each figure with the
// run's command, day and machine, and keeps every figure it did not
// measure as the file had it. The run is TestMeasureHerd's herd (57.98 µs
// an attempt less its upgrades, 57.5 µs an upgrade, 100 µs a target's
// upgrade) with a summary.json of a run of 2026-12-05.
func TestWriteCalibration(t *testing.T) {
	timeline := "t_s,connected,attempts,successes\n" +
		"9.9,0,400,0\n10,200,500,200\n10.1,950,800,750\n10.2,1000,50,50\n"
	resources := "t_s,role,cpu_s\n" +
		"9.5,loadgen,0.5\n9.5,target,0.1\n10,loadgen,1\n10,target,0.2\n" +
		"10.2,loadgen,1.13\n10.2,target,0.295\n11,loadgen,2\n11,target,1\n"
	dir := runDir(t, timeline, resources)
	summaryJSON := `{"run_id": "2026-12-05T18-41-39Z-0001",
		"config": {"clients": 1000, "chaos": "at 5s restart abrupt down=2s", "duration": "20s"},
		"spec": {"kind": "run", "client": {"clients": 1000, "policy": {"kind": "fixed", "initial": 1000000000}},
			"duration": 20000000000, "chaos": "at 5s restart abrupt down=2s"},
		"machine": {"cores": 2},
		"resources": {"loadgen": {"cpu_us_per_connect": 101.5}, "target": {"cpu_us_per_connect": 80.9}},
		"events": [{"start_s": 5, "end_s": 7, "ready_s": 10}],
		"recovery": [{"connected_before": 1000, "recovered": 1000}]}`
	if err := os.WriteFile(filepath.Join(dir, "summary.json"), []byte(summaryJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "calibration.json")
	if err := writeCalibration(path, dir, "VM, 24 GiB"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := calibration.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"sim.cpu.attempt": "58µs", "sim.cpu.upgrade": "57.5µs", "sim.cpu.accept": "100µs"} {
		g, _ := f.Lookup(name)
		src := g.Source
		if g.Value != want || src.Date != "2026-12-05" || src.Machine.Kind != "VM, 24 GiB" || src.Machine.Cores != 2 ||
			!strings.HasPrefix(src.Command, "stampede run --clients 1000 --policy fixed:initial=1s --duration 20s --chaos 'at 5s restart abrupt down=2s'; lab/calibrate") {
			t.Errorf("%s = %s from %+v; want %s, of 2026-12-05 on a 2-core VM, from the run's command", name, g.Value, src, want)
		}
	}
	for _, name := range []string{"sim.cpu.segment", "sim.max_calibrated_clients", "worker.gc_percent"} {
		if got, want := lookup(f, name), lookup(calibration.Embedded, name); got != want {
			t.Errorf("%s = %+v, want the product's %+v", name, got, want)
		}
	}
	if len(f.Figures) != len(calibration.Embedded.Figures) {
		t.Errorf("%d figures written, want the product's %d", len(f.Figures), len(calibration.Embedded.Figures))
	}
	// Written again over itself: the same bytes.
	if err := writeCalibration(path, dir, "VM, 24 GiB"); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(path); string(again) != string(b) {
		t.Error("a second write of the same run changed the file")
	}
	if err := writeCalibration(path, dir, ""); err == nil {
		t.Error("no -machine: written anyway")
	}
}

// lookup returns the figure named name of f, or the zero Figure.
func lookup(f calibration.File, name string) calibration.Figure {
	g, _ := f.Lookup(name)
	return g
}

// TestReadyAfterStart: the table's restart row is the first event's
// Ready less its Start, and "never" when the target was not ready again
// or its Ready is unknown.
func TestReadyAfterStart(t *testing.T) {
	var row figure
	for _, f := range scaleFigures {
		if f.name == "ready after start s" {
			row = f
		}
	}
	if row.get == nil {
		t.Fatal("no ready row in scaleFigures")
	}
	for _, c := range []struct {
		events string
		want   string
	}{
		{`[{"start_s": 60, "end_s": 64.7, "ready_s": 64.9}]`, "4.90"},
		{`[{"start_s": 60, "end_s": 0, "ready_s": 0, "never_ready": true}]`, "never"},
		{`[{"start_s": 60}]`, "never"},
		{`[]`, "never"},
	} {
		var s summary
		if err := json.Unmarshal([]byte(`{"events": `+c.events+`}`), &s); err != nil {
			t.Fatal(err)
		}
		if got := val(row.get(&s)); got != c.want {
			t.Errorf("events %s: ready after start %s, want %s", c.events, got, c.want)
		}
	}
}
