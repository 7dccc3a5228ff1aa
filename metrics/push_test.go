package metrics

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stampede-dev/stampede/loadgen"
	"github.com/stampede-dev/stampede/metrics/metricstest"
	"github.com/stampede-dev/stampede/results/summary"
)

// TestPush pushes a run's final figures to a real Pushgateway and reads
// them back from the gateway's own /metrics: grouped by job and run_id,
// the recovery gauges and counters as a scrape of the run saw them. A
// second run's push sits beside the first, not over it.
func TestPush(t *testing.T) {
	gw := metricstest.Pushgateway(t)
	spec := "at 1s restart abrupt down=1s"
	push := func(runID string, r99 float64) {
		peak := uint32(31)
		e := New(Config{RunID: runID, Policy: "exp:initial=1s", Clients: 50})
		e.Observe(3e9, loadgen.Stats{Clients: 50, Connected: 50, Attempts: 120, Successes: 100}, 0)
		e.SetSummary(&summary.Summary{
			Events:   []summary.EventSummary{{Kind: "restart", Mode: "abrupt", Spec: spec}},
			Recovery: []summary.Recovery{{Event: 0, ConnectedBefore: 50, R99S: &r99, HerdPeakPer100ms: &peak}},
		})
		if err := e.Push(context.Background(), gw); err != nil {
			t.Fatal(err)
		}
	}
	push("run-1", 0.97)
	push("run-2", 1.5)
	got := metricstest.Samples(t, gw+"/metrics", "stampede_")
	for _, tc := range []struct {
		name   string
		labels []string
		want   string
	}{
		{NameR99, []string{`job="stampede"`, `run_id="run-1"`, `event="0"`, `spec="` + spec + `"`}, "0.97"},
		{NameR99, []string{`job="stampede"`, `run_id="run-2"`, `event="0"`}, "1.5"},
		{NameHerdPeak, []string{`run_id="run-1"`, `event="0"`}, "31"},
		{NameRunInfo, []string{`job="stampede"`, `run_id="run-1"`, `policy="exp:initial=1s"`}, "1"},
		{NameAttempts, []string{`run_id="run-1"`}, "120"},
		{NameClients, []string{`run_id="run-2"`}, "50"},
	} {
		if v := metricstest.Value(got, tc.name, tc.labels...); v != tc.want {
			t.Errorf("%s%v = %q, want %q", tc.name, tc.labels, v, tc.want)
		}
	}
}

// TestPushError names the flag: nothing listens at the gateway's address.
func TestPushError(t *testing.T) {
	e := New(Config{RunID: "run-1"})
	err := e.Push(context.Background(), "http://127.0.0.1:1")
	if err == nil || !strings.HasPrefix(err.Error(), "Metrics.Pushgateway: ") {
		t.Fatalf("Push = %v, want an error naming --pushgateway", err)
	}
}

// TestPushErrorHidesSecrets: a push that fails shows neither the
// gateway URL's password nor its secret query value, though the client's
// error quotes the URL whole.
func TestPushErrorHidesSecrets(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "no", http.StatusForbidden)
	}))
	defer srv.Close()
	e := New(Config{RunID: "run-1"})
	u := strings.Replace(srv.URL, "http://", "http://gwuser:gw-pass-77@", 1) + "/?token=tk-secret-88"
	err := e.Push(context.Background(), u)
	if err == nil || strings.Contains(err.Error(), "gw-pass-77") || strings.Contains(err.Error(), "tk-secret-88") {
		t.Fatalf("Push = %v, want an error without the URL's secrets", err)
	}
}
