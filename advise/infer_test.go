package advise

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/chaos"
	"github.com/stampede-dev/stampede/results/folder"
	"github.com/stampede-dev/stampede/results/summary"
	"github.com/stampede-dev/stampede/sim"
)

// simulated runs cfg and returns its summary and timeline rows, as a
// results folder would hold them.
func simulated(t *testing.T, cfg sim.Config) (*summary.Summary, []folder.TimelineRow) {
	t.Helper()
	res, err := sim.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	sum := sim.Summarize(res, nil)
	return sum, folder.TimelineRows(res.Report.Timeline, sum.Events, sum.DurationS)
}

// TestInferAcceptRate: from a run whose herd saturated a server of 400
// accepts a second, the inferred rate is within 10 % of it, the backlog
// is the spec's (not the config's, whatever spelling it has), and the
// event's schedule text is kept.
func TestInferAcceptRate(t *testing.T) {
	cfg := benchLike(t, 2000, ReferencePolicy)
	cfg.Settings = json.RawMessage(`{"backlog": 64, "sizing": {"target_procs": 3}}`)
	sum, tl := simulated(t, cfg)
	m, err := Infer(sum, tl)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Capacity.AcceptRate; math.Abs(got-400)/400 > 0.10 {
		t.Errorf("inferred accept rate %.0f/s, want 400 within 10 %%", got)
	}
	if !m.Saturated || m.Capacity.Backlog != 128 || m.Clients != 2000 || m.Chaos != "at 8s restart abrupt down=2s" {
		t.Errorf("measured %+v", m)
	}
	if !strings.Contains(m.Capacity.Source, "most clients connected in one second") {
		t.Errorf("source %q does not say which figure it used", m.Capacity.Source)
	}
}

// TestInferLowerBound: a server that the herd never saturated (no
// failure after ready) gives a lower bound, and says so.
func TestInferLowerBound(t *testing.T) {
	cfg := benchLike(t, 300, ReferencePolicy)
	cfg.AcceptRate, cfg.Backlog = 0, 1024 // the loopback's own capacity: nothing queues
	cfg.Ramp = 0
	sum, tl := simulated(t, cfg)
	m, err := Infer(sum, tl)
	if err != nil {
		t.Fatal(err)
	}
	if m.Saturated || !strings.Contains(m.Capacity.Source, "lower bound") {
		t.Errorf("an unsaturated run: saturated %v, source %q", m.Saturated, m.Capacity.Source)
	}
	if m.Capacity.Backlog != 1024 {
		t.Errorf("backlog %d, want the spec's 1024", m.Capacity.Backlog)
	}
	// A folder written before the spec was recorded says nothing of the
	// server: no backlog, whatever its config holds.
	sum.Spec, sum.Config = nil, json.RawMessage(`{"backlog": 1024}`)
	if m, err = Infer(sum, tl); err != nil || m.Capacity.Backlog != 0 || m.Policy != nil {
		t.Errorf("no spec: backlog %d policy %v (%v), want 0 and none", m.Capacity.Backlog, m.Policy, err)
	}
}

