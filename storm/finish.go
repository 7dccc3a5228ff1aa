package storm

import (
	"context"
	"fmt"
	"time"

	"github.com/stampede-dev/stampede/hoststat"
	"github.com/stampede-dev/stampede/loadgen"
	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/results/slo"
	"github.com/stampede-dev/stampede/results/summary"
)

// finish turns what the run collected into its outcome: the events (the
// supervisor's, or the outages detected from the clients' side, with the
// crashes and the sidecars'), each loadgen's share of their recovery
// (recover ──> recovery), the summary and its gates, the results folder.
func (r *run) finish() (*Result, error) {
	cfg, d := &r.cfg, &r.drove
	crashes, lostAgents, aborted, allStopped := r.watch.outcome()
	length := cfg.Duration
	if d.interrupted || aborted || allStopped {
		length = min(length, max(0, time.Since(r.at)))
	}
	var events []results.Event
	if r.sup != nil {
		events = r.sup.Events()
	} else {
		events = summary.DetectOutages(d.report, cfg.Detect)
	}
	events = append(events, crashes...)
	events = append(events, d.sideEvents...)
	complete := len(crashes) == 0 && len(d.lost) == 0
	// --on-agent-loss continue: a run whose only fault is its lost agents
	// is reported (incomplete) but not failed for them.
	accepted := cfg.OnAgentLoss == LossContinue && lostAgents > 0 && len(crashes) == lostAgents && len(d.lost) <= lostAgents
	// Each loadgen computes its clients' share of every event's recovery;
	// the coordinator never holds the fleet's transitions.
	events = summary.DropExplained(events)
	summary.SortEvents(events)
	partials, err := r.co.Recover(context.Background(), events, length)
	if err != nil {
		r.logf("recovery: %v", err)
		complete = false
	}
	sum := r.summarize(events, partials, length)
	sum.Complete, sum.Interrupted = complete, d.interrupted
	sum.Agents = agentSummaries(r.co, r.at)
	sum.Machine = r.sampler.Machine()
	if r.hap != nil {
		sum.HAProxy = r.hap.Totals()
	}
	sum.SetSLO(slo.EvalSLOs(cfg.SLO, sum))
	for _, sc := range cfg.Sidecars {
		if c, ok := sc.(Checker); ok {
			sum.AddChecks(c.Checks(events)...)
		}
	}
	unreached := r.checkReached(sum)
	pushErr := r.mx.setSummary(sum)
	res := &Result{Summary: sum, Report: d.report, Sizing: r.sz, HAProxy: r.hap}
	if r.co.PerMember {
		if res.Members, err = r.co.MemberReports(r.at); err != nil {
			r.logf("agents: %v", err)
		}
	}
	if cfg.Out != "" {
		if err := writeResults(cfg.Out, res, r.sampler, r.kernel, r.at, *cfg); err != nil {
			return res, err
		}
	}
	r.finishLive()
	switch {
	case d.interrupted:
		return res, ErrInterrupted
	case d.chaosErr != nil:
		return res, fmt.Errorf("chaos schedule: %w", d.chaosErr)
	case !complete && !accepted:
		return res, ErrIncomplete
	case unreached != nil:
		return res, unreached
	}
	return res, pushErr
}

// cpuSeries is each role's CPU samples from samples (hoststat's, in time
// order), on the time axis of the run started at start.
func cpuSeries(samples []hoststat.ResourceSample, start time.Time) map[string][]summary.CPUPoint {
	out := map[string][]summary.CPUPoint{}
	for _, s := range samples {
		out[s.Role] = append(out[s.Role], summary.CPUPoint{At: s.At.Sub(start), CPUSeconds: s.CPUSeconds})
	}
	return out
}

