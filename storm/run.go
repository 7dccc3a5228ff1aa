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
//	           ├─ hoststat.Sampler (gopsutil: every agent's processes) ──> resources.csv
//	           ├─ hoststat.KernelSampler (herd counters once a second) ──> kernel.csv
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
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/stampede-dev/stampede/chaos"
	"github.com/stampede-dev/stampede/cluster"
	"github.com/stampede-dev/stampede/hoststat"
	"github.com/stampede-dev/stampede/loadgen"
	"github.com/stampede-dev/stampede/proxy"
	"github.com/stampede-dev/stampede/report"
	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/target"
)

// Config describes one run. The zero value of a field means its default.
type Config struct {
	// Target configures every target process. Its Addr empty means a free
	// loopback port outside the ephemeral range; AcceptRate is the whole
	// group's rate, shared by its processes. Unused with Fleet.URL.
	Target target.Config `json:"target"`
	// TargetProcs is the size of the target's SO_REUSEPORT group; zero
	// sizes it for the fleet (PerProcess connections each).
	TargetProcs int `json:"target_procs"`
	// Fleet is the loadgen fleet. An empty URL aims it at the run's own
	// target (the bundled server, restarted by the schedule); a URL aims
	// it at any server, and outages are then detected from the clients'
	// side (Detect). A zero Fleet.Ramp with a target AcceptRate ramps at
	// 90 % of that rate, so the first connects measure the fleet, not an
	// overflow of the target.
	Fleet loadgen.Config `json:"fleet"`
	// LoadgenProcs is the number of loadgen agent processes; zero sizes it
	// for the fleet. With Fleet.URL, 1 runs the fleet in this process.
	LoadgenProcs int `json:"loadgen_procs"`
	// Detect tunes outage detection from the clients' side (Fleet.URL).
	Detect results.DetectConfig `json:"detect"`
	// Schedule is the chaos schedule; nil means none. Not with Fleet.URL.
	Schedule *chaos.Schedule `json:"-"`
	// ScheduleText is the schedule as given, recorded in the results.
	ScheduleText string `json:"chaos"`
	// Proxy relays the fleet through the fault proxy group in front of the
	// target (--proxy). A schedule with proxy events turns it on by
	// itself.
	Proxy bool `json:"proxy"`
	// Duration is the run's length from the start barrier. Required.
	Duration time.Duration `json:"duration"`
	// Out is the results folder; it is created. Empty writes nothing.
	Out string `json:"-"`
	// Exe is the stampede binary that agent processes run; empty means
	// this process's own executable.
	Exe string `json:"-"`
	// Log receives progress lines and the agents' stderr; nil means none.
	Log io.Writer `json:"-"`
	// ProgressInterval is the time between plain progress lines, when Log
	// is not a terminal (a terminal gets a status line redrawn every
	// second); zero means DefaultProgressInterval.
	ProgressInterval time.Duration `json:"-"`
	// MetricsAddr, if set, is the host:port on which Prometheus metrics
	// are served at /metrics while the run goes (--metrics-addr).
	MetricsAddr string `json:"-"`
	// MetricsLinger keeps serving MetricsAddr this long after the run,
	// with the final figures, so a scrape sees them (--metrics-linger);
	// zero closes it when the run ends.
	MetricsLinger time.Duration `json:"-"`
	// Pushgateway, if set, is the URL of a Prometheus Pushgateway that the
	// final metrics are pushed to when the run ends, job "stampede" grouped
	// by run_id (--pushgateway).
	Pushgateway string `json:"-"`
	// SLO are the gates the run is judged by (--slo): evaluated on the
	// summary, recorded in summary.json "slo" and "pass"; none passes.
	SLO []results.SLO `json:"slo,omitempty"`
}

// external reports whether the fleet is aimed at a server the run does not
// own.
func (c *Config) external() bool { return c.Fleet.URL != "" }

// Validate reports the first unusable field, named as its flag. Run calls
// it once, before any process starts.
func (c *Config) Validate() error {
	if c.Duration <= 0 {
		return fmt.Errorf("--duration must be positive, got %s", c.Duration)
	}
	if c.Fleet.Clients < 1 {
		return fmt.Errorf("--clients must be at least 1, got %d", c.Fleet.Clients)
	}
	if c.external() {
		if c.Schedule != nil || c.Proxy {
			return errors.New("--chaos and --proxy need the run's own target; a fleet against --url detects outages itself")
		}
		if err := c.Detect.Validate(); err != nil {
			return err
		}
		return c.Fleet.Validate()
	}
	if c.Schedule != nil {
		if err := c.Schedule.Check(c.Duration); err != nil {
			return fmt.Errorf("--chaos: %w", err)
		}
	}
	t := c.Target
	if t.Store == "" && (t.NoDedupe || t.Retention != 0 || c.Fleet.Mode == loadgen.ModeStampede) {
		t.Store = "file:///" // Run gives it an embedded store in the results folder
	}
	if err := t.Validate(); err != nil {
		return err
	}
	// The fleet is checked here, before any process starts, not first in
	// each agent; its URL is the target's, known only once it runs.
	f := c.Fleet
	f.URL = "ws://127.0.0.1:1/"
	if t.TLS || t.CertFile != "" {
		f.URL = "wss://127.0.0.1:1/"
	}
	if t.Store != "" && (f.Mode == "" || f.Mode == loadgen.ModeNone) {
		f.Mode = loadgen.ModeStampede // as Run will make it
	}
	return f.Validate()
}

