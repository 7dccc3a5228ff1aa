package storm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/internal/clock"
	"github.com/stampede-dev/stampede/mitigation"
	"github.com/stampede-dev/stampede/report"
	"github.com/stampede-dev/stampede/results/folder"
	"github.com/stampede-dev/stampede/results/summary"
	"github.com/stampede-dev/stampede/spec"
)

// DefaultBenchPolicies are the policies `stampede bench` compares: a fixed
// interval, exponential backoff without jitter (the fleet stays in
// lockstep), the same with a ±50 % band and a per-client base spread, and
// full jitter.
var DefaultBenchPolicies = []string{
	"fixed:initial=1s",
	"exp:initial=1s,multiplier=2,max=60s",
	"exp:initial=1s,multiplier=2,max=60s,jitter=0.5,spread=100ms-500ms",
	"full:initial=1s,multiplier=2,max=60s",
}

// BenchConfig describes a bench: the same storm once per policy.
type BenchConfig struct {
	// Storm is the storm every policy faces; its Fleet.Policy and Out are
	// set per run.
	Storm Config
	// Policies are policy specs (backoff.Parse); empty means
	// DefaultBenchPolicies.
	Policies []string
	// Mitigations, when set, makes the bench compare server-side
	// mitigations instead of policies: one run per mitigation, all with
	// the one policy of Policies (the first default when empty), each
	// with the storm's server and schedule as the mitigation changes
	// them (mitigation.Mitigation.Apply).
	Mitigations []mitigation.Mitigation
	// KeepSchedule leaves the schedule of a bench of mitigations as
	// given: the mitigations change the server only (a TLS bench's, whose
	// restart is abrupt), where otherwise every restart turns graceful.
	KeepSchedule bool
	// Out is the bench folder: one sub-folder per policy and bench.json.
	Out string
	// Pause is the quiet time between runs, so one run's TIME_WAIT sockets
	// and kernel queues do not colour the next; zero means 2 s.
	Pause time.Duration
	// Progress, if set, is told when each run starts.
	Progress io.Writer
	// Settings, if set, gives each run's Storm.Settings from its policy
	// spec: the command line's rendered flags with that run's policy.
	Settings func(policy string) any
}

// BenchRun is one policy's run.
type BenchRun struct {
	// Policy is the spec as given.
	Policy string `json:"policy"`
	// Mitigation names the run's server-side mitigation in a bench of
	// mitigations ("none", "shed=5s"); empty in a bench of policies.
	Mitigation string `json:"mitigation,omitempty"`
	// Dir is the run's results folder.
	Dir string `json:"dir"`
	// Summary is the run's summary; nil when it failed.
	Summary *summary.Summary `json:"-"`
	// Err is why the run failed, if it did.
	Err string `json:"error,omitempty"`
	// OpenFiles is how many files (descriptors) the bench process had
	// open once the run had ended, -1 when /proc could not say; with
	// Goroutines it shows whether runs leak (docs/results.md).
	OpenFiles int `json:"open_files"`
	// Goroutines is runtime.NumGoroutine once the run had ended.
	Goroutines int `json:"goroutines"`
}

// BenchFile is the bench's index in its folder.
const BenchFile = folder.BenchFile

