package storm

import (
	"fmt"
	"io"

	"github.com/stampede-dev/stampede/chaos"
	"github.com/stampede-dev/stampede/loadgen"
	"github.com/stampede-dev/stampede/metrics"
	"github.com/stampede-dev/stampede/results"
)

// runMetrics is a run's Prometheus exporter and its HTTP server
// (--metrics-addr), fed by the run's Progress. A nil *runMetrics (no
// --metrics-addr) does nothing, so Run and RunFleet need no branches.
type runMetrics struct {
	exp *metrics.Exporter
	srv *metrics.Server
	cfg metrics.Config
}

// startMetrics serves metrics on addr ("" for none) from what p observes,
// and says where on log.
func startMetrics(addr string, p *Progress, fleet loadgen.Config, log io.Writer) (*runMetrics, error) {
	if addr == "" {
		return nil, nil
	}
	cfg := metrics.Config{Clients: fleet.Clients, Policy: fleet.Policy.String()}
	exp := metrics.New(cfg)
	srv, err := metrics.Listen(addr, exp)
	if err != nil {
		return nil, err
	}
	p.Observe = exp.Observe
	fmt.Fprintf(log, "metrics: %s\n", srv.URL())
	return &runMetrics{exp: exp, srv: srv, cfg: cfg}, nil
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

// setSummary exports the run's exact recovery figures.
func (m *runMetrics) setSummary(sum *results.Summary) {
	if m != nil {
		m.exp.SetSummary(sum)
	}
}

// close stops the server.
func (m *runMetrics) close() {
	if m != nil {
		m.srv.Close()
	}
}
