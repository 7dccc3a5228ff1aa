// Package storm is the one orchestrator of a run: it places the run's roles
// on agents, starts them on one barrier, drives the chaos schedule, shows
// progress, collects and summarises the results, and gates them on SLOs.
// `stampede run` (the bundled target), `stampede loadgen` (any server) and
// `stampede bench` (a run per policy) all go through Run.
//
//	storm.Run ─┬─ target agent (group.Group, SO_REUSEPORT) <── supervisor.Supervisor
//	           │     └ control messages: restart, stall, backlog, reject
//	           ├─ proxy agent (fault proxy group) <── supervisor.Supervisor
//	           ├─ loadgen agents (shares of the fleet) ──> merged results.Report
//	           ├─ Config.Sidecars (a drill's deploy command, collectors) ──> events, files
//	           ├─ hoststat.Sampler (gopsutil: every agent's processes) ──> resources.csv
//	           ├─ hoststat.KernelSampler (herd counters once a second) ──> kernel.csv
//	           ├─ haproxy.Sampler (--haproxy-socket, once a second) ──> haproxy.csv
//	           └─ kernel counters, first to last sample ──> summary.Summarize ──> summary.json (+ SLOs)
//	              ──> timeline.csv, *.hlog ──> report.Render ──> report.html
//
// Without a target of its own (Fleet.URL set) there is no supervisor, and
// outages are detected from the clients' side. A process that exits when
// nothing scheduled it becomes a "crash" event and the run is incomplete.
package storm

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"runtime"
	"time"

	"github.com/stampede-dev/stampede/agent"
	"github.com/stampede-dev/stampede/chaos"
	"github.com/stampede-dev/stampede/chaos/supervisor"
	"github.com/stampede-dev/stampede/cluster"
	"github.com/stampede-dev/stampede/cluster/hub"
	"github.com/stampede-dev/stampede/haproxy"
	"github.com/stampede-dev/stampede/hoststat"
	"github.com/stampede-dev/stampede/loadgen"
	"github.com/stampede-dev/stampede/results/summary"
	"github.com/stampede-dev/stampede/spec"
	"github.com/stampede-dev/stampede/target"
)

// Run carries out one run and writes its results folder, in four phases
// that follow the messages of docs/agent.md:
//
//	prepare  metrics, the load balancer's sockets, sizing, the agents' hub
//	place    plan ──> ready: the target, the fault proxy, the loadgen shares
//	drive    start, progress, control (chaos), sidecars, samplers,
//	         results ──> stop ──> final
//	finish   recover ──> recovery, summarise, SLOs, the results folder
//
// It returns the Result with ErrIncomplete or ErrInterrupted when the run
// did not go as planned but its figures were still written.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return RunValid(ctx, cfg)
}

// RunValid is Run for a cfg that has passed Validate already (a drill's,
// a bench's): it is checked once, where it enters.
func RunValid(ctx context.Context, cfg Config) (*Result, error) {
	r := &run{cfg: cfg}
	defer r.cleanup()
	if err := r.prepare(ctx); err != nil {
		return nil, err
	}
	if err := r.place(ctx); err != nil {
		return nil, err
	}
	if err := r.drive(ctx); err != nil {
		return nil, err
	}
	return r.finish()
}

// run is one run as it goes through its phases: what each phase made that
// a later one needs.
type run struct {
	cfg      Config
	progress *Progress
	logw     io.Writer // chaos and agent lines, kept off the status line
	mx       *runMetrics
	hap      *haproxy.Sampler // nil without --haproxy-socket
	closers  []func()         // undone on return, last first
	ownLive  bool             // the live page is this run's, not a bench's

	// prepare
	tcfg      target.Config // the target's, with its share of the accept rate
	totalRate float64       // the group's accept rate (0 unlimited)
	sz        Sizing
	runID     string
	members   []*hub.Member // the agents that joined (--agents)

	// place
	co    *cluster.Coordinator
	watch *agentWatch
	fleet loadgen.Config // with the target's (or the proxy's) URL
	tgt   *cluster.RemoteTarget
	proxy *cluster.RemoteProxy

	// drive
	sampler *hoststat.Sampler
	// samplerDone closes when the sampler's Run has taken its last sample.
	samplerDone <-chan struct{}
	kernel      *hoststat.KernelSampler
	sup         *supervisor.Supervisor // nil against --url
	at          time.Time              // the start barrier: the run's time zero
	drove       driven
}

// defer_ registers f to run when Run returns, after those registered
// later.
func (r *run) defer_(f func()) { r.closers = append(r.closers, f) }

// cleanup undoes what the phases set up, last first.
func (r *run) cleanup() {
	for i := len(r.closers) - 1; i >= 0; i-- {
		r.closers[i]()
	}
}

func (r *run) logf(f string, a ...any) { fmt.Fprintf(r.logw, f+"\n", a...) }

