// Package metrics exposes a run's live counters as Prometheus metrics, for
// watching a long run in Grafana (`--metrics-addr`).
//
// The figures are the same aggregated loadgen.Stats that feed the progress
// line: storm sums the workers' progress messages (or polls the in-process
// fleet) and hands each new total to Exporter.Observe. A scrape reads the
// latest total; nothing is counted twice and nothing on the clients' hot
// path knows about Prometheus.
//
//	workers ──progress──> storm.Progress ──Observe──> Exporter ──> /metrics
//	chaos.Supervisor ──Current, Events───────────────────┘
//	results.Summary (at the end) ──SetSummary────────────┘
//
// Every metric is named stampede_*; see Names for the list. The exporter
// has its own registry, never the client library's global default.
package metrics

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/stampede-dev/stampede/connerr"
	"github.com/stampede-dev/stampede/loadgen"
	"github.com/stampede-dev/stampede/results"
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
	// chaos.Supervisor.Current does.
	Current func() string
	// Events, if set, returns the chaos events finished so far (with their
	// Ready instants), as chaos.Supervisor.Events does: their recovery is
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
	sum  *results.Summary
}

// New returns an exporter with its own registry, holding the fleet's
// counters at zero.
func New(cfg Config) *Exporter {
	e := &Exporter{reg: prometheus.NewRegistry(), cfg: cfg}
	e.reg.MustRegister(collector{e})
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
func (e *Exporter) SetSummary(sum *results.Summary) {
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

var (
	descRunInfo   = prometheus.NewDesc(NameRunInfo, "Always 1; labels name the run and its backoff policy.", []string{"run_id", "policy"}, nil)
	descElapsed   = prometheus.NewDesc(NameElapsed, "Seconds from the fleet's start to the latest counters.", nil, nil)
	descClients   = prometheus.NewDesc(NameClients, "Size of the fleet: the target of connected clients.", nil, nil)
	descConnected = prometheus.NewDesc(NameConnected, "Clients connected now.", nil, nil)
	descInflight  = prometheus.NewDesc(NameInflight, "Connection attempts connecting or handshaking now.", nil, nil)
	descAttempts  = prometheus.NewDesc(NameAttempts, "Connection attempts started.", nil, nil)
	descSuccesses = prometheus.NewDesc(NameSuccesses, "Connection attempts that ended connected.", nil, nil)
	descFailures  = prometheus.NewDesc(NameFailures, "Failed connection attempts by connect-error class.", []string{"class"}, nil)
	descDisconn   = prometheus.NewDesc(NameDisconnects, "Established connections that ended, by class.", []string{"class"}, nil)
	descStopped   = prometheus.NewDesc(NameStopped, "Clients that gave up, by the class of their last failure.", []string{"class"}, nil)
	descSent      = prometheus.NewDesc(NameMsgSent, "Messages sent by the clients.", nil, nil)
	descAcked     = prometheus.NewDesc(NameMsgAcked, "Messages the server ACKed (stampede mode).", nil, nil)
	descDelivered = prometheus.NewDesc(NameMsgDelivered, "Messages delivered to the clients (echo mode: echoed back).", nil, nil)
	descHerd      = prometheus.NewDesc(NameHerd, "Connection attempts per 100 ms over the latest progress interval.", nil, nil)
	descChaos     = prometheus.NewDesc(NameChaosEvent, "1 while a chaos event is under way; the label is its schedule text.", []string{"event"}, nil)
	descR         = [4]*prometheus.Desc{
		prometheus.NewDesc(NameR50, "Seconds from the target being ready until 50% of the clients connected before the event were back.", []string{"event", "spec"}, nil),
		prometheus.NewDesc(NameR90, "Seconds from the target being ready until 90% of the clients connected before the event were back.", []string{"event", "spec"}, nil),
		prometheus.NewDesc(NameR99, "Seconds from the target being ready until 99% of the clients connected before the event were back.", []string{"event", "spec"}, nil),
		prometheus.NewDesc(NameR100, "Seconds from the target being ready until every client connected before the event was back.", []string{"event", "spec"}, nil),
	}
	descHerdPeak = prometheus.NewDesc(NameHerdPeak, "Most connection attempts in one 100 ms window of the event's recovery (known at the end of the run).", []string{"event", "spec"}, nil)
)

// collector renders the exporter's state at each scrape: the counters are
// totals kept by the loadgen, so they are emitted as constant metrics
// rather than mirrored into client-side counters.
type collector struct{ e *Exporter }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRunInfo, descElapsed, descClients, descConnected, descInflight,
		descAttempts, descSuccesses, descFailures, descDisconn, descStopped, descSent, descAcked, descDelivered,
		descHerd, descChaos, descR[0], descR[1], descR[2], descR[3], descHerdPeak} {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	e := c.e
	e.mu.Lock()
	cfg, at, s, herd, sum := e.cfg, e.at, e.st, e.herd, e.sum
	var live []estimate
	if sum == nil && cfg.Events != nil {
		live = e.hist.recovery(cfg.Events(), at)
	}
	e.mu.Unlock()

	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge(descRunInfo, 1, cfg.RunID, cfg.Policy)
	gauge(descElapsed, at.Seconds())
	gauge(descClients, float64(cfg.Clients))
	gauge(descConnected, float64(s.Connected))
	gauge(descInflight, float64(s.Inflight))
	counter(descAttempts, s.Attempts)
	counter(descSuccesses, s.Successes)
	for _, cl := range connerr.Classes() {
		counter(descFailures, s.Failures[cl], cl.String())
		counter(descDisconn, s.Disconnects[cl], cl.String())
		gauge(descStopped, float64(s.Stopped[cl]), cl.String())
	}
	counter(descSent, s.MsgSent)
	counter(descAcked, s.MsgAcked)
	counter(descDelivered, s.MsgDelivered)
	gauge(descHerd, herd)
	if cfg.Current != nil {
		if ev := cfg.Current(); ev != "" {
			gauge(descChaos, 1, ev)
		}
	}
	if sum != nil {
		for _, r := range sum.Recovery {
			spec := ""
			if r.Event >= 0 && r.Event < len(sum.Events) {
				spec = sum.Events[r.Event].Spec
			}
			ev := strconv.Itoa(r.Event)
			for i, v := range []*float64{r.R50S, r.R90S, r.R99S, r.R100S} {
				if v != nil {
					gauge(descR[i], *v, ev, spec)
				}
			}
			if r.HerdPeakPer100ms != nil {
				gauge(descHerdPeak, float64(*r.HerdPeakPer100ms), ev, spec)
			}
		}
		return
	}
	for _, l := range live {
		ev := strconv.Itoa(l.event)
		for i, v := range l.r {
			if v >= 0 {
				gauge(descR[i], v.Seconds(), ev, l.spec)
			}
		}
	}
}