// TestVerifyFigures: a real run's figures are set against the
// prediction, with (predicted - measured) / measured as the error, the
// recommended policy first.
func TestVerifyFigures(t *testing.T) {
	res := &Result{Current: Candidate{Policy: backoff.MustParse("fixed:initial=1s")}}
	res.Best = []Candidate{{Policy: backoff.MustParse(ReferencePolicy), R50: 2, R99: 5.5, R100: 8, Peak: 300, Wasted: 0.1}}
	f := func(v float64) *float64 { return &v }
	peak := uint32(250)
	var dirs []string
	run := func(_ context.Context, p backoff.Policy, dir string) (*summary.Summary, error) {
		dirs = append(dirs, dir)
		return &summary.Summary{Recovery: []summary.Recovery{{Disconnected: 10, R50S: f(2.5), R99S: f(5), R100S: nil,
			HerdPeakPer100ms: &peak, WastedAttemptsPerClient: f(0)}}}, nil
	}
	vs, err := Verify(context.Background(), res, "out", run)
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 2 || vs[0].Role != "recommended" || vs[1].Role != "current" || dirs[0] != filepath.Join("out", "verify-recommended") {
		t.Fatalf("runs %+v in %v", vs, dirs)
	}
	want := map[string]*float64{"r50_s": f(-0.2), "r99_s": f(0.1), "r100_s": nil, "herd_peak_per_100ms": f(0.2), "wasted_attempts_per_client": nil}
	for name, w := range want {
		got, ok := Figure(vs[0], name)
		switch {
		case !ok:
			t.Errorf("%s missing", name)
		case w == nil && got.RelError != nil:
			t.Errorf("%s: error %v, want null (never reached, or measured 0)", name, *got.RelError)
		case w != nil && (got.RelError == nil || math.Abs(*got.RelError-*w) > 1e-9):
			t.Errorf("%s: error %v, want %v", name, got.RelError, *w)
		}
	}
	got, held := Verdict(vs, 328, 0.15)
	lines := strings.Join(got, "\n")
	if !held {
		t.Errorf("a prediction 10 %% off with the peak within capacity did not hold:\n%s", lines)
	}
	if _, held := Verdict(vs, 200, 0.15); held {
		t.Error("a real herd peak of 250 held against a capacity of 200")
	}
	// Wasted attempts of noise (4 and 1 in 10,000) have no error; a
	// tenth of an attempt a client has one.
	for _, tc := range []struct {
		p, m float64
		want *float64
	}{{0.0004, 0.0001, nil}, {0.1, 0.05, f(1)}} {
		res.Best[0].Wasted = tc.p
		run := func(context.Context, backoff.Policy, string) (*summary.Summary, error) {
			return &summary.Summary{Recovery: []summary.Recovery{{Disconnected: 10, WastedAttemptsPerClient: f(tc.m)}}}, nil
		}
		vs, _ := Verify(context.Background(), res, "out", run)
		got, _ := Figure(vs[0], "wasted_attempts_per_client")
		if (got.RelError == nil) != (tc.want == nil) || got.RelError != nil && math.Abs(*got.RelError-*tc.want) > 1e-9 {
			t.Errorf("wasted %v predicted, %v measured: error %v, want %v", tc.p, tc.m, got.RelError, tc.want)
		}
	}
	for _, s := range []string{"predicted 5.50s, measured 5.00s (+10 %): within 15 %", "250 per 100 ms against the server's 328: within capacity"} {
		if !strings.Contains(lines, s) {
			t.Errorf("verdict lacks %q:\n%s", s, lines)
		}
	}
}

