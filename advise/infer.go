package advise

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/stampede-dev/stampede/results/folder"
	"github.com/stampede-dev/stampede/results/summary"
	"github.com/stampede-dev/stampede/spec"
)

// Measured is what a real run's (or a drill's) results folder says of the
// server and the event it recovered from.
type Measured struct {
	// Capacity is the server's: the accept rate at the herd's plateau,
	// the backlog from the run's config (0 when it does not say), and how
	// they were read.
	Capacity Capacity
	// Saturated is true when the herd failed attempts after ready or the
	// kernel dropped connections on a full accept queue: the server was
	// at capacity, so the plateau is its accept rate. False makes
	// AcceptRate a lower bound.
	Saturated bool
	// Backlog and Procs are the listen backlog of one target process and
	// the processes, from the run's config; 0 when it does not say.
	Backlog, Procs int
	// Clients is the fleet's size.
	Clients int
	// Chaos is the schedule text of the event, when the run recorded one.
	Chaos string
	// OutageS is the event's start to ready.
	OutageS float64
	// Event names the event ("restart abrupt").
	Event string
}

// InferDir reads dir's summary.json and timeline.csv and infers the
// server's capacity (Infer). A bench's folder (bench.json) is read run
// by run, and the run with the highest rate is the measure: the herd
// that kept the server busiest.
func InferDir(dir string) (Measured, error) {
	b, err := os.ReadFile(filepath.Join(dir, folder.BenchFile))
	if err != nil {
		return inferRun(dir)
	}
	var idx struct {
		Runs []struct {
			Dir string `json:"dir"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(b, &idx); err != nil {
		return Measured{}, spec.Wrap("Advise.From", err)
	}
	var best Measured
	var errs []error
	for _, r := range idx.Runs {
		m, err := inferRun(filepath.Join(dir, r.Dir))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if m.Capacity.AcceptRate > best.Capacity.AcceptRate {
			best = m
		}
	}
	if best.Capacity.AcceptRate == 0 {
		return best, spec.Wrap("Advise.From", fmt.Errorf("no run of the bench %s gave a measure: %w", dir, errors.Join(errs...)))
	}
	best.Capacity.Source += fmt.Sprintf(" (the highest of the bench's %d runs)", len(idx.Runs))
	return best, nil
}

// inferRun is InferDir of one run's folder.
func inferRun(dir string) (Measured, error) {
	sum, err := folder.ReadSummary(filepath.Join(dir, folder.SummaryFile))
	if err != nil {
		return Measured{}, spec.Wrap("Advise.From", err)
	}
	f, err := os.Open(filepath.Join(dir, folder.TimelineFile))
	if err != nil {
		return Measured{}, spec.Wrap("Advise.From", err)
	}
	defer f.Close()
	tl, err := folder.ReadTimelineCSV(f)
	if err != nil {
		return Measured{}, spec.Wrap("Advise.From", err)
	}
	m, err := Infer(sum, tl)
	if err != nil {
		return m, err
	}
	m.Capacity.Source = dir + ": " + m.Capacity.Source
	return m, nil
}

// Infer reads the server's capacity from a run: the accept rate is the
// most clients that connected in one second (ten timeline buckets) over
// the herd window of the first event that took clients down, which is the
// server's rate when the herd saturated it; the backlog is the run's
// config's "backlog" (the key every run command records), times its
// target processes when the config's sizing says.
func Infer(sum *summary.Summary, tl []folder.TimelineRow) (Measured, error) {
	m := Measured{Clients: sum.Clients}
	ev := recoveryOf(sum)
	if ev < 0 {
		return m, spec.Errorf("Advise.From", "the run has no event that took clients down: nothing to measure a herd from")
	}
	rec := sum.Recovery[ev]
	e := sum.Events[rec.Event]
	if rec.WindowStartS == nil || rec.WindowEndS == nil {
		return m, spec.Errorf("Advise.From", "the event %s has no herd window (the server was never ready again)", summary.EventName(e))
	}
	m.Chaos, m.Event = e.Spec, summary.EventName(e)
	if e.OutageS != nil {
		m.OutageS = *e.OutageS
	}
	m.Saturated = rec.WastedAttempts != nil && *rec.WastedAttempts > 0 || sum.KernelRead && sum.Kernel.ListenOverflows > 0
	from, to := *rec.WindowStartS, *rec.WindowEndS
	best, at := 0.0, from
	for i := range tl {
		if tl[i].T < from-1e-9 || tl[i].T+1 > to+1e-9 {
			continue
		}
		var n float64
		for j := i; j < len(tl) && tl[j].T < tl[i].T+1-1e-9; j++ {
			n += float64(tl[j].Successes)
		}
		if n > best {
			best, at = n, tl[i].T
		}
	}
	if best == 0 {
		return m, spec.Errorf("Advise.From", "no client connected in a whole second of the herd window %.1f-%.1fs", from, to)
	}
	m.Capacity.AcceptRate = best
	m.Backlog, m.Procs = configBacklog(sum.Config)
	m.Capacity.Backlog = m.Backlog * max(1, m.Procs)
	m.Capacity.Source = fmt.Sprintf("accept rate %.0f/s: the most clients connected in one second (%.1f-%.1fs) of the herd after %s", best, at, at+1, m.Event)
	if !m.Saturated {
		m.Capacity.Source += " (no attempt failed after ready and no accept queue overflowed: the server was not saturated, so this is a lower bound)"
	}
	if m.Capacity.Backlog > 0 {
		m.Capacity.Source += fmt.Sprintf("; backlog %d from the run's config", m.Capacity.Backlog)
	}
	return m, nil
}

// configBacklog is the listen backlog of one process and the target's
// processes that a run's config records; 0 for what it does not say.
func configBacklog(raw json.RawMessage) (backlog, procs int) {
	var c struct {
		Backlog int `json:"backlog"`
		Sizing  struct {
			TargetProcs int `json:"target_procs"`
		} `json:"sizing"`
	}
	if json.Unmarshal(raw, &c) != nil || c.Backlog <= 0 {
		return 0, 0
	}
	return c.Backlog, c.Sizing.TargetProcs
}
