package storm

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/stampede-dev/stampede/chaos"
	"github.com/stampede-dev/stampede/loadgen"
	"github.com/stampede-dev/stampede/metrics"
	"github.com/stampede-dev/stampede/results"
)

// runMetrics is a run's Prometheus exporter, its HTTP server
// (--metrics-addr) and where its final figures go (--pushgateway,
// --metrics-linger), fed by the run's Progress. A nil *runMetrics (neither
// flag) does nothing, so Run and RunFleet need no branches.
type runMetrics struct {
	exp *metrics.Exporter
	srv *metrics.Server // nil without an address
	cfg metrics.Config
	mc  metricsConfig
	ctx context.Context
	log io.Writer
}

// metricsConfig is where a run's metrics go: the fields of Config and
// FleetConfig of the same names.
type metricsConfig struct {
	Addr        string
	Linger      time.Duration
	Pushgateway string
}

// pushTimeout bounds the push at the end of a run.
const pushTimeout = 10 * time.Second

// startMetrics serves metrics on mc.Addr ("" for none) from what p
// observes, and says where on log.
func startMetrics(ctx context.Context, mc metricsConfig, p *Progress, fleet loadgen.Config, log io.Writer) (*runMetrics, error) {
	if mc.Addr == "" && mc.Pushgateway == "" {
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

// setRunID labels the metrics with the run's id.
func (m *runMetrics) setRunID(id string) {
	if m != nil {
		m.exp.SetRun(id, m.cfg.Policy)
	}
}

// setChaos exports the supervisor's event under way and finished events.
func (m *runMetrics) setChaos(sup *chaos.Supervisor) {
	if m != nil {
		m.exp.SetChaos(sup.Current, sup.Events)
	}
}

// setSummary exports the run's exact recovery figures, and pushes them
// to the Pushgateway if there is one. The push is tried even when the
// run was interrupted, since the figures so far are final.
func (m *runMetrics) setSummary(sum *results.Summary) error {
	if m == nil {
		return nil
	}
	m.exp.SetSummary(sum)
	if m.mc.Pushgateway == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(m.ctx), pushTimeout)
	defer cancel()
	if err := m.exp.Push(ctx, m.mc.Pushgateway); err != nil {
		return err
	}
	fmt.Fprintf(m.log, "metrics: pushed to %s\n", m.mc.Pushgateway)
	return nil
}

// close stops the server, after serving the final figures for Linger
// (cut short when the run's context ends).
func (m *runMetrics) close() {
	if m == nil || m.srv == nil {
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
