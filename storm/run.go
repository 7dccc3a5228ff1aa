// Package storm is the one orchestrator of a run: it places the run's roles
// on agents, starts them on one barrier, drives the chaos schedule, shows
// progress, collects and summarises the results, and gates them on SLOs.
// `stampede run` (the bundled target), `stampede loadgen` (any server) and
// `stampede bench` (a run per policy) all go through Run.
//
//	storm.Run ─┬─ target agent (target.Group, SO_REUSEPORT) <── chaos.Supervisor
//	           │     └ control messages: restart, stall, backlog, reject
//	           ├─ proxy agent (fault proxy group) <── chaos.Supervisor
//	           ├─ loadgen agents (shares of the fleet) ──> merged results.Report
//	           ├─ Config.Sidecars (a drill's deploy command, collectors) ──> events, files
//	           ├─ hoststat.Sampler (gopsutil: every agent's processes) ──> resources.csv
//	           ├─ hoststat.KernelSampler (herd counters once a second) ──> kernel.csv
//	           ├─ haproxy.Sampler (--haproxy-socket, once a second) ──> haproxy.csv
//	           └─ kernel counters, first to last sample ──> results.Summarize ──> summary.json (+ SLOs)
//	              ──> timeline.csv, *.hlog ──> report.Render ──> report.html
//
// Without a target of its own (Fleet.URL set) there is no supervisor, and
// outages are detected from the clients' side. A process that exits when
// nothing scheduled it becomes a "crash" event and the run is incomplete.
package storm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/stampede-dev/stampede/chaos"
	"github.com/stampede-dev/stampede/cluster"
	"github.com/stampede-dev/stampede/cluster/hub"
	"github.com/stampede-dev/stampede/haproxy"
	"github.com/stampede-dev/stampede/hoststat"
	"github.com/stampede-dev/stampede/loadgen"
	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/spec"
	"github.com/stampede-dev/stampede/target"
)

// Run carries out one run and writes its results folder: place the roles,
// start barrier, progress, chaos, collect, summarise, gate. It returns the
// Result with ErrIncomplete or ErrInterrupted when the run did not go as
// planned but its figures were still written.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return RunValid(ctx, cfg)
}

