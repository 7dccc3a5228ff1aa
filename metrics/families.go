package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stampede-dev/stampede/connerr"
)

// family is one metric as both exports name it: the Prometheus name and
// labels of /metrics and the Pushgateway, and the OpenTelemetry name,
// unit and attributes of OTLP (docs/metrics.md "OpenTelemetry"). Both
// render the same figures (Exporter.figures), so they never disagree.
type family struct {
	// prom is the Prometheus name, labels its label names.
	prom   string
	help   string
	labels []string
	// otel is the OpenTelemetry name, unit its UCUM unit ("s", "By",
	// "{connection}"), attrs its attribute keys in the order of labels.
	otel  string
	unit  string
	attrs []string
	// counter is true for a cumulative, monotonic sum (a Prometheus
	// counter); else a gauge.
	counter bool
	// integer is true for a count (an OTLP int data point).
	integer bool
	desc    *prometheus.Desc
}

func fam(prom, otel, unit string, counter, integer bool, help string, labels ...string) *family {
	f := &family{prom: prom, help: help, otel: otel, unit: unit, counter: counter, integer: integer}
	for _, l := range labels {
		name, attr, _ := cutLabel(l)
		f.labels = append(f.labels, name)
		f.attrs = append(f.attrs, attr)
	}
	f.desc = prometheus.NewDesc(prom, help, f.labels, nil)
	return f
}

// cutLabel splits "class=error.type" into the Prometheus label and the
// OpenTelemetry attribute key.
func cutLabel(l string) (string, string, bool) {
	for i := 0; i < len(l); i++ {
		if l[i] == '=' {
			return l[:i], l[i+1:], true
		}
	}
	return l, l, false
}

// The OpenTelemetry attribute keys of the labels.
const (
	lClass = "class=error.type"
	lEvent = "event=stampede.event.index"
	lSpec  = "spec=stampede.event.spec"
	lChaos = "event=stampede.chaos.event"
	lRole  = "role=stampede.role"
	lHost  = "host=stampede.host"
)

// Metric names of the process resources, per role and host.
const (
	NameRSS       = "stampede_process_resident_memory_bytes"
	NameCPU       = "stampede_process_cpu_seconds_total"
	NameFDs       = "stampede_process_open_fds"
	NameProcesses = "stampede_processes"
)

var (
	descRunInfo = prometheus.NewDesc(NameRunInfo, "Always 1; labels name the run and its backoff policy.", []string{"run_id", "policy"}, nil)

	fElapsed   = fam(NameElapsed, "stampede.run.elapsed", "s", false, false, "Seconds from the fleet's start to the latest counters.")
	fClients   = fam(NameClients, "stampede.fleet.size", "{client}", false, true, "Size of the fleet: the target of connected clients.")
	fConnected = fam(NameConnected, "stampede.connections.active", "{connection}", false, true, "Clients connected now.")
	fInflight  = fam(NameInflight, "stampede.connect.inflight", "{attempt}", false, true, "Connection attempts connecting or handshaking now.")
	fAttempts  = fam(NameAttempts, "stampede.connect.attempts", "{attempt}", true, true, "Connection attempts started.")
	fSuccesses = fam(NameSuccesses, "stampede.connect.successes", "{attempt}", true, true, "Connection attempts that ended connected.")
	fFailures  = fam(NameFailures, "stampede.connect.failures", "{attempt}", true, true, "Failed connection attempts by connect-error class.", lClass)
	fDisconn   = fam(NameDisconnects, "stampede.disconnects", "{connection}", true, true, "Established connections that ended, by class.", lClass)
	fStopped   = fam(NameStopped, "stampede.clients.stopped", "{client}", false, true, "Clients that gave up, by the class of their last failure.", lClass)
	fSent      = fam(NameMsgSent, "stampede.messages.sent", "{message}", true, true, "Messages sent by the clients.")
	fAcked     = fam(NameMsgAcked, "stampede.messages.acked", "{message}", true, true, "Messages the server ACKed (stampede mode).")
	fDelivered = fam(NameMsgDelivered, "stampede.messages.delivered", "{message}", true, true, "Messages delivered to the clients (echo mode: echoed back).")
	fHerd      = fam(NameHerd, "stampede.herd.attempts", "{attempt}", false, false, "Connection attempts per 100 ms over the latest progress interval.")
	fChaos     = fam(NameChaosEvent, "stampede.chaos.active", "1", false, true, "1 while a chaos event is under way; the label is its schedule text.", lChaos)
	fR         = [4]*family{
		fam(NameR50, "stampede.recovery.r50", "s", false, false, "Seconds from the target being ready until 50% of the clients connected before the event were back.", lEvent, lSpec),
		fam(NameR90, "stampede.recovery.r90", "s", false, false, "Seconds from the target being ready until 90% of the clients connected before the event were back.", lEvent, lSpec),
		fam(NameR99, "stampede.recovery.r99", "s", false, false, "Seconds from the target being ready until 99% of the clients connected before the event were back.", lEvent, lSpec),
		fam(NameR100, "stampede.recovery.r100", "s", false, false, "Seconds from the target being ready until every client connected before the event was back.", lEvent, lSpec),
	}
	fHerdPeak  = fam(NameHerdPeak, "stampede.recovery.herd_peak", "{attempt}", false, true, "Most connection attempts in one 100 ms window of the event's recovery (known at the end of the run).", lEvent, lSpec)
	fRSS       = fam(NameRSS, "process.memory.usage", "By", false, true, "Resident memory of a role's processes on a host, summed.", lRole, lHost)
	fCPU       = fam(NameCPU, "process.cpu.time", "s", true, false, "CPU time (user and system) of a role's processes on a host, every process seen.", lRole, lHost)
	fFDs       = fam(NameFDs, "process.unix.file_descriptor.count", "{file_descriptor}", false, true, "Open files of a role's processes on a host, summed.", lRole, lHost)
	fProcesses = fam(NameProcesses, "stampede.processes", "{process}", false, true, "Processes of a role alive on a host.", lRole, lHost)

	// families is every family, in the order of Names.
	families = []*family{fElapsed, fClients, fConnected, fInflight, fAttempts, fSuccesses, fFailures, fDisconn,
		fStopped, fSent, fAcked, fDelivered, fHerd, fChaos, fR[0], fR[1], fR[2], fR[3], fHerdPeak,
		fRSS, fCPU, fFDs, fProcesses}
)

