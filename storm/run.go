// Package storm runs a whole reconnect storm on one machine: a target
// process group, a loadgen fleet in worker processes, and a chaos schedule
// applied by a supervisor, all on one time axis, ending in one results
// folder. `stampede run` is one storm; `stampede bench` one per policy.
//
//	storm.Run ─┬─ target.Group (SO_REUSEPORT processes) <── chaos.Supervisor (schedule)
//	           ├─ cluster.Local (loadgen worker processes) ──> merged results.Report
//	           ├─ hoststat.Sampler (gopsutil: loadgen and target processes) ──> resources.csv
//	           ├─ hoststat.KernelSampler (herd counters once a second) ──> kernel.csv
//	           └─ kernel counters before/after ──> results.Summarize ──> summary.json (+ SLOs)
//	              ──> timeline.csv, *.hlog ──> report.Render ──> report.html
package storm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
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

// Config describes one storm. The zero value of a field means its default.
type Config struct {
	// Target configures every target process. Its Addr empty means a free
	// loopback port outside the ephemeral range; AcceptRate is the whole
	// group's rate, shared by its processes.
	Target target.Config `json:"target"`
	// TargetProcs is the size of the target's SO_REUSEPORT group; zero
	// sizes it for the fleet (PerProcess connections each).
	TargetProcs int `json:"target_procs"`
	// Fleet is the loadgen fleet; its URL is set to the target's. A zero
	// Fleet.Ramp with a target AcceptRate ramps at 90 % of that rate, so
	// the first connects measure the fleet, not an overflow of the target.
	Fleet loadgen.Config `json:"fleet"`
	// LoadgenProcs is the number of loadgen worker processes; zero sizes it
	// for the fleet.
	LoadgenProcs int `json:"loadgen_procs"`
	// Schedule is the chaos schedule; nil means none.
	Schedule *chaos.Schedule `json:"-"`
	// ScheduleText is the schedule as given, recorded in the results.
	ScheduleText string `json:"chaos"`
	// Proxy relays the fleet through the fault proxy, a group of `stampede
	// proxy` processes in front of the target (--proxy). A schedule with
	// proxy events turns it on by itself.
	Proxy bool `json:"proxy"`
	// Duration is the run's length from the start barrier. Required.
	Duration time.Duration `json:"duration"`
	// Out is the results folder; it is created. Empty writes nothing.
	Out string `json:"-"`
	// Exe is the stampede binary that target and worker processes run;
	// empty means this process's own executable.
	Exe string `json:"-"`
	// Log receives progress lines and the child processes' stderr; nil
	// means none.
	Log io.Writer `json:"-"`
	// ProgressInterval is the time between plain progress lines, when Log
	// is not a terminal (a terminal gets a status line redrawn every
	// second); zero means DefaultProgressInterval.
	ProgressInterval time.Duration `json:"-"`
	// MetricsAddr, if set, is the host:port on which Prometheus metrics
	// are served at /metrics while the run goes (--metrics-addr).
	MetricsAddr string `json:"-"`
	// SLO are the gates the run is judged by (--slo): evaluated on the
	// summary, recorded in summary.json "slo" and "pass"; none passes.
	SLO []results.SLO `json:"slo,omitempty"`
}