// TestInferDirBench: a bench's folder is read run by run from its
// bench.json, and the run whose herd kept the server busiest gives the
// rate: here the jittered fleet's, whose herd saturates the server,
// rather than a fleet that trickles back.
func TestInferDirBench(t *testing.T) {
	bench := t.TempDir()
	var runs []string
	for i, policy := range []string{"fixed:initial=20s", ReferencePolicy} {
		cfg := benchLike(t, 2000, policy)
		cfg.Settings = json.RawMessage(`{"backlog": 128}`)
		res, err := sim.Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		dir := fmt.Sprintf("%d-run", i+1)
		if err := sim.WriteResults(filepath.Join(bench, dir), sim.Summarize(res, nil), res.Report); err != nil {
			t.Fatal(err)
		}
		runs = append(runs, `{"policy": "`+policy+`", "dir": "`+dir+`"}`)
	}
	if err := os.WriteFile(filepath.Join(bench, folder.BenchFile), []byte(`{"runs": [`+strings.Join(runs, ",")+`]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	m, err := InferDir(bench)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Capacity.AcceptRate; math.Abs(got-400)/400 > 0.10 {
		t.Errorf("inferred %.0f/s from the bench, want 400 within 10 %%: %s", got, m.Capacity.Source)
	}
	for _, want := range []string{filepath.Join(bench, "2-run") + ": accept rate", "the highest of the bench's 2 runs"} {
		if !strings.Contains(m.Capacity.Source, want) {
			t.Errorf("source %q lacks %q", m.Capacity.Source, want)
		}
	}
}

// TestChaosOfDeploy: a drill's deploy event, whose Spec is its command,
// becomes a restart at its start with the outage it measured (the model's
// stop and start times taken from it), graceful when most clients got a
// close frame; a detected outage likewise; a scheduled event keeps its
// schedule text.
func TestChaosOfDeploy(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	d := sim.Defaults()
	down := (2*time.Second - d.StopTime - d.StartTime).Round(time.Millisecond)
	for _, tc := range []struct {
		e    summary.EventSummary
		want string
	}{
		{summary.EventSummary{Kind: "deploy", Mode: "command", Spec: "/tmp/x/restart.sh", StartS: 5, OutageS: f(2),
			Disconnects: map[string]uint64{"closed_1012": 90, "closed_1006": 10}}, "at 5s restart graceful down=" + down.String()},
		{summary.EventSummary{Kind: "outage", Detected: true, StartS: 1.25, OutageS: f(2),
			Disconnects: map[string]uint64{"closed_1006": 100}}, "at 1.25s restart abrupt down=" + down.String()},
		{summary.EventSummary{Kind: "outage", Detected: true, StartS: 1, OutageS: f(0.1)}, "at 1s restart abrupt down=0s"},
		{summary.EventSummary{Kind: "restart", Mode: "abrupt", Spec: "at 8s restart abrupt down=2s", StartS: 8, OutageS: f(2.5)}, "at 8s restart abrupt down=2s"},
	} {
		got := chaosOf(tc.e)
		if got != tc.want {
			t.Errorf("%s %q: chaos %q, want %q", tc.e.Kind, tc.e.Spec, got, tc.want)
		}
		if _, err := chaos.Parse(got); err != nil {
			t.Errorf("%q does not parse: %v", got, err)
		}
	}
}

// TestInferTLS: a wss:// run's TLS comes from its spec, so a search from
// it charges the same handshakes, and the source says how many of its
// reconnects resumed; a ws:// run has none.
func TestInferTLS(t *testing.T) {
	cfg := benchLike(t, 2000, ReferencePolicy)
	cfg.TLSCertKind, cfg.TLSTicketKeys = "rsa-2048", "keys"
	sum, tl := simulated(t, cfg)
	m, err := Infer(sum, tl)
	if err != nil {
		t.Fatal(err)
	}
	if want := (TLSSettings{On: true, CertKind: "rsa-2048", TicketKeys: "keys"}); m.TLS != want {
		t.Errorf("TLS %+v, want %+v", m.TLS, want)
	}
	if !strings.Contains(m.Capacity.Source, "wss://: 100% of its reconnects resumed") {
		t.Errorf("source %q does not say the reconnects resumed", m.Capacity.Source)
	}
	ws, wtl := simulated(t, benchLike(t, 2000, ReferencePolicy))
	if m, err := Infer(ws, wtl); err != nil || m.TLS != (TLSSettings{}) || strings.Contains(m.Capacity.Source, "wss://") {
		t.Errorf("ws:// run: TLS %+v, source %q, err %v; want none", m.TLS, m.Capacity.Source, err)
	}
}

// TestCapacityTLS: a wss:// server's processes take each reconnect's TLS
// handshake, full when the restart loses the ticket keys: with RSA-2048's
// measured cost they admit fewer than an accept rate of 5,000 a second
// says, and more with the keys kept (resumed handshakes); a ws:// server
// is its accept rate.
func TestCapacityTLS(t *testing.T) {
	cfg := benchLike(t, 2000, ReferencePolicy)
	cfg.AcceptRate, cfg.Procs = 5000, 1
	ws := CapacityOf(cfg)
	cfg.TLSCertKind = "rsa-2048"
	lost := CapacityOf(cfg)
	cfg.TLSTicketKeys = "keys"
	kept := CapacityOf(cfg)
	full := sim.DefaultTLSCosts("rsa-2048").Full
	if want := 1 / (1/sim.DefaultProcCapacity + full.Seconds()); math.Abs(lost.AcceptRate-want) > 1e-6 || lost.AcceptRate >= 5000 {
		t.Errorf("keys lost: %.1f/s, want %.1f/s (one process at %v a full handshake)", lost.AcceptRate, want, full)
	}
	if !(kept.AcceptRate > lost.AcceptRate) || ws.AcceptRate != 5000 {
		t.Errorf("keys kept %.1f/s, lost %.1f/s, ws:// %.1f/s: want kept above lost, ws:// the accept rate", kept.AcceptRate, lost.AcceptRate, ws.AcceptRate)
	}
	if !strings.Contains(lost.Source, "TLS handshake") {
		t.Errorf("source %q does not name the TLS handshake", lost.Source)
	}
}

// TestCapacityCores: on one machine's cores both ends' CPU per connect,
// at the fleet's size, bounds the accept rate.
func TestCapacityCores(t *testing.T) {
	cfg := benchLike(t, 1_000_000, ReferencePolicy)
	cfg.AcceptRate = 1e6
	free := CapacityOf(cfg)
	cfg.Cores = 2
	k := cfg.CPU.AtFleet(cfg.Clients)
	want := 2 / (k.LoadgenPerConnect() + k.TargetPerConnect()).Seconds()
	got := CapacityOf(cfg)
	if free.AcceptRate != 1e6 || math.Abs(got.AcceptRate-want) > 1e-6 {
		t.Errorf("accept rate %.1f/s without cores, %.1f/s with 2; want 1e6/s and %.1f/s", free.AcceptRate, got.AcceptRate, want)
	}
	if small := sim.DefaultCPUCosts; got.AcceptRate >= 2/(small.LoadgenPerConnect()+small.TargetPerConnect()).Seconds() {
		t.Errorf("%.1f/s at a million: not below a small fleet's rate", got.AcceptRate)
	}
	if !strings.Contains(got.Source, "2 cores") {
		t.Errorf("source %q does not name the cores", got.Source)
	}
}
