package metrics

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/push"

	"github.com/stampede-dev/stampede/internal/redact"
	"github.com/stampede-dev/stampede/spec"
)

// Job is the Pushgateway job a run's metrics are pushed under.
const Job = "stampede"

// Push sends the exporter's metrics, as a scrape would see them now, to
// the Prometheus Pushgateway at gatewayURL (e.g. http://127.0.0.1:9091):
// job "stampede", grouped by run_id, replacing what that run pushed
// before. A run pushes once, at its end, after SetSummary: a batch job's
// final figures outlive its own /metrics endpoint there (--pushgateway).
// The error names the flag.
func (e *Exporter) Push(ctx context.Context, gatewayURL string) error {
	e.mu.Lock()
	runID := e.cfg.RunID
	e.mu.Unlock()
	if runID == "" {
		return spec.Errorf("Metrics.Pushgateway", "the run has no id to group its metrics by")
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collector{e: e, pushed: true})
	err := push.New(gatewayURL, Job).Gatherer(reg).Grouping("run_id", runID).PushContext(ctx)
	if err != nil {
		// The client's error quotes the whole URL, user info and query.
		return spec.Errorf("Metrics.Pushgateway", "%s", redact.Policy{Values: redact.Values(nil, nil, gatewayURL)}.Text(err.Error()))
	}
	return nil
}