// localCPU is cpu without the roles that ran on another host than the
// coordinator's (hosts[1:], hostFigures). The agents send their hosts' CPU
// as running totals, not as samples on the run's time axis: such a role
// has no CPU per connect (null), rather than this host's share of it
// divided by the whole fleet's connects.
func localCPU(cpu map[string][]summary.CPUPoint, hosts []results.HostSummary) map[string][]summary.CPUPoint {
	out := make(map[string][]summary.CPUPoint, len(cpu))
	for role, pts := range cpu {
		elsewhere := false
		for _, h := range hosts[min(1, len(hosts)):] {
			elsewhere = elsewhere || h.HasRole(role)
		}
		if !elsewhere {
			out[role] = pts
		}
	}
	return out
}

// summarize computes the run's summary from its merged report, its events
// and their recovery partials, its resources and kernel counters; length
// is the run's real length.
func (r *run) summarize(events []results.Event, partials []results.RecoveryPartial, length time.Duration) *summary.Summary {
	cfg := &r.cfg
	in := summary.Input{
		RunID:     r.runID,
		Seed:      r.fleet.Seed,
		Config:    cfg.summaryConfig(r.sz, r.tcfg),
		Spec:      cfg.summarySpec(r.fleet, r.sz),
		Report:    r.drove.report,
		Events:    events,
		Partials:  partials,
		End:       length,
		Resources: r.sampler.Stats(),
		CPU:       cpuSeries(r.sampler.Samples(), r.at),
	}
	in.Resubscribed = r.co.Resubscribed()
	in.Syscalls = r.syscalls()
	in.Kernel, in.KernelRead = r.kernel.Total() // kernel.csv's last row: the summary agrees with it
	switch {
	case !in.KernelRead:
		in.KernelNote = "the kernel counters could not be read"
		if err := r.kernel.Err(); err != nil {
			in.KernelNote += ": " + err.Error()
		}
	case cfg.external() && !onThisHost(r.fleet.URL):
		in.KernelRead, in.KernelNote = false, "the counters are this host's; the server at the fleet's URL listens on another host"
	}
	var hosts []results.HostSummary
	if spread(r.co) {
		// Each host's figures are read there; the target's counters are
		// its hosts', never the coordinator's.
		hosts = hostFigures(r.co, in.Kernel, in.KernelRead, in.KernelNote, in.Resources)
		if k, ok, why := targetKernel(hosts); ok || why != "" {
			in.Kernel, in.KernelRead, in.KernelNote = k, ok, why
		}
		in.Resources = hostResources(in.Resources, hosts)
		in.CPU = localCPU(in.CPU, hosts)
	}
	loadgen.Tally(r.drove.report) // lost and duplicated messages, over the whole fleet
	s := summary.Summarize(in)
	s.Hosts = hosts
	if st := r.drove.tls; st != nil {
		s.TLSHandshakes = map[string]results.TLSHandshakes{results.RoleTarget: results.NewTLSHandshakes(st.Full, st.Resumed, st.FullCPUNS, st.ResumedCPUNS)}
	}
	return s
}

// syscallsTimeout bounds the read of the target's counters at the end.
const syscallsTimeout = 5 * time.Second

// syscalls is each role's system calls as its processes counted them: the
// loadgens' latest progress (calls and attempts of the same snapshot), the
// target's processes now (calls and accepts of the processes alive at the
// end: a restarted process's count starts again with it).
func (r *run) syscalls() map[string]summary.SyscallCount {
	out := map[string]summary.SyscallCount{}
	if lg := r.progress.Total(); len(lg.Syscalls) > 0 {
		out[results.RoleLoadgen] = summary.SyscallCount{Calls: lg.Syscalls, Attempts: lg.Attempts}
	}
	if r.tgt == nil {
		return out
	}
	ctx, cancel := context.WithTimeout(context.Background(), syscallsTimeout)
	defer cancel()
	st, err := r.tgt.Stats(ctx)
	switch {
	case err != nil:
		r.logf("target: system calls not counted: %v", err)
	case len(st.Syscalls) > 0:
		out[results.RoleTarget] = summary.SyscallCount{Calls: st.Syscalls, Attempts: st.Accepted}
	}
	return out
}
