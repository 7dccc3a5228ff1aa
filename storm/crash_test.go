package storm_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/results/folder"
	"github.com/stampede-dev/stampede/results/summary"
	"github.com/stampede-dev/stampede/storm"
)

// descendants returns the processes below pid whose command line holds
// word, by walking /proc.
func descendants(pid int, word string) []int {
	parent := map[int]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after ')'.
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) > 1 {
			parent[p], _ = strconv.Atoi(f[1])
		}
	}
	var out []int
	for p := range parent {
		for q := parent[p]; q > 1; q = parent[q] {
			if q != pid {
				continue
			}
			cmd, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p), "cmdline"))
			if strings.Contains(string(cmd), word) {
				out = append(out, p)
			}
			break
		}
	}
	return out
}

// A target process killed from outside (kill -9) is a crash event with its
// role, pid and exit status; the run still writes its folder, with
// "complete": false, and returns ErrIncomplete.
func TestStormCrashOfATargetProcess(t *testing.T) {
	cfg := stormConfig(t, "")
	cfg.Schedule, cfg.ScheduleText = nil, ""
	cfg.Duration = 6 * time.Second
	cfg.Target.Procs = 2
	log := &lockedBuffer{}
	cfg.Log = log
	killed := make(chan int, 1)
	go func() {
		// The target agent is a child of this test; its servers are its
		// children, running `stampede agent` too.
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			// The servers are the target agent's two agent children.
			for _, a := range descendants(os.Getpid(), "agent") {
				kids := descendants(a, "agent")
				if len(kids) == 2 {
					time.Sleep(2 * time.Second) // the fleet is up
					syscall.Kill(kids[0], syscall.SIGKILL)
					killed <- kids[0]
					return
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
		killed <- 0
	}()
	res, err := storm.Run(context.Background(), cfg)
	if !errors.Is(err, storm.ErrIncomplete) {
		t.Fatalf("Run = %v; want ErrIncomplete\n%s", err, log)
	}
	pid := <-killed
	if pid == 0 {
		t.Fatalf("no target process found to kill\n%s", log)
	}
	sum := res.Summary
	if sum.Complete {
		t.Error("summary says complete after a crash")
	}
	var crash *summary.EventSummary
	for i, e := range sum.Events {
		if e.Kind == "crash" {
			crash = &sum.Events[i]
		}
	}
	if crash == nil || crash.Role != "target" || crash.PID != pid || !strings.Contains(crash.Exit, "killed") || crash.StartS <= 0 {
		t.Fatalf("crash event %+v; want role target, pid %d, killed, at a time of the run", crash, pid)
	}
	if _, err := os.Stat(filepath.Join(cfg.Out, folder.SummaryFile)); err != nil {
		t.Fatalf("no summary.json written: %v", err)
	}
}

// Ended early (Ctrl-C cancels the context), a run stops its fleet at once,
// writes its folder with "interrupted": true and the real duration, returns
// ErrInterrupted, and leaves no agent process running.
func TestStormInterrupted(t *testing.T) {
	cfg := stormConfig(t, "")
	cfg.Schedule, cfg.ScheduleText = nil, ""
	cfg.Duration = 60 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(3 * time.Second); cancel() }()
	began := time.Now()
	res, err := storm.Run(ctx, cfg)
	if !errors.Is(err, storm.ErrInterrupted) {
		t.Fatalf("Run = %v; want ErrInterrupted", err)
	}
	if took := time.Since(began); took > 40*time.Second {
		t.Fatalf("Run took %s after the cancel at 3 s", took)
	}
	if !res.Summary.Interrupted || res.Summary.DurationS >= 60 || res.Summary.DurationS <= 0 {
		t.Fatalf("summary interrupted %v, duration %.1fs; want true and the real duration", res.Summary.Interrupted, res.Summary.DurationS)
	}
	if left := descendants(os.Getpid(), "stampede"); len(left) > 0 {
		t.Fatalf("processes left running: %v", left)
	}
	if _, err := os.Stat(filepath.Join(cfg.Out, folder.SummaryFile)); err != nil {
		t.Fatalf("no summary.json written: %v", err)
	}
}
