package storm

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/stampede-dev/stampede/chaos/supervisor"
	"github.com/stampede-dev/stampede/hoststat"
	"github.com/stampede-dev/stampede/internal/redact"
	"github.com/stampede-dev/stampede/loadgen"
	"github.com/stampede-dev/stampede/metrics"
	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/results/summary"
	"github.com/stampede-dev/stampede/spec"
)

// runMetrics is a run's metrics exporter, its HTTP server (--metrics-addr),
// its OTLP export (--otlp-endpoint) and where its final figures go
// (--pushgateway, --metrics-linger), fed by the run's Progress. A nil
// *runMetrics (none of these) does nothing, so Run and RunFleet need no
// branches.
type runMetrics struct {
	exp  *metrics.Exporter
	srv  *metrics.Server // nil without an address
	otlp *metrics.OTLP   // nil without an OTLP endpoint, or once closed
	cfg  metrics.Config
	mc   metricsConfig
	ctx  context.Context
	log  io.Writer
}

// metricsConfig is where a run's metrics go: the fields of Config and
// FleetConfig of the same names.
type metricsConfig struct {
	Addr        string
	Linger      time.Duration
	Pushgateway string
	OTLP        metrics.OTLPConfig
}

// pushTimeout bounds the push at the end of a run.
const pushTimeout = 10 * time.Second

// startMetrics serves metrics on mc.Addr ("" for none) from what p
// observes, and says where on log.
func startMetrics(ctx context.Context, mc metricsConfig, p *Progress, fleet loadgen.Config, log io.Writer) (*runMetrics, error) {
	if mc.Addr == "" && mc.Pushgateway == "" && mc.OTLP.Endpoint == "" {
		return nil, nil
	}
	cfg := metrics.Config{Clients: fleet.Clients, Policy: fleet.Policy.String()}
	m := &runMetrics{exp: metrics.New(cfg), cfg: cfg, mc: mc, ctx: ctx, log: log}
	if mc.Addr != "" {
		var err error
		if m.srv, err = metrics.Listen(mc.Addr, m.exp); err != nil {
			return nil, err
		}
		fmt.Fprintf(log, "metrics: %s\n", m.srv.URL())
	}
	p.Observe = m.exp.Observe
	return m, nil
}

// setRunID labels the metrics with the run's id, and starts the OTLP
// export, whose resource carries the id.
func (m *runMetrics) setRunID(id string) error {
	if m == nil {
		return nil
	}
	m.exp.SetRun(id, m.cfg.Policy)
	if m.mc.OTLP.Endpoint == "" {
		return nil
	}
	host, _ := os.Hostname()
	res := metrics.OTLPResource{RunID: id, Role: results.RoleCoordinator, Host: host, Agent: results.RoleCoordinator + "@" + host}
	var err error
	if m.otlp, err = metrics.StartOTLP(m.ctx, m.exp, m.mc.OTLP, res, m.log); err != nil {
		return err
	}
	every := m.mc.OTLP.Interval
	if every == 0 {
		every = metrics.DefaultOTLPInterval
	}
	fmt.Fprintf(m.log, "metrics: OTLP to %s every %s\n", redact.URL(m.mc.OTLP.Endpoint), every)
	return nil
}

// setResources exports the latest resources of this machine's processes
// per role, as the sampler last read them.
func (m *runMetrics) setResources(s *hoststat.Sampler) {
	if m == nil {
		return
	}
	host, _ := os.Hostname()
	m.exp.SetResources(func() []metrics.Resource {
		var out []metrics.Resource
		for _, r := range s.Latest() {
			out = append(out, metrics.Resource{Role: r.Role, Host: host, Processes: r.Processes,
				RSSBytes: r.RSSBytes, FDs: r.FDs, CPUSeconds: r.CPUSeconds})
		}
		return out
	})
}

// setChaos exports the supervisor's event under way and finished events.
func (m *runMetrics) setChaos(sup *supervisor.Supervisor) {
	if m != nil {
		m.exp.SetChaos(sup.Current, sup.Events)
	}
}

// setSummary exports the run's exact recovery figures, and pushes them
// to the Pushgateway if there is one. The push is tried even when the
// run was interrupted, since the figures so far are final.
func (m *runMetrics) setSummary(sum *summary.Summary) error {
	if m == nil {
		return nil
	}
	m.exp.SetSummary(sum)
	otlpErr := m.closeOTLP()
	if m.mc.Pushgateway == "" {
		return otlpErr
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(m.ctx), pushTimeout)
	defer cancel()
	if err := m.exp.Push(ctx, m.mc.Pushgateway); err != nil {
		return err
	}
	fmt.Fprintf(m.log, "metrics: pushed to %s\n", redact.URL(m.mc.Pushgateway))
	return otlpErr
}

// closeOTLP sends the final figures over OTLP and stops the export.
func (m *runMetrics) closeOTLP() error {
	if m.otlp == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(m.ctx), pushTimeout)
	defer cancel()
	err := m.otlp.Close(ctx)
	m.otlp = nil
	if err != nil {
		return spec.Errorf("Metrics.OTLP.Endpoint", "the final export: %w", err)
	}
	fmt.Fprintf(m.log, "metrics: final figures sent over OTLP\n")
	return nil
}

// close stops the server, after serving the final figures for Linger
// (cut short when the run's context ends).
func (m *runMetrics) close() {
	if m == nil {
		return
	}
	_ = m.closeOTLP() // a run that ended before its summary
	if m.srv == nil {
		return
	}
	if m.mc.Linger > 0 && m.ctx.Err() == nil {
		fmt.Fprintf(m.log, "metrics: serving the final figures on %s for %s more\n", m.srv.URL(), m.mc.Linger)
		t := time.NewTimer(m.mc.Linger)
		select {
		case <-t.C:
		case <-m.ctx.Done():
			t.Stop()
		}
	}
	m.srv.Close()
}