// prepare is everything before a role is placed: the progress display and
// the metrics, the load balancer's sockets, the run's sizing for this
// machine, its id, and with --agents the hub and the wait for them.
func (r *run) prepare(ctx context.Context) error {
	cfg := &r.cfg
	if cfg.external() { // a name that does not resolve fails here, not as dns for the whole run
		u, _ := url.Parse(cfg.Fleet.URL) // Validate parsed it
		if err := spec.CheckResolves(ctx, "Client.URL", u); err != nil {
			return err
		}
	}
	r.progress = &Progress{W: cfg.Log, Interval: cfg.ProgressInterval, Clients: cfg.Fleet.Clients}
	r.defer_(r.progress.Stop)
	r.logw = r.progress.Log()
	if err := r.startLive(); err != nil {
		return err
	}
	mx, err := startMetrics(ctx, metricsConfig{cfg.MetricsAddr, cfg.MetricsLinger, cfg.Pushgateway, cfg.OTLP}, r.progress, cfg.Fleet, r.logw)
	if err != nil {
		return err
	}
	r.mx = mx
	r.defer_(mx.close)

	// The load balancer's sockets answer before anything starts.
	if len(cfg.HAProxySockets) > 0 {
		r.hap = &haproxy.Sampler{Interval: time.Second}
		for _, s := range cfg.HAProxySockets {
			r.hap.Clients = append(r.hap.Clients, &haproxy.Client{Socket: s})
		}
		if err := r.hap.Check(ctx); err != nil {
			return spec.Errorf("Storm.HAProxySockets", "%w", err)
		}
	}

	// Size the run for this machine's limits.
	r.tcfg = cfg.Target
	if r.sz, err = size(cfg, &r.tcfg); err != nil {
		return err
	}
	r.totalRate = r.tcfg.AcceptRate
	if err := shareRates(&r.tcfg, r.sz.TargetProcs); err != nil {
		return err
	}

	r.runID = summary.NewRunID(time.Now(), cfg.Fleet.Seed)
	if err := mx.setRunID(r.runID); err != nil {
		return err
	}
	if err := r.scopeStore(ctx); err != nil {
		return err
	}
	return r.joinAgents(ctx)
}

// joinAgents starts the hub of a run with --agents and waits for them.
func (r *run) joinAgents(ctx context.Context) error {
	cfg := &r.cfg
	if cfg.Agents <= 0 {
		return nil
	}
	hc := cfg.Hub
	hc.RunID, hc.Log = r.runID, r.logf
	h, err := hub.New(hc)
	if err != nil {
		return err
	}
	r.defer_(func() { h.Close() }) // after the agents are stopped (deferred later): bye to each
	what := "the token in"
	if h.WroteToken() {
		what = "a new token written to"
	}
	r.logf("agents: waiting for %d agent(s) on %s (%s %s); on each host run:\n  %s", cfg.Agents, h.URL(), what, hc.TokenFile, h.JoinCommand())
	timeout := cfg.AgentTimeout
	if timeout <= 0 {
		timeout = DefaultAgentTimeout
	}
	r.members, err = h.Wait(ctx, cfg.Agents, timeout)
	return err
}

// place sends each role its plan and waits for it to be ready: the target
// and the fault proxy (whose address becomes the fleet's URL), then the
// loadgen shares.
func (r *run) place(ctx context.Context) error {
	cfg := &r.cfg
	// Agents live until the run's end, whatever ctx does (an interrupted
	// run still collects its loadgens' reports); they are stopped and
	// waited for on return.
	agentCtx, killAgents := context.WithCancel(context.Background())
	r.defer_(killAgents)
	r.co = &cluster.Coordinator{}
	r.watch = watchAgents(r.co, r.progress, cfg.Fleet.Clients, cfg.OnAgentLoss, r.logf)
	local := &cluster.Local{Exe: cfg.Exe, Logs: prefixWriter(r.logw, ""), Nice: agentNice(r.sz, runtime.NumCPU()),
		GoMaxProcs: goMaxProcs(r.sz, runtime.NumCPU())}
	co := r.co
	r.defer_(func() {
		co.StopAll(10 * time.Second)
		for _, a := range co.Agents() {
			if a.Proc != nil {
				a.Proc.WaitOrKill(5 * time.Second)
			}
		}
	})
	pl := &placer{co: co, local: local, agentCtx: agentCtx, runID: r.runID, allow: r.cfg.AllowRemote}
	if len(r.members) > 0 {
		co.PerMember = true
		var err error
		if pl.target, pl.loadgens, err = assignRoles(r.members, cfg.external(), r.logf); err != nil {
			return err
		}
		if err := checkMemberPorts(cfg.Fleet.Clients, pl.loadgens); err != nil {
			return err
		}
	}
	r.fleet = cfg.Fleet
	if !cfg.external() {
		if err := r.placeTarget(ctx, pl); err != nil {
			return err
		}
	}
	r.fleet.SourceIPs = r.sz.SourceIPs

	loadgens, err := pl.placeLoadgens(ctx, r.fleet, r.sz.LoadgenProcs, cfg.external())
	if err != nil {
		return err
	}
	if pl.remote() {
		r.logf("loadgen: %d client(s) in %d share(s) on %d agent(s), policy %s", r.fleet.Clients, len(loadgens), len(pl.loadgens), r.fleet.Policy)
	} else {
		r.logf("loadgen: %d client(s) in %d agent process(es), %d source address(es), policy %s",
			r.fleet.Clients, len(loadgens), max(1, len(r.sz.SourceIPs)), r.fleet.Policy)
	}
	return nil
}

