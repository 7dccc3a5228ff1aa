package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/stampede-dev/stampede/loadgen"
	"github.com/stampede-dev/stampede/results"
)

// Local runs one fleet as worker processes on this machine.
type Local struct {
	// Exe is the worker program; empty means stampede-worker beside this
	// executable when it exists (a lean binary: about 7 MB of RSS per
	// worker instead of 16), else this executable's "worker" subcommand.
	Exe string
	// Args are the arguments that make Exe a worker; nil means {"worker"}.
	Args []string
	// Fleet is the whole fleet; it is split over Procs workers.
	Fleet loadgen.Config
	// Procs is the number of worker processes (at least 1).
	Procs int
	// Logs receives the workers' stderr, each line prefixed with its name.
	Logs io.Writer
	// OnStart and OnProgress are passed to the Coordinator.
	OnStart    func(at time.Time)
	OnProgress func(worker int, p Progress)

	mu   sync.Mutex
	pids []int
}

// PIDs returns the worker processes' IDs, for resource sampling.
func (l *Local) PIDs() []int32 {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]int32, len(l.pids))
	for i, p := range l.pids {
		out[i] = int32(p)
	}
	return out
}

// Run starts the workers, runs the fleet for duration from the start
// barrier (or until ctx is done) and returns the merged report. Every
// worker process has exited when it returns.
func (l *Local) Run(ctx context.Context, runID string, duration time.Duration) (*results.Report, error) {
	exe, args := l.Exe, l.Args
	if exe == "" {
		var err error
		if exe, args, err = workerCommand(); err != nil {
			return nil, err
		}
	}
	if args == nil {
		args = []string{"worker"}
	}
	// Worker processes outlive ctx's end by design (they still send their
	// final reports), so they get their own context, cancelled on return.
	procCtx, cancel := context.WithCancel(context.Background())
	defer cancel()
	configs := Split(l.Fleet, l.Procs)
	coord := &Coordinator{OnStart: l.OnStart, OnProgress: l.OnProgress}
	var procs []*Proc
	defer func() {
		for _, p := range procs {
			_ = p.Close()
		}
		for _, p := range procs {
			waitOrKill(p, 10*time.Second)
		}
	}()
	for i, c := range configs {
		p, err := SpawnLocal(procCtx, exe, args, fmt.Sprintf("worker %d", i), l.Logs)
		if err != nil {
			return nil, err
		}
		procs = append(procs, p)
		l.mu.Lock()
		l.pids = append(l.pids, p.PID())
		l.mu.Unlock()
		coord.Workers = append(coord.Workers, &Worker{Transport: p, Plan: Plan{RunID: runID, Loadgen: c}})
	}
	return coord.Run(ctx, duration)
}

// WorkerBinary is the lean worker program looked for beside the running
// executable (cmd/stampede-worker).
const WorkerBinary = "stampede-worker"

// workerCommand returns how to start a worker: the lean stampede-worker
// beside this executable when it is there, else this executable's hidden
// "worker" subcommand.
func workerCommand() (exe string, args []string, err error) {
	self, err := os.Executable()
	if err != nil {
		return "", nil, fmt.Errorf("cluster: finding the stampede binary: %w", err)
	}
	lean := filepath.Join(filepath.Dir(self), WorkerBinary)
	if fi, err := os.Stat(lean); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
		return lean, []string{}, nil
	}
	return self, []string{"worker"}, nil
}

// waitOrKill waits for p to exit, killing it after grace.
func waitOrKill(p *Proc, grace time.Duration) {
	done := make(chan struct{})
	go func() { _ = p.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(grace):
		if err := p.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
			return
		}
		<-done
	}
}