// RunValid is Run for a cfg that has passed Validate already (a drill's,
// a bench's): it is checked once, where it enters.
func RunValid(ctx context.Context, cfg Config) (*Result, error) {
	progress := &Progress{W: cfg.Log, Interval: cfg.ProgressInterval, Clients: cfg.Fleet.Clients}
	defer progress.Stop()
	logw := progress.Log() // chaos and agent lines, kept off the status line
	logf := func(f string, a ...any) { fmt.Fprintf(logw, f+"\n", a...) }
	mx, err := startMetrics(ctx, metricsConfig{cfg.MetricsAddr, cfg.MetricsLinger, cfg.Pushgateway}, progress, cfg.Fleet, logw)
	if err != nil {
		return nil, err
	}
	defer mx.close()

	// The load balancer's sockets answer before anything starts.
	var hap *haproxy.Sampler
	if len(cfg.HAProxySockets) > 0 {
		hap = &haproxy.Sampler{Interval: time.Second}
		for _, s := range cfg.HAProxySockets {
			hap.Clients = append(hap.Clients, &haproxy.Client{Socket: s})
		}
		if err := hap.Check(ctx); err != nil {
			return nil, spec.Errorf("Storm.HAProxySockets", "%w", err)
		}
	}

	// Size the run for this machine's limits.
	tcfg := cfg.Target
	sz, err := size(&cfg, &tcfg)
	if err != nil {
		return nil, err
	}
	totalRate := tcfg.AcceptRate
	if totalRate > 0 {
		tcfg.AcceptRate = totalRate / float64(sz.TargetProcs)
		if tcfg.AcceptRate < target.MinAcceptRate {
			return nil, spec.Errorf("Server.AcceptRate", "%g shared by %d target processes is %g each, below the least one paces (%g/s)",
				totalRate, sz.TargetProcs, tcfg.AcceptRate, target.MinAcceptRate)
		}
	}

	runID := results.NewRunID(time.Now(), cfg.Fleet.Seed)
	mx.setRunID(runID)

	// A run with --agents: the hub they join, and the wait for them.
	var members []*hub.Member
	if cfg.Agents > 0 {
		hc := cfg.Hub
		hc.RunID, hc.Log = runID, logf
		h, err := hub.New(hc)
		if err != nil {
			return nil, err
		}
		defer h.Close() // after the agents are stopped (deferred below): bye to each
		what := "the token in"
		if h.WroteToken() {
			what = "a new token written to"
		}
		logf("agents: waiting for %d agent(s) on %s (%s %s); on each host run:\n  %s", cfg.Agents, h.URL(), what, hc.TokenFile, h.JoinCommand())
		timeout := cfg.AgentTimeout
		if timeout <= 0 {
			timeout = DefaultAgentTimeout
		}
		if members, err = h.Wait(ctx, cfg.Agents, timeout); err != nil {
			return nil, err
		}
	}

	// Agents live until the run's end, whatever ctx does (an interrupted
	// run still collects its loadgens' reports); they are stopped and
	// waited for on return.
	agentCtx, killAgents := context.WithCancel(context.Background())
	defer killAgents()
	var mu sync.Mutex
	var crashes []results.Event
	var start time.Time
	co := &cluster.Coordinator{}
	co.OnProgress = func(a *cluster.Agent, p cluster.Progress) {
		if a.Plan.Role == cluster.RoleLoadgen {
			progress.Update(a.Index(), p)
		}
	}
	co.OnEvent = func(a *cluster.Agent, e cluster.Event) {
		mu.Lock()
		defer mu.Unlock()
		at := time.Duration(0)
		if !start.IsZero() {
			at = e.At.Sub(start)
		}
		logf("crash: %s process %d exited (%s) at %.3fs; nothing scheduled it", e.Role, e.PID, e.Exit, at.Seconds())
		crashes = append(crashes, results.Event{Kind: e.Kind, Mode: string(e.Role), Start: at, Role: string(e.Role), PID: e.PID, Exit: e.Exit})
	}
	lostAgents, aborted := 0, false
	co.OnLost = func(a *cluster.Agent, err error) {
		mu.Lock()
		lostAgents++
		at := time.Duration(0)
		if !start.IsZero() {
			at = time.Since(start)
		}
		mu.Unlock()
		clients := 0
		if a.Plan.Loadgen != nil {
			clients = a.Plan.Loadgen.Clients
		}
		logf("lost: agent %s (%s, %d client(s)) at %.3fs, unix %.3f: %v", a.Name, a.Plan.Role, clients, at.Seconds(),
			float64(time.Now().UnixMilli())/1000, err)
		if cfg.OnAgentLoss == LossFail {
			logf("lost: --on-agent-loss fail: stopping the run")
			mu.Lock()
			aborted = true
			mu.Unlock()
			co.Abort()
		}
	}
	local := &cluster.Local{Exe: cfg.Exe, Logs: prefixWriter(logw, "")}
	defer func() {
		co.StopAll(10 * time.Second)
		for _, a := range co.Agents() {
			if a.Proc != nil {
				a.Proc.WaitOrKill(5 * time.Second)
			}
		}
	}()
	pl := &placer{co: co, local: local, agentCtx: agentCtx, runID: runID}
	if len(members) > 0 {
		co.PerMember = true
		if pl.target, pl.loadgens, err = assignRoles(members, cfg.external(), logf); err != nil {
			return nil, err
		}
	}

	// Place the target and the proxy; the fleet's URL is theirs.
	fleet := cfg.Fleet
	var tgt *cluster.RemoteTarget
	var proxy *cluster.RemoteProxy
	if !cfg.external() {
		ta, err := pl.place("target", cluster.Plan{RunID: runID, Role: cluster.RoleTarget,
			Target: &cluster.TargetPlan{Config: tcfg, Procs: sz.TargetProcs}}, pl.target)
		if err == nil {
			err = co.WaitReady(ctx, ta)
		}
		if err != nil {
			return nil, fmt.Errorf("starting the target: %w", err)
		}
		tgt = cluster.NewRemoteTarget(ta)
		logf("target: %d process(es) on %s, backlog %d, accept rate %s", sz.TargetProcs, ta.Ready.Addr, tcfg.Backlog, rateText(totalRate))
		fleet.URL = ta.Ready.URL
		if cfg.Proxy || cfg.Schedule.HasProxyEvents() {
			cfg.Proxy = true // recorded in summary.json's config
			if proxy, err = pl.startProxy(ctx, ta.Ready.Addr, fleet, logf); err != nil {
				return nil, err
			}
			fleet.URL = proxy.URLFor(fleet.URL)
		}
		if tcfg.TLS && tcfg.CertFile == "" {
			fleet.TLSInsecure = true // the target's certificate is self-signed, made at its start
		}
		if fleet.Ramp == 0 && totalRate > 0 {
			fleet.Ramp = 0.9 * totalRate
		}
		warnRamp(logw, fleet, cfg.Schedule, cfg.Duration)
	}
	fleet.SourceIPs = sz.SourceIPs

	// Place the loadgen shares.
	loadgens, err := pl.placeLoadgens(ctx, fleet, sz.LoadgenProcs, cfg.external())
	if err != nil {
		return nil, err
	}
	if pl.remote() {
		logf("loadgen: %d client(s) in %d share(s) on %d agent(s), policy %s", fleet.Clients, len(loadgens), len(pl.loadgens), fleet.Policy)
	} else {
		logf("loadgen: %d client(s) in %d agent process(es), %d source address(es), policy %s",
			fleet.Clients, len(loadgens), max(1, len(sz.SourceIPs)), fleet.Policy)
	}

	// Resources and kernel counters.
	sampler := hoststat.NewSampler(time.Second, func() map[string][]int32 { return rolePIDs(co) })
	if tgt != nil {
		sampler.CountTCP(urlPort(tgt.URL()), urlPort(fleet.URL)) // resources.csv tcp_* columns
	} else {
		sampler.CountTCP(urlPort(fleet.URL), urlPort(fleet.URL))
	}
	sampleCtx, stopSampling := context.WithCancel(context.Background())
	defer stopSampling()
	go sampler.Run(sampleCtx)
	kernel := hoststat.NewKernelSampler(time.Second) // kernel.csv
	go kernel.Run(sampleCtx)
	hapDone := make(chan struct{})
	if hap != nil {
		go func() { hap.Run(sampleCtx); close(hapDone) }() // haproxy.csv
	} else {
		close(hapDone)
	}

	// Start barrier, chaos, collect.
	var sup *chaos.Supervisor
	if tgt != nil {
		sup = &chaos.Supervisor{Schedule: cfg.Schedule, Target: tgt, Log: logf}
		if proxy != nil {
			sup.Proxy = proxy // never a typed nil: the supervisor checks Proxy == nil
		}
		progress.Event = sup.Current
		mx.setChaos(sup)
	}
	at, err := co.Start(cfg.Duration)
	if err != nil {
		return nil, err
	}
	mu.Lock()
	start = at
	mu.Unlock()
	progress.Start(at)
	sideCtx, stopSide := context.WithDeadline(ctx, at.Add(cfg.Duration))
	defer stopSide()
	side := startSidecars(sideCtx, cfg.Sidecars, at)
	supCtx, stopChaos := context.WithCancel(ctx)
	defer stopChaos()
	supDone := make(chan error, 1)
	if sup != nil {
		go func() { supDone <- sup.Run(supCtx, at, cfg.Duration) }()
	} else {
		supDone <- nil
	}
	report, lost := co.Collect(ctx, at, cfg.Duration)
	interrupted := ctx.Err() != nil
	sideEvents := side.stop()
	progress.Stop()
	stopChaos()
	chaosErr := <-supDone
	if errors.Is(chaosErr, context.Canceled) {
		chaosErr = nil
	}
	for _, err := range lost {
		logf("loadgen: %v", err)
	}
	sampler.Sample()
	kernel.Stop() // the last row of kernel.csv, and the summary's kernel figures
	stopSampling()
	<-hapDone
	if hap != nil {
		hap.Sample(context.Background()) // the run's last figures
	}

	// Summarise and gate.
	length := cfg.Duration
	mu.Lock()
	stoppedEarly := aborted
	mu.Unlock()
	if interrupted || stoppedEarly {
		length = min(length, max(0, time.Since(at)))
	}
	var events []results.Event
	if sup != nil {
		events = sup.Events()
	} else {
		events = results.DetectOutages(report, cfg.Detect)
	}
	mu.Lock()
	events = append(events, crashes...)
	events = append(events, sideEvents...)
	complete := len(crashes) == 0 && len(lost) == 0
	// --on-agent-loss continue: a run whose only fault is its lost agents
	// is reported (incomplete) but not failed for them.
	accepted := cfg.OnAgentLoss == LossContinue && lostAgents > 0 && len(crashes) == lostAgents && len(lost) <= lostAgents
	mu.Unlock()
	// Each loadgen computes its clients' share of every event's recovery;
	// the coordinator never holds the fleet's transitions.
	events = results.DropExplained(events)
	results.SortEvents(events)
	partials, err := co.Recover(context.Background(), events, length)
	if err != nil {
		logf("recovery: %v", err)
		complete = false
	}
	in := results.Input{
		RunID:     runID,
		Seed:      fleet.Seed,
		Config:    cfg.summaryConfig(sz, tcfg),
		Report:    report,
		Events:    events,
		Partials:  partials,
		End:       length,
		Resources: sampler.Stats(),
	}
	in.Kernel, in.KernelRead = kernel.Total() // kernel.csv's last row: the summary agrees with it
	switch {
	case !in.KernelRead:
		in.KernelNote = "the kernel counters could not be read"
		if err := kernel.Err(); err != nil {
			in.KernelNote += ": " + err.Error()
		}
	case cfg.external() && !onThisHost(fleet.URL):
		in.KernelRead, in.KernelNote = false, "the counters are this host's; the server of --url listens on another host"
	}

	loadgen.Tally(report) // lost and duplicated messages, over the whole fleet
	sum := results.Summarize(in)
	sum.Complete, sum.Interrupted = complete, interrupted
	sum.Agents = agentSummaries(co, at)
	if hap != nil {
		sum.HAProxy = hap.Totals()
	}
	sum.SetSLO(results.EvalSLOs(cfg.SLO, sum))
	for _, sc := range cfg.Sidecars {
		if c, ok := sc.(Checker); ok {
			sum.AddChecks(c.Checks(events)...)
		}
	}
	pushErr := mx.setSummary(sum)
	res := &Result{Summary: sum, Report: report, Sizing: sz, HAProxy: hap}
	if co.PerMember {
		if res.Members, err = co.MemberReports(at); err != nil {
			logf("agents: %v", err)
		}
	}
	if cfg.Out != "" {
		if err := writeResults(cfg.Out, res, sampler, kernel, at, cfg); err != nil {
			return res, err
		}
	}
	switch {
	case interrupted:
		return res, ErrInterrupted
	case chaosErr != nil:
		return res, fmt.Errorf("chaos schedule: %w", chaosErr)
	case !complete && !accepted:
		return res, ErrIncomplete
	}
	return res, pushErr
}

// warnRamp says so when the fleet will still be ramping up at the first
// chaos event: the event then hits a fleet that is not all connected, and
// its recovery figures cover fewer clients than asked for.
func warnRamp(w io.Writer, fleet loadgen.Config, s *chaos.Schedule, d time.Duration) {
	if fleet.Ramp <= 0 || s == nil {
		return
	}
	plan := s.Plan(d)
	if len(plan) == 0 {
		return
	}
	ramp := time.Duration(float64(fleet.Clients) / fleet.Ramp * float64(time.Second))
	if ramp >= plan[0].At {
		fmt.Fprintf(w, "warning: ramping %d clients at %.0f/s takes %s, past the first chaos event at %s; raise --ramp or schedule the event later\n",
			fleet.Clients, fleet.Ramp, ramp.Round(100*time.Millisecond), plan[0].At)
	}
}

func rateText(r float64) string {
	if r <= 0 {
		return "unlimited"
	}
	return fmt.Sprintf("%g/s", r)
}
