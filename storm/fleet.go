package storm

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"net/url"
	"os"
	"time"

	"github.com/stampede-dev/stampede/cluster"
	"github.com/stampede-dev/stampede/hoststat"
	"github.com/stampede-dev/stampede/loadgen"
	"github.com/stampede-dev/stampede/results"
)

// FleetConfig describes a fleet run against any WebSocket server, the
// bundled target or someone else's (`stampede loadgen`). Nothing tells the
// fleet when the server goes away, so outages are detected from the
// clients' side.
type FleetConfig struct {
	// Fleet is the whole fleet.
	Fleet loadgen.Config `json:"fleet"`
	// Procs is the number of loadgen processes: 1 runs the fleet in this
	// process, more start worker processes; zero sizes it for the fleet.
	Procs int `json:"procs"`
	// Duration is the run's length. Required.
	Duration time.Duration `json:"duration"`
	// Detect tunes outage detection.
	Detect results.DetectConfig `json:"detect"`
	// Out is the results folder; empty writes nothing.
	Out string `json:"-"`
	// Exe is the stampede binary for worker processes; empty means this
	// process's own executable.
	Exe string `json:"-"`
	// Log receives progress lines and the workers' stderr; nil means none.
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

// pollInterval is how often RunFleet reads an in-process fleet's counters:
// the metrics' attempts per 100 ms are then per 100 ms indeed.
const pollInterval = 100 * time.Millisecond

// RunFleet runs the fleet for cfg.Duration (or until ctx is done), detects
// outages, summarises and writes the results folder.
func RunFleet(ctx context.Context, cfg FleetConfig) (*Result, error) {
	if cfg.Duration <= 0 {
		return nil, fmt.Errorf("--duration must be positive, got %s", cfg.Duration)
	}
	if err := cfg.Detect.Validate(); err != nil {
		return nil, err
	}
	progress := &Progress{W: cfg.Log, Interval: cfg.ProgressInterval, Clients: cfg.Fleet.Clients}
	defer progress.Stop()
	logw := progress.Log() // worker lines, kept off the status line
	u, err := url.Parse(cfg.Fleet.URL)
	if err != nil {
		return nil, fmt.Errorf("--url: %w", err)
	}
	dst, _ := netip.ParseAddr(u.Hostname()) // a name: not known to be loopback
	sz, err := Size(cfg.Fleet.Clients, cfg.Procs, 1, cfg.Fleet.SourceIPs, dst)
	if err != nil {
		return nil, err
	}
	fleet := cfg.Fleet
	fleet.SourceIPs = sz.SourceIPs
	if err := fleet.Validate(); err != nil {
		return nil, err
	}
	runID := results.NewRunID(time.Now(), fleet.Seed)
	mx, err := startMetrics(cfg.MetricsAddr, progress, fleet, logw)
	if err != nil {
		return nil, err
	}
	defer mx.close()
	mx.setRunID(runID)

	var pids func() []int32
	var report *results.Report
	progressDone := make(chan struct{})
	var start time.Time
	sampler := hoststat.NewSampler(time.Second, func() map[string][]int32 {
		return map[string][]int32{results.RoleLoadgen: pids()}
	})
	sampler.CountTCP(urlPort(fleet.URL), urlPort(fleet.URL)) // resources.csv tcp_* columns
	sampleCtx, stopSampling := context.WithCancel(ctx)
	defer stopSampling()
	kernel := hoststat.NewKernelSampler(time.Second) // kernel.csv
	go kernel.Run(sampleCtx)

	if sz.LoadgenProcs == 1 {
		pids = func() []int32 { return []int32{int32(os.Getpid())} }
		start = time.Now()
		fleet.Start = start
		f, err := loadgen.New(fleet)
		if err != nil {
			return nil, err
		}
		go sampler.Run(sampleCtx)
		progress.Start(start)
		go func() {
			t := time.NewTicker(pollInterval)
			defer t.Stop()
			for {
				select {
				case <-progressDone:
					return
				case now := <-t.C:
					progress.Update(0, cluster.Progress{At: now, Stats: f.Stats()})
				}
			}
		}()
		runCtx, cancel := context.WithTimeout(ctx, cfg.Duration)
		report, err = f.Run(runCtx)
		cancel()
		close(progressDone)
		progress.Stop()
		if err != nil {
			return nil, err
		}
	} else {
		local := &cluster.Local{Exe: cfg.Exe, Fleet: fleet, Procs: sz.LoadgenProcs, Logs: prefixWriter(logw, "")}
		pids = local.PIDs
		local.OnStart = func(at time.Time) {
			start = at
			progress.Start(at)
		}
		local.OnProgress = progress.Update
		go sampler.Run(sampleCtx)
		report, err = local.Run(ctx, runID, cfg.Duration)
		progress.Stop()
		if err != nil {
			return nil, err
		}
	}
	sampler.Sample()
	kernel.Sample()
	stopSampling()

	loadgen.Tally(report) // lost and duplicated messages, over the whole fleet
	sum := results.Summarize(results.Input{
		RunID:     runID,
		Seed:      fleet.Seed,
		Config:    FleetConfig{Fleet: fleet, Procs: sz.LoadgenProcs, Duration: cfg.Duration, Detect: cfg.Detect, SLO: cfg.SLO},
		Report:    report,
		Events:    results.DetectOutages(report, cfg.Detect),
		End:       cfg.Duration,
		Resources: sampler.Stats(),
	})
	sum.SetSLO(results.EvalSLOs(cfg.SLO, sum))
	mx.setSummary(sum)
	res := &Result{Summary: sum, Report: report, Sizing: sz}
	if cfg.Out != "" {
		if err := WriteResults(cfg.Out, res, sampler, kernel, start); err != nil {
			return res, err
		}
	}
	return res, nil
}
