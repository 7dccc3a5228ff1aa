package main

import (
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/advise"
	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/chaos"
	"github.com/stampede-dev/stampede/loadgen"
	"github.com/stampede-dev/stampede/results/folder"
	"github.com/stampede-dev/stampede/spec"
	"github.com/stampede-dev/stampede/storm"
	"github.com/stampede-dev/stampede/target"
)

// TestAdviseFromLibraryRun: advise --from infers the same capacity from
// a results folder a library caller wrote (storm.Run, its config a Go
// struct, no flags) as from one the command line wrote for the same run:
// both are read by their spec. Before the spec, the library's folder gave
// no backlog at all.
func TestAdviseFromLibraryRun(t *testing.T) {
	const (
		clients = 400
		rate    = 200 // accepts a second: the herd of 400 saturates it
		backlog = 64
		policy  = "exp:initial=100ms,max=1s,jitter=0.5"
		event   = "at 1s restart abrupt down=300ms"
	)
	// storm.Run starts its agents from this executable: they run main.
	t.Setenv(testMainEnv, "1")
	lib := filepath.Join(t.TempDir(), "lib")
	sched, err := chaos.Parse(event)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), contractTimeout)
	defer cancel()
	_, err = storm.Run(ctx, storm.Config{
		Fleet:    loadgen.Config{Client: spec.Client{Clients: clients, Ramp: 0.9 * rate, Policy: backoff.MustParse(policy), Seed: 1}},
		Target:   target.Config{Server: spec.Server{Backlog: backlog, AcceptRate: rate}},
		Schedule: sched, ScheduleText: event, Duration: 7 * time.Second, Out: lib,
	})
	if err != nil {
		t.Fatal(err)
	}
	cli := filepath.Join(t.TempDir(), "cli")
	if code, _, stderr := runStampede(t, "run", "--clients", "400", "--accept-rate", "200", "--backlog", "64",
		"--policy", policy, "--seed", "1", "--chaos", event, "--duration", "7s", "--out", cli, "-q"); code != 0 {
		t.Fatalf("stampede run: exit %d\n%s", code, stderr)
	}
	fromLib, err := advise.InferDir(lib)
	if err != nil {
		t.Fatal(err)
	}
	fromCLI, err := advise.InferDir(cli)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("library: %s", fromLib.Capacity.Source)
	t.Logf("CLI: %s", fromCLI.Capacity.Source)
	if fromLib.Capacity.Backlog != backlog || fromCLI.Capacity.Backlog != backlog {
		t.Errorf("backlog: library %d, CLI %d, want %d from both", fromLib.Capacity.Backlog, fromCLI.Capacity.Backlog, backlog)
	}
	if fromLib.Procs != fromCLI.Procs || fromLib.Clients != fromCLI.Clients || fromLib.Chaos != fromCLI.Chaos ||
		fromLib.Policy == nil || fromCLI.Policy == nil || fromLib.Policy.String() != fromCLI.Policy.String() {
		t.Errorf("library %+v\nCLI %+v", fromLib, fromCLI)
	}
	// Real sockets: the two herds' plateaus differ by noise only.
	if a, b := fromLib.Capacity.AcceptRate, fromCLI.Capacity.AcceptRate; math.Abs(a-b) > 0.15*max(a, b) || a < 0.7*rate || b < 0.7*rate {
		t.Errorf("accept rate: library %.0f/s, CLI %.0f/s, want both near %d/s", a, b, rate)
	}
	// And the command reads the library's folder as its own.
	code, stdout, stderr := runStampede(t, "advise", "--from", lib, "--seeds", "1", "--candidates", "4",
		"--out", filepath.Join(t.TempDir(), "advise"), "-q")
	if code != 0 || !strings.Contains(stdout, "backlog 64 from the run's spec") {
		t.Errorf("advise --from the library's folder: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}

// TestAdviseFromDrill: advise --from a drill's folder needs no --chaos
// (the deploy event becomes a restart of the outage measured, and the
// deploy command is never read as a schedule), takes the drill's policy as
// the current one, warns in one line that a policy without jitter measured
// a lockstep herd, and recommends no policy whose spread is above its max.
func TestAdviseFromDrill(t *testing.T) {
	const policy = "exp:initial=200ms,max=2s" // no jitter, no spread: lockstep
	srv := newDrillServer(t)
	trigger := filepath.Join(t.TempDir(), "deployed")
	onFile(t, trigger, func() {
		srv.setPace(10 * time.Millisecond) // 100 accepts a second: the herd of 200 takes 2 s
		srv.restart(1012, 500*time.Millisecond, "1")
	})
	drillDir := filepath.Join(t.TempDir(), "drill")
	if code, _, stderr := runStampede(t, "drill", "--url", srv.url, "--clients", "200", "--policy", policy, "--duration", "7s",
		"--restart-cmd", "touch "+trigger, "--at", "1s", "--out", drillDir, "-q"); code != 0 {
		t.Fatalf("stampede drill: exit %d\n%s", code, stderr)
	}
	out := filepath.Join(t.TempDir(), "advise")
	code, stdout, stderr := runStampede(t, "advise", "--from", drillDir, "--seeds", "2", "--candidates", "12", "--out", out, "-q")
	if code != 0 {
		t.Fatalf("advise --from a drill: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if lines := strings.Count(stderr, "lockstep"); lines != 1 {
		t.Errorf("want one line warning of a lockstep herd, got %d:\n%s", lines, stderr)
	}
	sum, err := folder.ReadSummary(filepath.Join(out, folder.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	if got := sum.Advise.Current.Policy; got != backoff.MustParse(policy).String() {
		t.Errorf("current policy %s, want the drill's %s", got, policy)
	}
	if sum.Spec == nil || !strings.HasPrefix(sum.Spec.Chaos, "at 1") || !strings.Contains(sum.Spec.Chaos, "restart") {
		t.Errorf("the simulated event: spec %+v, want a restart at the deploy's start", sum.Spec)
	}
	for _, c := range sum.Advise.Candidates {
		p, err := backoff.Parse(c.Policy)
		if err != nil {
			t.Fatal(err)
		}
		if p.Max > 0 && (p.SpreadMax > p.Max || p.Initial > p.Max) {
			t.Errorf("candidate %s: a spread or first delay above its max", c.Policy)
		}
	}
	t.Logf("advise --from the drill:\n%s%s", stdout, stderr)
}