// Bench runs the storm once per policy, each into its own folder under
// cfg.Out, and writes bench.json listing them. A failed run does not stop
// the bench; the error is kept on its row and returned at the end.
func Bench(ctx context.Context, cfg BenchConfig) ([]BenchRun, error) {
	variants, policies, err := cfg.variants()
	if err != nil {
		return nil, err
	}
	base := cfg.Storm
	base.Fleet.Policy = policies[0]
	if err := base.Validate(); err != nil {
		return nil, err
	}
	endLive, err := benchLive(&base, cfg.Out)
	if err != nil {
		return nil, err
	}
	defer endLive()
	pause := cfg.Pause
	if pause <= 0 {
		pause = 2 * time.Second
	}
	runs := make([]BenchRun, 0, len(variants))
	var errs []error
	for i, v := range variants {
		if i > 0 {
			if err := clock.Sleep(ctx, pause); err != nil {
				break
			}
		}
		run := base
		run.Kind = spec.KindBench
		run.Fleet.Policy = policies[i%len(policies)]
		run.Out = ""
		name, what := v.policy, "policy "+v.policy
		if m := v.mitigation; m != nil {
			name, what = m.String(), "mitigation "+m.String()
			srv, sched := m.Apply(run.Target.Server, run.Schedule)
			run.Target.Server = srv
			if !cfg.KeepSchedule {
				run.Schedule, run.ScheduleText = sched, sched.String()
			}
		}
		if cfg.Settings != nil {
			run.Settings = cfg.Settings(v.policy)
		}
		dir := ""
		if cfg.Out != "" {
			dir = filepath.Join(cfg.Out, folder.PolicyDir(i, name))
			run.Out = dir
		}
		if cfg.Progress != nil {
			fmt.Fprintf(cfg.Progress, "bench: run %d of %d, %s\n", i+1, len(variants), what)
		}
		res, err := RunValid(ctx, run) // base was validated once above; Parse checked the policy
		br := BenchRun{Policy: v.policy, Dir: dir, OpenFiles: openFiles(), Goroutines: runtime.NumGoroutine()}
		if v.mitigation != nil {
			br.Mitigation = v.mitigation.String()
		}
		if res != nil {
			br.Summary = res.Summary
		}
		if err != nil {
			br.Err = err.Error()
			errs = append(errs, fmt.Errorf("%s: %w", what, err))
		}
		runs = append(runs, br)
		if ctx.Err() != nil {
			break
		}
	}
	if cfg.Out != "" {
		if err := writeBenchIndex(cfg.Out, runs); err != nil {
			errs = append(errs, err)
		} else if err := writeBenchReport(cfg.Out); err != nil {
			errs = append(errs, err)
		}
	}
	return runs, errors.Join(errs...)
}

// benchVariant is one run of a bench: a policy, and the mitigation
// applied to the run's server and schedule, if any.
type benchVariant struct {
	policy     string
	mitigation *mitigation.Mitigation
}

// variants returns the bench's runs in order, and the policies parsed (one
// for a bench of mitigations): every policy of the bench, or its one
// policy with each mitigation, checked against the run's server.
func (cfg BenchConfig) variants() ([]benchVariant, []backoff.Policy, error) {
	specs := cfg.Policies
	if len(specs) == 0 {
		specs = DefaultBenchPolicies
	}
	var variants []benchVariant
	if len(cfg.Mitigations) > 0 {
		if len(cfg.Policies) > 1 {
			return nil, nil, spec.Errorf("Storm.Policies", "a bench of mitigations takes one policy, not %d", len(cfg.Policies))
		}
		specs = specs[:1]
		for i := range cfg.Mitigations {
			m := &cfg.Mitigations[i]
			if err := m.Check(cfg.Storm.Target.Server); err != nil {
				return nil, nil, fmt.Errorf("mitigation %s: %w", m, err)
			}
			variants = append(variants, benchVariant{specs[0], m})
		}
	} else {
		for _, p := range specs {
			variants = append(variants, benchVariant{policy: p})
		}
	}
	policies := make([]backoff.Policy, len(specs))
	for i, s := range specs {
		p, err := backoff.Parse(s)
		if err != nil {
			return nil, nil, spec.Errorf("Storm.Policies", "%w", err)
		}
		policies[i] = p
	}
	return variants, policies, nil
}

// openFiles counts this process's open file descriptors, -1 when
// /proc/self/fd cannot be read.
func openFiles() int {
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(fds) - 1 // the descriptor ReadDir itself had open
}

// Rows returns the comparison table's rows of a bench.
func Rows(runs []BenchRun) []summary.Row {
	rows := make([]summary.Row, len(runs))
	for i, r := range runs {
		rows[i] = summary.Row{Policy: r.Policy, Mitigation: r.Mitigation, Summary: r.Summary}
	}
	return rows
}

// writeBenchIndex writes bench.json: the policies in order and their
// folders, relative to the bench folder.
func writeBenchIndex(dir string, runs []BenchRun) error {
	if err := folder.MakeDir(dir); err != nil {
		return err
	}
	idx := make([]BenchRun, len(runs))
	for i, r := range runs {
		idx[i] = r
		if rel, err := filepath.Rel(dir, r.Dir); err == nil {
			idx[i].Dir = rel
		}
	}
	b, err := json.MarshalIndent(struct {
		Runs []BenchRun `json:"runs"`
	}{idx}, "", "  ")
	if err != nil {
		return err
	}
	return folder.WriteBytes(filepath.Join(dir, BenchFile), append(b, '\n'))
}

// writeBenchReport writes the bench folder's report.html: the policies
// side by side, then each run, from the run folders bench.json lists.
func writeBenchReport(dir string) error {
	runs, err := report.LoadDirs([]string{dir})
	if err != nil {
		return err
	}
	return report.WriteFile(filepath.Join(dir, report.File), runs)
}