// Names returns the Prometheus name and the OpenTelemetry name of every
// metric both export (stampede_run_info, whose labels OTLP carries as
// resource attributes, is Prometheus's alone).
func Names() [][2]string {
	out := make([][2]string, len(families))
	for i, f := range families {
		out[i] = [2]string{f.prom, f.otel}
	}
	return out
}

// Resource is one role's processes on one host at the latest sample.
type Resource struct {
	Role, Host string
	// Processes alive; RSSBytes and FDs summed over them.
	Processes int
	RSSBytes  uint64
	FDs       int64
	// CPUSeconds is cumulative over every process of the role seen.
	CPUSeconds float64
}

// figure is one value of one family, with its label values.
type figure struct {
	fam    *family
	v      float64
	labels []string
}

// figures renders the exporter's state: what a scrape, a push and an OTLP
// export all send. The counters are totals kept by the loadgen, so they
// are emitted as they are rather than mirrored into counters of our own.
func (e *Exporter) figures() []figure {
	e.mu.Lock()
	cfg, at, s, herd, sum, res := e.cfg, e.at, e.st, e.herd, e.sum, e.resources
	var live []estimate
	if sum == nil && cfg.Events != nil {
		live = e.hist.recovery(cfg.Events(), at)
	}
	e.mu.Unlock()

	var out []figure
	add := func(f *family, v float64, labels ...string) { out = append(out, figure{f, v, labels}) }
	add(fElapsed, at.Seconds())
	add(fClients, float64(cfg.Clients))
	add(fConnected, float64(s.Connected))
	add(fInflight, float64(s.Inflight))
	add(fAttempts, float64(s.Attempts))
	add(fSuccesses, float64(s.Successes))
	for _, cl := range connerr.Classes() {
		add(fFailures, float64(s.Failures[cl]), cl.String())
		add(fDisconn, float64(s.Disconnects[cl]), cl.String())
		add(fStopped, float64(s.Stopped[cl]), cl.String())
	}
	add(fSent, float64(s.MsgSent))
	add(fAcked, float64(s.MsgAcked))
	add(fDelivered, float64(s.MsgDelivered))
	add(fHerd, herd)
	if cfg.Current != nil {
		if ev := cfg.Current(); ev != "" {
			add(fChaos, 1, ev)
		}
	}
	if res != nil {
		for _, r := range res() {
			add(fRSS, float64(r.RSSBytes), r.Role, r.Host)
			add(fCPU, r.CPUSeconds, r.Role, r.Host)
			add(fFDs, float64(r.FDs), r.Role, r.Host)
			add(fProcesses, float64(r.Processes), r.Role, r.Host)
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
					add(fR[i], *v, ev, spec)
				}
			}
			if r.HerdPeakPer100ms != nil {
				add(fHerdPeak, float64(*r.HerdPeakPer100ms), ev, spec)
			}
		}
		return out
	}
	for _, l := range live {
		ev := strconv.Itoa(l.event)
		for i, v := range l.r {
			if v >= 0 {
				add(fR[i], v.Seconds(), ev, l.spec)
			}
		}
	}
	return out
}
