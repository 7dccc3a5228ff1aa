package advise

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/results/folder"
	"github.com/stampede-dev/stampede/results/summary"
	"github.com/stampede-dev/stampede/sim"
	"github.com/stampede-dev/stampede/spec"
)

// Measured is what a real run's (or a drill's) results folder says of the
// server and the event it recovered from.
type Measured struct {
	// Capacity is the server's: the accept rate at the herd's plateau,
	// the backlog from the run's spec (0 when it does not say), and how
	// they were read.
	Capacity Capacity
	// Saturated is true when the herd failed attempts after ready or the
	// kernel dropped connections on a full accept queue: the server was
	// at capacity, so the plateau is its accept rate. False makes
	// AcceptRate a lower bound.
	Saturated bool
	// Backlog and Procs are the listen backlog of one target process and
	// the processes, from the run's spec (summary.json "spec"); 0 when it
	// does not say (a server the run did not start).
	Backlog, Procs int
	// Clients is the fleet's size.
	Clients int
	// Policy is the policy the fleet ran, from the run's spec: the
	// current policy of a search from the folder. Nil when the folder
	// has no spec.
	Policy *backoff.Policy
	// Lockstep is true when Policy draws no random delay (fixed or
	// exponential, no jitter and no spread): the fleet retried in waves,
	// and the accept rate of a wave is a poor measure of the server's.
	Lockstep bool
	// Duration is the run's planned length; 0 when unknown.
	Duration time.Duration
	// Chaos is a chaos schedule of the event: its own schedule text, or,
	// for an event no schedule made (a drill's deploy, an outage a
	// loadgen detected), a restart with the outage it measured.
	Chaos string
	// OutageS is the event's start to ready.
	OutageS float64
	// Event names the event ("restart abrupt").
	Event string
	// TLS is the run's TLS, from its spec: a search from a wss:// run
	// charges the same handshakes, full or resumed (package sim).
	TLS TLSSettings
}

// TLSSettings are a run's TLS settings, as its spec gives them: the
// server's (spec.Server) and the fleet's session cache (spec.Client).
// Zero for a ws:// run.
type TLSSettings struct {
	// On is spec.Server.TLS: the bundled target served wss://.
	On bool
	// CertKind, NoTickets and TicketKeys are spec.Server's TLSCertKind,
	// TLSNoTickets and TLSTicketKeys.
	CertKind   string
	NoTickets  bool
	TicketKeys string
	// NoResume is spec.Client.TLSNoResume.
	NoResume bool
}

// InferDir reads dir's summary.json and timeline.csv and infers the
// server's capacity (Infer). A bench's folder (bench.json) is read run
// by run, and the run with the highest rate is the measure: the herd
// that kept the server busiest.
func InferDir(dir string) (Measured, error) {
	b, err := folder.ReadFile(dir, folder.BenchFile)
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
	f, err := folder.Open(dir, folder.TimelineFile)
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
// server's rate when the herd saturated it; the backlog, the processes,
// the fleet's policy and the run's length are the run's spec's
// (summary.json "spec", whichever kind of run or library call wrote it).
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
	m.Event = summary.EventName(e)
	if e.OutageS != nil {
		m.OutageS = *e.OutageS
	}
	m.Chaos = chaosOf(e)
	m.fromSpec(sum.Spec)
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
	m.Capacity.Backlog = m.Backlog * max(1, m.Procs)
	m.Capacity.Source = fmt.Sprintf("accept rate %.0f/s: the most clients connected in one second (%.1f-%.1fs) of the herd after %s", best, at, at+1, m.Event)
	if !m.Saturated {
		m.Capacity.Source += " (no attempt failed after ready and no accept queue overflowed: the server was not saturated, so this is a lower bound)"
	}
	if share, ok := e.TLSResumedShare(); ok {
		m.Capacity.Source += fmt.Sprintf("; wss://: %.0f%% of its reconnects resumed their TLS session", 100*share)
	}
	if m.Capacity.Backlog > 0 {
		m.Capacity.Source += fmt.Sprintf("; backlog %d from the run's spec", m.Capacity.Backlog)
	}
	return m, nil
}

// LockstepWarning is one line saying the herd measured was in lockstep
// (Lockstep), or "".
func (m Measured) LockstepWarning() string {
	if !m.Lockstep || m.Policy == nil {
		return ""
	}
	return fmt.Sprintf("warning: the run's policy %s draws no random delay, so its herd came back in lockstep waves: the accept rate measured from it is a poor measure of the server's capacity", m.Policy)
}

// fromSpec takes what the run's spec says of the fleet and the server.
func (m *Measured) fromSpec(r *spec.Run) {
	if r == nil {
		return
	}
	m.Duration = r.Duration
	if r.Client != nil {
		p := r.Client.Policy
		m.Policy = &p
		m.Lockstep = (p.Kind == backoff.Fixed || p.Kind == backoff.Exp) && p.Jitter == 0 && p.SpreadMax == 0
		m.TLS.NoResume = r.Client.TLSNoResume
	}
	if s := r.Server; s != nil {
		m.Backlog, m.Procs = s.Backlog, s.Procs
		m.TLS.On, m.TLS.CertKind, m.TLS.NoTickets, m.TLS.TicketKeys = s.TLS, s.TLSCertKind, s.TLSNoTickets, s.TLSTicketKeys
	}
}

// chaosOf is a chaos schedule of event e: the schedule text it came from,
// or, for an event no schedule made (a drill's deploy, whose Spec is its
// command; an outage a loadgen detected), a restart at its start whose
// outage, from start to ready, is the one measured: the model's stop and
// start times around a down time of the rest. The restart is graceful
// when more clients were closed with a close frame than without.
func chaosOf(e summary.EventSummary) string {
	if !e.Detected && e.Kind != "deploy" {
		return e.Spec
	}
	if e.OutageS == nil {
		return ""
	}
	d := sim.Defaults()
	outage := time.Duration(*e.OutageS * float64(time.Second))
	down := max(0, outage-d.StopTime-d.StartTime).Round(time.Millisecond)
	mode := "abrupt"
	if e.Disconnects["closed_1001"]+e.Disconnects["closed_1012"]+e.Disconnects["closed_1013"] > e.Disconnects["closed_1006"] {
		mode = "graceful"
	}
	at := time.Duration(e.StartS * float64(time.Second)).Round(time.Millisecond)
	return fmt.Sprintf("at %s restart %s down=%s", at, mode, down)
}