// placeTarget places the target and, when the run has one, the fault
// proxy in front of it; the fleet's URL is theirs.
func (r *run) placeTarget(ctx context.Context, pl *placer) error {
	cfg := &r.cfg
	ta, err := pl.place("target", agent.Plan{RunID: r.runID, Role: agent.RoleTarget,
		Target: &agent.TargetPlan{Config: r.tcfg, Procs: r.sz.TargetProcs}}, pl.target)
	if err == nil {
		err = r.co.WaitReady(ctx, ta)
	}
	if err != nil {
		return fmt.Errorf("starting the target: %w", err)
	}
	r.tgt = cluster.NewRemoteTarget(ta)
	r.logf("target: %d process(es) on %s, backlog %d, accept rate %s", r.sz.TargetProcs, ta.Ready.Addr, r.tcfg.Backlog, rateText(r.totalRate))
	r.fleet.URL = ta.Ready.URL
	if cfg.Proxy || cfg.Schedule.HasProxyEvents() {
		cfg.Proxy = true // recorded in summary.json's config
		if r.proxy, err = pl.startProxy(ctx, ta.Ready.Addr, r.fleet, r.logf); err != nil {
			return err
		}
		r.fleet.URL = r.proxy.URLFor(r.fleet.URL)
	}
	if r.tcfg.Server.WithDefaults().TLS && r.tcfg.CertFile == "" {
		r.fleet.TLSInsecure = true // the target's certificate is self-signed, made at its start
	}
	if r.fleet.Ramp == 0 && r.totalRate > 0 {
		r.fleet.Ramp = 0.9 * r.totalRate
	}
	warnRamp(r.logw, r.fleet, cfg.Schedule, cfg.Duration)
	return nil
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
		fmt.Fprintf(w, "warning: ramping %d clients at %.0f/s takes %s, past the first chaos event at %s; raise the ramp rate or schedule the event later\n",
			fleet.Clients, fleet.Ramp, ramp.Round(100*time.Millisecond), plan[0].At)
	}
}

func rateText(r float64) string {
	if r <= 0 {
		return "unlimited"
	}
	return fmt.Sprintf("%g/s", r)
}

// shareRates divides the target's rates, the whole group's, among its
// procs processes (SO_REUSEPORT spreads connections evenly): the accept
// rate and an admission ramp's floor (whose default, a tenth of the
// rate, is then each process's own). A share below the least rate a
// process paces is refused.
func shareRates(c *target.Config, procs int) error {
	if c.AcceptRate <= 0 {
		return nil
	}
	for _, f := range []struct {
		field string
		v     *float64
	}{{"Server.AcceptRate", &c.AcceptRate}, {"Server.AdmitFloor", &c.AdmitFloor}} {
		total := *f.v
		if total <= 0 {
			continue
		}
		*f.v = total / float64(procs)
		if *f.v < spec.MinAcceptRate {
			return spec.Errorf(f.field, "%g shared by %d target processes is %g each, below the least one paces (%g/s)",
				total, procs, *f.v, spec.MinAcceptRate)
		}
	}
	return nil
}

// AgentNice is the niceness of a run's agent processes on this machine
// when they outnumber its cores more than crowded to one. Under fair
// scheduling the coordinator then gets one share among all of them: at a
// million clients (112 agents on two cores) about 2 % of a core, and its
// progress and results fell six minutes behind the agents', so that the
// run's end came before their last results did. At nice 10 each agent
// weighs a tenth of the coordinator.
const (
	AgentNice = 10
	crowded   = 4
)

// goMaxProcs is Local.GoMaxProcs for a run of sz on cores: one for a
// role of more than one process and at least as many as the cores, whose
// processes then share the cores as separate programs (a million clients'
// first connect cost each end a quarter less, docs/performance.md "One
// core a process"); the runtime's own choice otherwise.
func goMaxProcs(sz Sizing, cores int) map[agent.Role]int {
	m := map[agent.Role]int{}
	for role, n := range map[agent.Role]int{agent.RoleLoadgen: sz.LoadgenProcs, agent.RoleTarget: sz.TargetProcs} {
		if n > 1 && n >= cores {
			m[role] = 1
		}
	}
	return m
}

// agentNice is Local.Nice for a run of sz on cores.
func agentNice(sz Sizing, cores int) int {
	if sz.LoadgenProcs+sz.TargetProcs > crowded*cores {
		return AgentNice
	}
	return 0
}
