package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/connerr"
	"github.com/stampede-dev/stampede/loadgen"
	"github.com/stampede-dev/stampede/metrics/metricstest"
	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/results/summary"
)

// scrape GETs a /metrics url and returns each sample as "name{labels}" ->
// value.
func scrape(t *testing.T, url string) map[string]string {
	t.Helper()
	return metricstest.Samples(t, url, "")
}

// check compares the scraped samples named in want, and that the samples
// named in absent are not there.
func check(t *testing.T, step string, got, want map[string]string, absent ...string) {
	t.Helper()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s = %q, want %q", step, k, got[k], v)
		}
	}
	for _, k := range absent {
		if v, ok := got[k]; ok {
			t.Errorf("%s: %s = %q, want no such sample", step, k, v)
		}
	}
}

// TestScrape feeds an exporter a restart's counters and scrapes its
// metrics over real HTTP: fleet counters, the chaos event under way, the
// live recovery estimate as it becomes known, then the summary's exact
// figures.
func TestScrape(t *testing.T) {
	event := ""
	var events []results.Event
	e := New(Config{RunID: "run-1", Policy: "exp:initial=1s", Clients: 50})
	e.SetChaos(func() string { return event }, func() []results.Event { return events })
	srv, err := Listen("127.0.0.1:0", e)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })

	// Before any counters: the fleet's size, zeros, no event.
	check(t, "empty", scrape(t, srv.URL()), map[string]string{
		`stampede_run_info{policy="exp:initial=1s",run_id="run-1"}`: "1",
		`stampede_clients`:                                 "50",
		`stampede_connected_clients`:                       "0",
		`stampede_connect_failures_total{class="refused"}`: "0",
		`stampede_elapsed_seconds`:                         "0",
	}, `stampede_chaos_event{event="at 1s restart abrupt down=1s"}`)

	// All 50 up at 0.5 s; the restart at 1 s drops them; ready at 2 s.
	e.Observe(500*time.Millisecond, loadgen.Stats{Clients: 50, Connected: 50, Attempts: 50, Successes: 50}, 5)
	event = "at 1s restart abrupt down=1s"
	var s loadgen.Stats
	s.Clients, s.Connected, s.Inflight, s.Attempts, s.Successes = 50, 0, 12, 90, 50
	s.Failures[connerr.Refused], s.Disconnects[connerr.Closed1006] = 28, 50
	e.Observe(1200*time.Millisecond, s, 12.5)
	check(t, "outage", scrape(t, srv.URL()), map[string]string{
		`stampede_elapsed_seconds`:                                   "1.2",
		`stampede_connected_clients`:                                 "0",
		`stampede_inflight_attempts`:                                 "12",
		`stampede_connect_attempts_total`:                            "90",
		`stampede_connect_successes_total`:                           "50",
		`stampede_connect_failures_total{class="refused"}`:           "28",
		`stampede_connect_failures_total{class="timeout"}`:           "0",
		`stampede_disconnects_total{class="closed_1006"}`:            "50",
		`stampede_herd_attempts_per_100ms`:                           "12.5",
		`stampede_chaos_event{event="at 1s restart abrupt down=1s"}`: "1",
	})

	// Ready at 2 s; 30 back at 2.3 s (R50 known), 49 at 2.5 s (R90), all
	// 50 at 3 s (R99, R100). One client stopped on a TLS error meanwhile.
	event = ""
	events = []results.Event{{Kind: "restart", Mode: "abrupt", Spec: "at 1s restart abrupt down=1s",
		Start: time.Second, End: 2 * time.Second, Ready: 2 * time.Second}}
	s.Connected, s.Successes, s.MsgSent, s.MsgAcked, s.MsgDelivered = 30, 80, 7, 5, 6
	s.Stopped[connerr.TLS] = 1
	e.Observe(2300*time.Millisecond, s, 20)
	got := scrape(t, srv.URL())
	check(t, "R50", got, map[string]string{
		`stampede_recovery_r50_seconds{event="0",spec="at 1s restart abrupt down=1s"}`: "0.3",
		`stampede_stopped_clients{class="tls"}`:                                        "1",
		`stampede_messages_sent_total`:                                                 "7",
		`stampede_messages_acked_total`:                                                "5",
		`stampede_messages_delivered_total`:                                            "6",
	}, `stampede_recovery_r90_seconds{event="0",spec="at 1s restart abrupt down=1s"}`,
		`stampede_chaos_event{event="at 1s restart abrupt down=1s"}`)
	s.Connected = 49
	e.Observe(2500*time.Millisecond, s, 3)
	s.Connected = 50
	e.Observe(3*time.Second, s, 0)
	check(t, "R100", scrape(t, srv.URL()), map[string]string{
		`stampede_recovery_r50_seconds{event="0",spec="at 1s restart abrupt down=1s"}`:  "0.3",
		`stampede_recovery_r90_seconds{event="0",spec="at 1s restart abrupt down=1s"}`:  "0.5",
		`stampede_recovery_r99_seconds{event="0",spec="at 1s restart abrupt down=1s"}`:  "1",
		`stampede_recovery_r100_seconds{event="0",spec="at 1s restart abrupt down=1s"}`: "1",
	})

	// The summary's exact figures replace the estimates.
	r50, r90, r99, peak := 0.25, 0.42, 0.97, uint32(31)
	e.SetSummary(&summary.Summary{
		Events:   []summary.EventSummary{{Kind: "restart", Mode: "abrupt", Spec: "at 1s restart abrupt down=1s"}},
		Recovery: []summary.Recovery{{Event: 0, ConnectedBefore: 50, R50S: &r50, R90S: &r90, R99S: &r99, HerdPeakPer100ms: &peak}},
	})
	check(t, "summary", scrape(t, srv.URL()), map[string]string{
		`stampede_recovery_r50_seconds{event="0",spec="at 1s restart abrupt down=1s"}`:         "0.25",
		`stampede_recovery_r90_seconds{event="0",spec="at 1s restart abrupt down=1s"}`:         "0.42",
		`stampede_recovery_r99_seconds{event="0",spec="at 1s restart abrupt down=1s"}`:         "0.97",
		`stampede_recovery_herd_peak_per_100ms{event="0",spec="at 1s restart abrupt down=1s"}`: "31",
	}, `stampede_recovery_r100_seconds{event="0",spec="at 1s restart abrupt down=1s"}`) // null: never
}

// TestListenError names the flag.
func TestListenError(t *testing.T) {
	_, err := Listen("127.0.0.1:notaport", New(Config{}))
	if err == nil || !strings.HasPrefix(err.Error(), "Metrics.Addr: ") {
		t.Fatalf("Listen = %v, want an error naming --metrics-addr", err)
	}
}

// TestOwnRegistry checks that nothing lands in the global default registry.
func TestOwnRegistry(t *testing.T) {
	e := New(Config{Clients: 3})
	mfs, err := e.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(mfs) == 0 {
		t.Fatal("own registry gathers nothing")
	}
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), "stampede_") {
			t.Errorf("metric %s is not stampede_*", mf.GetName())
		}
	}
}