// Result is what a run produced.
type Result struct {
	// Summary is the run's summary.json.
	Summary *results.Summary
	// Report is the merged record of every loadgen agent.
	Report *results.Report
	// Sizing is how the run was spread over processes.
	Sizing Sizing
}

// ErrIncomplete is returned (wrapped) with a Result when a process of the
// run exited when nothing scheduled it or an agent was lost: the folder is
// written, summary.json says "complete": false.
var ErrIncomplete = errors.New("the run is incomplete")

// ErrInterrupted is returned (wrapped) with a Result when ctx ended before
// the run did (Ctrl-C): the fleet was stopped at once and the folder
// written with "interrupted": true.
var ErrInterrupted = errors.New("the run was interrupted")

// Run carries out one run and writes its results folder: place the roles,
// start barrier, progress, chaos, collect, summarise, gate. It returns the
// Result with ErrIncomplete or ErrInterrupted when the run did not go as
// planned but its figures were still written.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	progress := &Progress{W: cfg.Log, Interval: cfg.ProgressInterval, Clients: cfg.Fleet.Clients}
	defer progress.Stop()
	logw := progress.Log() // chaos and agent lines, kept off the status line
	logf := func(f string, a ...any) { fmt.Fprintf(logw, f+"\n", a...) }
	mx, err := startMetrics(ctx, metricsConfig{cfg.MetricsAddr, cfg.MetricsLinger, cfg.Pushgateway}, progress, cfg.Fleet, logw)
	if err != nil {
		return nil, err
	}
	defer mx.close()

	// Size the run for this machine's limits.
	tcfg := cfg.Target
	sz, err := size(&cfg, &tcfg)
	if err != nil {
		return nil, err
	}
	totalRate := tcfg.AcceptRate
	if totalRate > 0 {
		tcfg.AcceptRate = totalRate / float64(sz.TargetProcs)
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
	local := &cluster.Local{Exe: cfg.Exe, Logs: prefixWriter(logw, "")}
	defer func() {
		co.StopAll(10 * time.Second)
		for _, a := range co.Agents() {
			if a.Proc != nil {
				a.Proc.WaitOrKill(5 * time.Second)
			}
		}
	}()
	runID := results.NewRunID(time.Now(), cfg.Fleet.Seed)
	mx.setRunID(runID)

	// Place the target and the proxy; the fleet's URL is theirs.
	fleet := cfg.Fleet
	var tgt *cluster.RemoteTarget
	var proxy *cluster.RemoteProxy
	if !cfg.external() {
		ta, err := local.Launch(agentCtx, co, "target", cluster.Plan{RunID: runID, Role: cluster.RoleTarget,
			Target: &cluster.TargetPlan{Config: tcfg, Procs: sz.TargetProcs}})
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
			if proxy, err = startProxy(ctx, agentCtx, co, local, runID, ta.Ready.Addr, fleet, logf); err != nil {
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
	loadgens, err := placeLoadgens(ctx, agentCtx, co, local, runID, fleet, sz.LoadgenProcs, cfg.external())
	if err != nil {
		return nil, err
	}
	logf("loadgen: %d client(s) in %d agent process(es), %d source address(es), policy %s",
		fleet.Clients, len(loadgens), max(1, len(sz.SourceIPs)), fleet.Policy)

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

	// Summarise and gate.
	length := cfg.Duration
	if interrupted {
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
	complete := len(crashes) == 0 && len(lost) == 0
	mu.Unlock()
	// Each loadgen computes its clients' share of every event's recovery;
	// the coordinator never holds the fleet's transitions.
	results.SortEvents(events)
	partials, err := co.Recover(context.Background(), events, length)
	if err != nil {
		logf("recovery: %v", err)
		complete = false
	}
	in := results.Input{
		RunID:     runID,
		Seed:      fleet.Seed,
		Config:    runConfig{Config: cfg, Sizing: sz, Target: tcfg},
		Report:    report,
		Events:    events,
		Partials:  partials,
		End:       length,
		Resources: sampler.Stats(),
	}
	in.Kernel, _ = kernel.Total() // kernel.csv's last row: the summary agrees with it

	loadgen.Tally(report) // lost and duplicated messages, over the whole fleet
	sum := results.Summarize(in)
	sum.Complete, sum.Interrupted = complete, interrupted
	sum.Agents = agentSummaries(co, lost)
	sum.SetSLO(results.EvalSLOs(cfg.SLO, sum))
	pushErr := mx.setSummary(sum)
	res := &Result{Summary: sum, Report: report, Sizing: sz}
	if cfg.Out != "" {
		if err := WriteResults(cfg.Out, res, sampler, kernel, at); err != nil {
			return res, err
		}
	}
	switch {
	case interrupted:
		return res, ErrInterrupted
	case chaosErr != nil:
		return res, fmt.Errorf("chaos schedule: %w", chaosErr)
	case !complete:
		return res, ErrIncomplete
	}
	return res, pushErr
}

// size chooses the run's processes and source addresses, and makes the
// message mode and the target's store agree.
func size(cfg *Config, tcfg *target.Config) (Sizing, error) {
	if cfg.external() {
		u, err := url.Parse(cfg.Fleet.URL)
		if err != nil {
			return Sizing{}, fmt.Errorf("--url: %w", err)
		}
		dst, _ := netip.ParseAddr(u.Hostname()) // a name: not known to be loopback
		return Size(cfg.Fleet.Clients, cfg.LoadgenProcs, 1, cfg.Fleet.SourceIPs, dst)
	}
	addr := tcfg.Addr
	if addr == "" {
		addr = "127.0.0.1:0" // a free port is chosen when the target starts
	}
	dst, err := netip.ParseAddrPort(addr)
	if err != nil {
		return Sizing{}, fmt.Errorf("--addr %q: %w", tcfg.Addr, err)
	}
	targetProcs, err := messageProtocol(cfg, tcfg)
	if err != nil {
		return Sizing{}, err
	}
	return Size(cfg.Fleet.Clients, cfg.LoadgenProcs, targetProcs, cfg.Fleet.SourceIPs, dst.Addr())
}

// placeLoadgens places the fleet's shares, one agent each, and waits until
// all are ready. A fleet against someone else's server in one process runs
// in this process, over an in-memory transport with the same messages.
func placeLoadgens(ctx, agentCtx context.Context, co *cluster.Coordinator, local *cluster.Local, runID string, fleet loadgen.Config, procs int, external bool) ([]*cluster.Agent, error) {
	var agents []*cluster.Agent
	for i, share := range cluster.Split(fleet, procs) {
		name := fmt.Sprintf("loadgen %d", i)
		plan := cluster.Plan{RunID: runID, Role: cluster.RoleLoadgen, Loadgen: &share}
		var a *cluster.Agent
		var err error
		if external && procs == 1 {
			a, err = cluster.InProcess(agentCtx, co, name, plan)
		} else {
			a, err = local.Launch(agentCtx, co, name, plan)
		}
		if err != nil {
			return nil, err
		}
		agents = append(agents, a)
	}
	if err := co.WaitReady(ctx, agents...); err != nil {
		return nil, err
	}
	return agents, nil
}

// startProxy places the fault proxy in front of the target at upstream: a
// group of as many processes as the fleet needs (each relayed connection
// takes two open files) on a free port outside the ephemeral range. Its
// upstream sockets use the fleet's source addresses (towards another port
// than the fleet's, so they share no ephemeral ports), and its draws the
// fleet's seed.
func startProxy(ctx, agentCtx context.Context, co *cluster.Coordinator, local *cluster.Local, runID, upstream string, fleet loadgen.Config, logf func(string, ...any)) (*cluster.RemoteProxy, error) {
	procs := proxy.ProcsFor(fleet.Clients)
	a, err := local.Launch(agentCtx, co, roleProxy, cluster.Plan{RunID: runID, Role: cluster.RoleProxy, Proxy: &cluster.ProxyPlan{
		Config:    proxy.Config{Upstream: upstream, Seed: fleet.Seed},
		Procs:     procs,
		SourceIPs: fleet.SourceIPs,
	}})
	if err == nil {
		err = co.WaitReady(ctx, a)
	}
	if err != nil {
		return nil, fmt.Errorf("starting the fault proxy: %w", err)
	}
	logf("proxy: %d process(es) on %s in front of the target", procs, a.Ready.Addr)
	return cluster.NewRemoteProxy(a, logf), nil
}

// roleProxy names the fault proxy's processes in resources.csv and
// summary.json "resources".
const roleProxy = results.RoleProxy

// rolePIDs returns the processes of every agent by role, for resource
// sampling: a loadgen agent is its own process (this one, when it runs in
// it), a target or proxy agent reports its group's; and this process, the
// coordinator.
func rolePIDs(co *cluster.Coordinator) map[string][]int32 {
	m := map[string][]int32{results.RoleCoordinator: {int32(os.Getpid())}}
	for _, a := range co.Agents() {
		role := string(a.Plan.Role)
		for _, pid := range a.PIDs() {
			m[role] = append(m[role], int32(pid))
		}
	}
	return m
}

// agentSummaries lists the run's agents for summary.json.
func agentSummaries(co *cluster.Coordinator, lost []error) []results.AgentSummary {
	var out []results.AgentSummary
	for _, a := range co.Agents() {
		s := results.AgentSummary{Name: a.Name, Role: string(a.Plan.Role), Host: a.Ready.Host, PID: a.Ready.PID,
			MaxMessageBytes: a.MaxMessageBytes(), Lost: a.Lost()}
		if a.Plan.Loadgen != nil {
			s.Clients = a.Plan.Loadgen.Clients
		}
		out = append(out, s)
	}
	return out
}

// messageProtocol makes the fleet's message mode and the target's store
// agree: the stampede mode needs a target that speaks the protocol, so it
// gets an embedded store in the results folder (kept across the target's
// restarts) unless one is given; a store with no message mode (or "none")
// implies the stampede mode. A target with a store runs as one process (the store's
// room state lives in it), so the fleet must fit one process.
func messageProtocol(cfg *Config, tcfg *target.Config) (targetProcs int, err error) {
	wantsStore := tcfg.Store != "" || tcfg.NoDedupe || tcfg.Retention != 0
	if wantsStore && (cfg.Fleet.Mode == "" || cfg.Fleet.Mode == loadgen.ModeNone) {
		cfg.Fleet.Mode = loadgen.ModeStampede
	}
	if cfg.Fleet.Mode != loadgen.ModeStampede {
		if wantsStore {
			return 0, fmt.Errorf("--store, --no-dedupe and --retention are for the message protocol; use --mode stampede (got --mode %s)", cfg.Fleet.Mode)
		}
		return cfg.TargetProcs, nil
	}
	if tcfg.Store == "" {
		dir := cfg.Out
		if dir == "" {
			if dir, err = os.MkdirTemp("", "stampede-store-"); err != nil {
				return 0, err
			}
		}
		abs, err := filepath.Abs(filepath.Join(dir, "store"))
		if err != nil {
			return 0, err
		}
		tcfg.Store = "file://" + abs
	}
	if cfg.TargetProcs > 1 {
		return 0, fmt.Errorf("--procs %d: a target with a message store runs as one process", cfg.TargetProcs)
	}
	if cfg.Fleet.Clients > PerProcess {
		return 0, fmt.Errorf("--clients %d: the message protocol's target runs as one process, which holds at most %d connections", cfg.Fleet.Clients, PerProcess)
	}
	return 1, nil
}

// runConfig is what summary.json records as the run's config.
type runConfig struct {
	Config
	Sizing Sizing `json:"sizing"`
	// Target is the per-process target configuration actually used.
	Target target.Config `json:"target"`
}

// WriteResults writes the results folder of a run: summary.json,
// timeline.csv, the HdrHistogram logs (connect, ttr, message_rtt, resume
// .hlog), resources.csv and kernel.csv when their samplers are given, and
// report.html rendered from those files alone (as `stampede report DIR`
// renders it again). start is the run's start, the time axis of the CSVs.
func WriteResults(dir string, res *Result, sampler *hoststat.Sampler, kernel *hoststat.KernelSampler, start time.Time) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	if err := res.Summary.WriteJSON(dir); err != nil {
		return err
	}
	write := func(name string, w func(io.Writer) error) error {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		err = w(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("writing %s: %w", filepath.Join(dir, name), err)
		}
		return nil
	}
	sum := res.Summary
	if err := write(results.TimelineFile, func(w io.Writer) error {
		return results.WriteTimelineCSV(w, results.TimelineRows(res.Report.Timeline, sum.Events, sum.DurationS))
	}); err != nil {
		return err
	}
	length := time.Duration(sum.DurationS * float64(time.Second))
	if err := results.WriteHistogramLogs(dir, res.Report, length); err != nil {
		return err
	}
	if sampler != nil {
		if err := write(results.ResourcesFile, func(w io.Writer) error {
			return hoststat.WriteResourcesCSV(w, start, sampler.Samples())
		}); err != nil {
			return err
		}
	}
	if kernel != nil {
		if err := write(results.KernelFile, func(w io.Writer) error { return kernel.WriteCSV(w, start) }); err != nil {
			return err
		}
	}
	return report.Render(dir)
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