// Validate reports the first unusable field, named as its flag.
func (c *Config) Validate() error {
	if c.Duration <= 0 {
		return fmt.Errorf("--duration must be positive, got %s", c.Duration)
	}
	if c.Fleet.Clients < 1 {
		return fmt.Errorf("--clients must be at least 1, got %d", c.Fleet.Clients)
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
	// each worker; its URL is the target's, known only once it runs.
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

// Result is what a storm produced.
type Result struct {
	// Summary is the run's summary.json.
	Summary *results.Summary
	// Report is the merged record of every loadgen process.
	Report *results.Report
	// Sizing is how the run was spread over processes.
	Sizing Sizing
}

// Run carries out one storm and writes its results folder.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	exe := cfg.Exe
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("finding the stampede binary: %w", err)
		}
	}
	progress := &Progress{W: cfg.Log, Interval: cfg.ProgressInterval, Clients: cfg.Fleet.Clients}
	defer progress.Stop()
	logw := progress.Log() // chaos and child lines, kept off the status line
	mx, err := startMetrics(cfg.MetricsAddr, progress, cfg.Fleet, logw)
	if err != nil {
		return nil, err
	}
	defer mx.close()

	// Size the run for this machine's limits.
	tcfg := cfg.Target
	addr := tcfg.Addr
	if addr == "" {
		addr = "127.0.0.1:0" // a free port is chosen when the target starts
	}
	dst, err := netip.ParseAddrPort(addr)
	if err != nil {
		return nil, fmt.Errorf("--addr %q: %w", tcfg.Addr, err)
	}
	targetProcs, err := messageProtocol(&cfg, &tcfg)
	if err != nil {
		return nil, err
	}
	sz, err := Size(cfg.Fleet.Clients, cfg.LoadgenProcs, targetProcs, cfg.Fleet.SourceIPs, dst.Addr())
	if err != nil {
		return nil, err
	}
	totalRate := tcfg.AcceptRate
	if totalRate > 0 {
		tcfg.AcceptRate = totalRate / float64(sz.TargetProcs)
	}

	// The target.
	var group *target.Group
	startTarget := func(addr string) error {
		tcfg.Addr = addr
		group, err = target.StartGroup(ctx, target.GroupConfig{
			Exe: exe, Args: []string{"target"}, Procs: sz.TargetProcs, Config: tcfg, Stderr: prefixWriter(logw, "target"),
		})
		return err
	}
	if tcfg.Addr == "" {
		err = onFreePort(startTarget)
	} else {
		err = startTarget(tcfg.Addr)
	}
	if err != nil {
		return nil, fmt.Errorf("starting the target: %w", err)
	}
	defer group.Close()
	fmt.Fprintf(logw, "target: %d process(es) on %s, backlog %d, accept rate %s\n",
		sz.TargetProcs, group.Addr(), tcfg.Backlog, rateText(totalRate))

	fleet := cfg.Fleet
	fleet.URL = group.URL()
	fleet.SourceIPs = sz.SourceIPs
	var proxy *proxy.Group
	if cfg.Proxy || cfg.Schedule.HasProxyEvents() {
		cfg.Proxy = true // recorded in summary.json's config
		if proxy, err = startProxy(ctx, exe, group.Addr(), fleet, logw); err != nil {
			return nil, err
		}
		defer proxy.Close()
		fleet.URL = proxy.URLFor(fleet.URL)
	}
	if tcfg.TLS && tcfg.CertFile == "" {
		fleet.TLSInsecure = true // the target's certificate is self-signed, made at its start
	}
	if fleet.Ramp == 0 && totalRate > 0 {
		fleet.Ramp = 0.9 * totalRate
	}
	warnRamp(logw, fleet, cfg.Schedule, cfg.Duration)
	local := &cluster.Local{Exe: cfg.Exe, Fleet: fleet, Procs: sz.LoadgenProcs, Logs: prefixWriter(logw, "")}
	fmt.Fprintf(logw, "loadgen: %d client(s) in %d worker process(es), %d source address(es), policy %s\n",
		fleet.Clients, sz.LoadgenProcs, max(1, len(sz.SourceIPs)), fleet.Policy)

	// Resources and kernel counters.
	sampler := hoststat.NewSampler(time.Second, func() map[string][]int32 {
		m := map[string][]int32{results.RoleLoadgen: local.PIDs()}
		for _, p := range group.Procs() {
			if !p.Exited() {
				m[results.RoleTarget] = append(m[results.RoleTarget], int32(p.PID))
			}
		}
		if proxy != nil {
			m[roleProxy] = proxy.PIDs()
		}
		return m
	})
	sampler.CountTCP(urlPort(group.URL()), urlPort(fleet.URL)) // resources.csv tcp_* columns
	sampleCtx, stopSampling := context.WithCancel(ctx)
	defer stopSampling()
	go sampler.Run(sampleCtx)
	kernel := hoststat.NewKernelSampler(time.Second) // kernel.csv
	go kernel.Run(sampleCtx)
	kernelBefore, kerr := hoststat.KernelSnapshot()

	// Chaos, aligned on the fleet's start barrier.
	gt := chaos.NewGroupTarget(group, tcfg.Backlog, tcfg.AcceptRate)
	sup := &chaos.Supervisor{Schedule: cfg.Schedule, Target: gt, Log: func(f string, a ...any) { fmt.Fprintf(logw, f+"\n", a...) }}
	if proxy != nil {
		sup.Proxy = proxy // never a typed nil: the supervisor checks Proxy == nil
	}
	supCtx, stopChaos := context.WithCancel(ctx)
	defer stopChaos()
	supDone := make(chan error, 1)
	progress.Event = sup.Current
	mx.setChaos(sup)
	var start time.Time
	local.OnStart = func(at time.Time) {
		start = at
		go func() { supDone <- sup.Run(supCtx, at, cfg.Duration) }()
		progress.Start(at)
	}
	local.OnProgress = progress.Update

	runID := results.NewRunID(time.Now(), fleet.Seed)
	mx.setRunID(runID)
	report, err := local.Run(ctx, runID, cfg.Duration)
	progress.Stop()
	stopChaos()
	var chaosErr error
	if !start.IsZero() {
		chaosErr = <-supDone
		if errors.Is(chaosErr, context.Canceled) {
			chaosErr = nil
		}
	}
	if err != nil {
		return nil, err
	}
	kernelAfter, kerr2 := hoststat.KernelSnapshot()
	sampler.Sample()
	kernel.Sample()
	stopSampling()

	in := results.Input{
		RunID:     runID,
		Seed:      fleet.Seed,
		Config:    runConfig{Config: cfg, Sizing: sz, Target: tcfg},
		Report:    report,
		Events:    sup.Events(),
		End:       cfg.Duration,
		Resources: sampler.Stats(),
	}
	if kerr == nil && kerr2 == nil {
		in.Kernel = hoststat.Delta(kernelBefore, kernelAfter)
	}
	loadgen.Tally(report) // lost and duplicated messages, over the whole fleet
	sum := results.Summarize(in)
	sum.SetSLO(results.EvalSLOs(cfg.SLO, sum))
	mx.setSummary(sum)
	res := &Result{Summary: sum, Report: report, Sizing: sz}
	if cfg.Out != "" {
		if err := WriteResults(cfg.Out, res, sampler, kernel, start); err != nil {
			return res, err
		}
	}
	if chaosErr != nil {
		return res, fmt.Errorf("chaos schedule: %w", chaosErr)
	}
	return res, nil
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
