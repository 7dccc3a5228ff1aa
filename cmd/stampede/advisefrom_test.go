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
