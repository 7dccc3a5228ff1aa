// Package metrics exposes a run's live counters as Prometheus metrics, for
// watching a long run in Grafana (`--metrics-addr`), and pushes a run's
// final figures to a Prometheus Pushgateway (`--pushgateway`).
//
// The figures are the same aggregated loadgen.Stats that feed the progress
// line: storm sums the workers' progress messages (or polls the in-process
// fleet) and hands each new total to Exporter.Observe. A scrape reads the
// latest total; nothing is counted twice and nothing on the clients' hot
// path knows about Prometheus.
//
//	workers ──progress──> storm.Progress ──Observe──> Exporter ──> /metrics
//	supervisor.Supervisor ──Current, Events───────────────────┘
//	summary.Summary (at the end) ──SetSummary────────────┘
//	                                  Exporter ──Push──> Pushgateway (--pushgateway)
//
// The endpoint closes when the run ends; the final figures outlive it on
// a Pushgateway (Push), or on the endpoint kept up for a while after the
// run (storm's MetricsLinger).
//
// Every metric is named stampede_*; see Names for the list. The exporter
// has its own registry, never the client library's global default.
package metrics

import (
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/stampede-dev/stampede/loadgen"
	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/results/summary"
)

// Config describes what an Exporter labels and where it finds the chaos
// events. The zero value exports the fleet's counters alone.
type Config struct {
	// RunID and Policy label stampede_run_info, so the runs of a bench
	// can be told apart on one dashboard.
	RunID  string
	Policy string
	// Clients is the fleet's size, exported as stampede_clients.
	Clients int
	// Current, if set, names the chaos event under way ("" for none), as
	// supervisor.Supervisor.Current does.
	Current func() string
	// Events, if set, returns the chaos events finished so far (with their
	// Ready instants), as supervisor.Supervisor.Events does: their recovery is
	// estimated live from the connected count until SetSummary gives the
	// exact figures.
	Events func() []results.Event
}

// Exporter holds a run's latest aggregated counters and renders them as
// Prometheus metrics. It is safe for concurrent use.
type Exporter struct {
	reg  *prometheus.Registry
	cfg  Config
	mu   sync.Mutex
	at   time.Duration
	st   loadgen.Stats
	herd float64
	hist history
	sum  *summary.Summary
	// resources, if set, returns the latest process resources per role
	// and host.
	resources func() []Resource
}

// New returns an exporter with its own registry, holding the fleet's
// counters at zero.
func New(cfg Config) *Exporter {
	e := &Exporter{reg: prometheus.NewRegistry(), cfg: cfg}
	e.reg.MustRegister(collector{e: e})
	return e
}

// Registry returns the exporter's own registry (not the global default).
func (e *Exporter) Registry() *prometheus.Registry { return e.reg }

// Handler serves the registry in the Prometheus exposition formats.
func (e *Exporter) Handler() http.Handler {
	return promhttp.HandlerFor(e.reg, promhttp.HandlerOpts{})
}

// SetChaos sets where the exporter finds the chaos event under way and the
// finished events, once the supervisor exists; either may be nil.
func (e *Exporter) SetChaos(current func() string, events func() []results.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.cfg.Current, e.cfg.Events = current, events
}

// SetResources sets where the exporter finds the latest resources of
// the run's processes per role and host, once they are sampled; nil for
// none.
func (e *Exporter) SetResources(latest func() []Resource) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.resources = latest
}

// SetRun sets the labels of stampede_run_info, once the run has an id.
func (e *Exporter) SetRun(runID, policy string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.cfg.RunID, e.cfg.Policy = runID, policy
}

// Observe records the fleet's aggregated counters at offset at from the
// run's start, and the fleet's current attempt rate per 100 ms.
func (e *Exporter) Observe(at time.Duration, s loadgen.Stats, attemptsPer100ms float64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.at, e.st, e.herd = at, s, attemptsPer100ms
	e.hist.add(at, s.Connected)
}

// SetSummary replaces the live recovery estimates with the run's exact
// figures, once the run is summarised.
func (e *Exporter) SetSummary(sum *summary.Summary) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.sum = sum
}

// Metric names, for dashboards and tests.
const (
	NameRunInfo      = "stampede_run_info"
	NameElapsed      = "stampede_elapsed_seconds"
	NameClients      = "stampede_clients"
	NameConnected    = "stampede_connected_clients"
	NameInflight     = "stampede_inflight_attempts"
	NameAttempts     = "stampede_connect_attempts_total"
	NameSuccesses    = "stampede_connect_successes_total"
	NameFailures     = "stampede_connect_failures_total"
	NameDisconnects  = "stampede_disconnects_total"
	NameStopped      = "stampede_stopped_clients"
	NameMsgSent      = "stampede_messages_sent_total"
	NameMsgAcked     = "stampede_messages_acked_total"
	NameMsgDelivered = "stampede_messages_delivered_total"
	NameHerd         = "stampede_herd_attempts_per_100ms"
	NameChaosEvent   = "stampede_chaos_event"
	NameR50          = "stampede_recovery_r50_seconds"
	NameR90          = "stampede_recovery_r90_seconds"
	NameR99          = "stampede_recovery_r99_seconds"
	NameR100         = "stampede_recovery_r100_seconds"
	NameHerdPeak     = "stampede_recovery_herd_peak_per_100ms"
)

// descRunInfoPushed is stampede_run_info as pushed: the Pushgateway adds
// run_id, the grouping key, to every metric of the group.
var descRunInfoPushed = prometheus.NewDesc(NameRunInfo, "Always 1; labels name the run and its backoff policy.", []string{"policy"}, nil)

// collector renders the exporter's state at each scrape: the counters are
// totals kept by the loadgen, so they are emitted as constant metrics
// rather than mirrored into client-side counters. A collector for a push
// leaves run_id, the push's grouping key, to the Pushgateway.
type collector struct {
	e      *Exporter
	pushed bool
}

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	info := descRunInfo
	if c.pushed {
		info = descRunInfoPushed
	}
	ch <- info
	for _, f := range families {
		ch <- f.desc
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	e := c.e
	e.mu.Lock()
	runID, policy := e.cfg.RunID, e.cfg.Policy
	e.mu.Unlock()
	if c.pushed {
		ch <- prometheus.MustNewConstMetric(descRunInfoPushed, prometheus.GaugeValue, 1, policy)
	} else {
		ch <- prometheus.MustNewConstMetric(descRunInfo, prometheus.GaugeValue, 1, runID, policy)
	}
	for _, f := range e.figures() {
		vt := prometheus.GaugeValue
		if f.fam.counter {
			vt = prometheus.CounterValue
		}
		ch <- prometheus.MustNewConstMetric(f.fam.desc, vt, f.v, f.labels...)
	}
}
