package slo

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stampede-dev/stampede/internal/resultstest"

	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/results/folder"
	"github.com/stampede-dev/stampede/results/summary"
)

func ptr(v float64) *float64 { return &v }

func TestParseSLO(t *testing.T) {
	for _, tc := range []struct {
		name, expr string
		figure, op string
		limit      float64
		canonical  string
		wantErr    string // substring of the error; "" for success
		wantCol    int
	}{
		{name: "duration", expr: "r99<20s", figure: "r99", op: "<", limit: 20, canonical: "r99<20s"},
		{name: "count", expr: "lost==0", figure: "lost", op: "==", limit: 0, canonical: "lost==0"},
		{name: "ratio", expr: "herd_peak_to_mean<5", figure: "herd_peak_to_mean", op: "<", limit: 5, canonical: "herd_peak_to_mean<5"},
		{name: "milliseconds", expr: "connect_p99<=250ms", figure: "connect_p99", op: "<=", limit: 0.25, canonical: "connect_p99<=250ms"},
		{name: "spaces", expr: "  r50 >= 1.5s ", figure: "r50", op: ">=", limit: 1.5, canonical: "r50>=1.5s"},
		{name: "compound duration", expr: "r100<1m30s", figure: "r100", op: "<", limit: 90, canonical: "r100<1m30s"},
		{name: "zero needs no unit", expr: "ttr_p99<=0", figure: "ttr_p99", op: "<=", limit: 0, canonical: "ttr_p99<=0s"},
		{name: "percent share", expr: "recovered_share>=99%", figure: "recovered_share", op: ">=", limit: 0.99, canonical: "recovered_share>=0.99"},
		{name: "exponent", expr: "failures<1e3", figure: "failures", op: "<", limit: 1000, canonical: "failures<1000"},
		{name: "not equal", expr: "dup_delivered!=1", figure: "dup_delivered", op: "!=", limit: 1, canonical: "dup_delivered!=1"},
		{name: "upper case figure", expr: "R99<2s", figure: "r99", op: "<", limit: 2, canonical: "r99<2s"},
		{name: "microseconds", expr: "message_rtt_p99<500us", figure: "message_rtt_p99", op: "<", limit: 0.0005, canonical: "message_rtt_p99<500µs"},

		{name: "share as a fraction", expr: "recovered_share>=0.99", figure: "recovered_share", op: ">=", limit: 0.99, canonical: "recovered_share>=0.99"},
		{name: "share of one", expr: "recovered_share==1", figure: "recovered_share", op: "==", limit: 1, canonical: "recovered_share==1"},
		// A bare 99 would always fail (a share is at most 1): an error
		// that names the fix, as a duration without a unit is.
		{name: "share as a bare percentage", expr: "recovered_share>=99", wantErr: "recovered_share is a share from 0 to 1: write 0.99 or 99%, not 99", wantCol: 18},
		{name: "share over 100%", expr: "recovered_share>=150%", wantErr: "recovered_share is a share from 0 to 1 (or 0% to 100%), got 150%", wantCol: 18},
		{name: "negative share", expr: "recovered_share>-0.5", wantErr: "recovered_share is a share from 0 to 1 (or 0% to 100%), got -0.5", wantCol: 17},
		{name: "bad unit", expr: "r99<2x", wantErr: `bad duration "2x"`, wantCol: 5},
		{name: "duration without unit", expr: "r99<20", wantErr: "r99 is a duration: give a unit, e.g. 20s or 20ms", wantCol: 5},
		{name: "unit on a count", expr: "lost<5s", wantErr: `lost is not a duration: drop the unit "s"`, wantCol: 6},
		{name: "percent on a ratio", expr: "herd_peak_to_mean<5%", wantErr: `herd_peak_to_mean is not a duration: drop the unit "%"`, wantCol: 19},
		{name: "unknown figure", expr: "r98<2s", wantErr: `unknown figure "r98"`, wantCol: 1},
		{name: "single equals", expr: "lost=0", wantErr: "use == to compare", wantCol: 5},
		{name: "no operator", expr: "lost", wantErr: "expected an operator", wantCol: 5},
		{name: "no value", expr: "lost== ", wantErr: "expected a value after ==", wantCol: 8},
		{name: "trailing words", expr: "lost==0 or 1", wantErr: `unexpected "or 1" after the value`, wantCol: 9},
		{name: "empty", expr: "   ", wantErr: "empty SLO", wantCol: 4},
		{name: "no figure", expr: "<5", wantErr: "expected a figure name", wantCol: 1},
		{name: "not a number", expr: "lost<abc", wantErr: `bad number "abc"`, wantCol: 6},
		{name: "overflow", expr: "lost<1e999", wantErr: `bad number "1e999"`, wantCol: 6},
		{name: "column counts characters", expr: "µ<1", wantErr: "expected a figure name", wantCol: 1},
		{name: "column after a multibyte unit", expr: "r99<1µs x", wantErr: `unexpected "x"`, wantCol: 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ParseSLO(tc.expr)
			if tc.wantErr != "" {
				var se *SLOError
				if !errors.As(err, &se) {
					t.Fatalf("ParseSLO(%q) = %v, %v; want an *SLOError", tc.expr, s, err)
				}
				if !strings.Contains(err.Error(), tc.wantErr) || se.Col != tc.wantCol {
					t.Errorf("error %q (col %d), want col %d and %q", err, se.Col, tc.wantCol, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseSLO(%q): %v", tc.expr, err)
			}
			if s.Figure != tc.figure || s.Op != tc.op || s.Limit != tc.limit || s.Expr != tc.expr {
				t.Errorf("got %+v, want figure %s op %s limit %v", s, tc.figure, tc.op, tc.limit)
			}
			if got := s.String(); got != tc.canonical {
				t.Errorf("String() = %q, want %q", got, tc.canonical)
			}
		})
	}
}

func TestSLOErrorMessage(t *testing.T) {
	_, err := ParseSLO("r99<2x")
	want := `slo "r99<2x": col 5: bad duration "2x": want a number and a unit (ns, us, ms, s, m, h), e.g. 250ms`
	if err == nil || err.Error() != want {
		t.Errorf("error = %v\nwant    %s", err, want)
	}
}

// sloSummary is a run with two events: the second recovered worse on R99
// and never fully.
func sloSummary() *summary.Summary {
	return &summary.Summary{
		Connect:    summary.Connect{Attempts: 500, Failures: map[string]uint64{"refused": 30, "timeout": 12}},
		Stopped:    map[string]results.Stopped{"tls": {Count: 2}},
		Messages:   results.Messages{Lost: 0, DupDelivered: 1, Unsynced: 3, Unacked: 4, BadFrames: 0, Tracked: true},
		Kernel:     results.KernelDelta{ListenOverflows: 249},
		KernelRead: true,
		Recovery: []summary.Recovery{
			{Event: 0, ConnectedBefore: 0}, // a backlog change with nobody connected: ignored
			{Event: 1, ConnectedBefore: 100, Disconnected: 100, Recovered: 100, R50S: ptr(0.5), R90S: ptr(1), R99S: ptr(2.31), R100S: ptr(3),
				HerdPeakPer100ms: resultstest.U32(40), HerdPeakToMean: ptr(4.25), WastedAttemptsPerClient: ptr(0.5), OutageAttemptsPerClient: ptr(2), OutageS: ptr(1)},
			{Event: 2, ConnectedBefore: 100, Disconnected: 100, Recovered: 98, R50S: ptr(0.25), R90S: ptr(0.75), R99S: nil, R100S: nil,
				HerdPeakPer100ms: resultstest.U32(60), HerdPeakToMean: ptr(3), WastedAttemptsPerClient: ptr(0.75), OutageAttemptsPerClient: ptr(1), OutageS: ptr(1)},
			// A stall that dropped nobody: ignored, though its figures
			// are null.
			{Event: 3, ConnectedBefore: 100, Recovered: 100},
		},
		LatencyMS: results.Latencies{Connect: results.Latency{P50: 1.5, P99: 250, Max: 900, Count: 10}},
	}
}

func TestEvalSLO(t *testing.T) {
	sum := sloSummary()
	for _, tc := range []struct {
		expr  string
		value *float64
		pass  bool
		line  string
	}{
		// The worst event: R90 is event 1's (the larger).
		{"r90<2s", ptr(1), true, "SLO r90<2s: pass (r90 = 1s)"},
		{"r50<100ms", ptr(0.5), false, "SLO r50<100ms: FAIL (r50 = 500ms, over by 400ms)"},
		// Event 2 never reached R99: null fails whatever the operator.
		{"r99<1h", nil, false, "SLO r99<1h: FAIL (r99 = null: never: 98 of 100 clients back after event 2)"},
		{"r99!=0", nil, false, "SLO r99!=0: FAIL (r99 = null: never: 98 of 100 clients back after event 2)"},
		{"herd_peak<=60", ptr(60), true, "SLO herd_peak<=60: pass (herd_peak = 60)"},
		{"herd_peak<60", ptr(60), false, "SLO herd_peak<60: FAIL (herd_peak = 60, at the limit)"},
		{"herd_peak_to_mean<4", ptr(4.25), false, "SLO herd_peak_to_mean<4: FAIL (herd_peak_to_mean = 4.25, over by 0.25)"},
		{"wasted_attempts<1", ptr(0.75), true, "SLO wasted_attempts<1: pass (wasted_attempts = 0.75)"},
		{"outage_attempts<=2", ptr(2), true, "SLO outage_attempts<=2: pass (outage_attempts = 2)"},
		{"recovered_share>=99%", ptr(0.98), false, "SLO recovered_share>=99%: FAIL (recovered_share = 0.98, under by 0.01)"},
		{"lost==0", ptr(0), true, "SLO lost==0: pass (lost = 0)"},
		{"dup_delivered==0", ptr(1), false, "SLO dup_delivered==0: FAIL (dup_delivered = 1, over by 1)"},
		{"dup_delivered!=1", ptr(1), false, "SLO dup_delivered!=1: FAIL (dup_delivered = 1, must not be 1)"},
		{"failures<50", ptr(42), true, "SLO failures<50: pass (failures = 42)"},
		{"attempts>=600", ptr(500), false, "SLO attempts>=600: FAIL (attempts = 500, under by 100)"},
		{"stopped==0", ptr(2), false, "SLO stopped==0: FAIL (stopped = 2, over by 2)"},
		{"listen_overflows<1000", ptr(249), true, "SLO listen_overflows<1000: pass (listen_overflows = 249)"},
		// 250 ms exactly: <= holds, compared to the nanosecond.
		{"connect_p99<=250ms", ptr(0.25), true, "SLO connect_p99<=250ms: pass (connect_p99 = 250ms)"},
		{"connect_p99<0.25s", ptr(0.25), false, "SLO connect_p99<0.25s: FAIL (connect_p99 = 250ms, at the limit)"},
		{"connect_max<1s", ptr(0.9), true, "SLO connect_max<1s: pass (connect_max = 900ms)"},
		// Nothing recorded: null, not 0, which would pass.
		{"ttr_p99<1ms", nil, false, "SLO ttr_p99<1ms: FAIL (ttr_p99 = null: not measured: no ttr latency was recorded)"},
		{"unsynced==0", ptr(3), false, "SLO unsynced==0: FAIL (unsynced = 3, over by 3)"},
		{"unacked<=4", ptr(4), true, "SLO unacked<=4: pass (unacked = 4)"},
		{"bad_frames==0", ptr(0), true, "SLO bad_frames==0: pass (bad_frames = 0)"},
	} {
		t.Run(tc.expr, func(t *testing.T) {
			s, err := ParseSLO(tc.expr)
			if err != nil {
				t.Fatal(err)
			}
			r := s.Eval(sum)
			if (r.Value == nil) != (tc.value == nil) || r.Value != nil && *r.Value != *tc.value || r.Pass != tc.pass {
				t.Errorf("Eval = value %v pass %v, want %v %v", fmtPtr(r.Value), r.Pass, fmtPtr(tc.value), tc.pass)
			}
			if got := r.Line(); got != tc.line {
				t.Errorf("Line() = %q\nwant     %q", got, tc.line)
			}
		})
	}
}

func fmtPtr(p *float64) any {
	if p == nil {
		return "null"
	}
	return *p
}

// TestEvalSLONotMeasured: a figure nobody measured fails its SLO as null,
// whatever the operator, with a line that says why (docs/results.md "SLO
// gates"); each would pass on the zero it used to be.
func TestEvalSLONotMeasured(t *testing.T) {
	// A run in mode none against another host: no connect succeeded, no
	// message tracked, kernel counters not the target's.
	sum := &summary.Summary{
		Messages:   results.Messages{},
		Kernel:     results.KernelDelta{},
		KernelNote: "the target listens on another host (10.0.0.7)",
	}
	for _, tc := range []struct{ expr, line string }{
		{"lost==0", "SLO lost==0: FAIL (lost = null: not measured: the run did not speak the message protocol (deliveries are checked only in the stampede mode))"},
		{"dup_delivered<=0", "SLO dup_delivered<=0: FAIL (dup_delivered = null: not measured: the run did not speak the message protocol (deliveries are checked only in the stampede mode))"},
		{"unsynced==0", "SLO unsynced==0: FAIL (unsynced = null: not measured: the run did not speak the message protocol (deliveries are checked only in the stampede mode))"},
		{"unacked==0", "SLO unacked==0: FAIL (unacked = null: not measured: the run did not speak the message protocol (deliveries are checked only in the stampede mode))"},
		{"bad_frames==0", "SLO bad_frames==0: FAIL (bad_frames = null: not measured: the run did not speak the message protocol (deliveries are checked only in the stampede mode))"},
		{"connect_p99<1s", "SLO connect_p99<1s: FAIL (connect_p99 = null: not measured: no connect latency was recorded)"},
		{"message_rtt_max>=0", "SLO message_rtt_max>=0: FAIL (message_rtt_max = null: not measured: no message_rtt latency was recorded)"},
		{"listen_overflows==0", "SLO listen_overflows==0: FAIL (listen_overflows = null: not measured: the target listens on another host (10.0.0.7))"},
	} {
		s, err := ParseSLO(tc.expr)
		if err != nil {
			t.Fatal(err)
		}
		r := s.Eval(sum)
		if r.Pass || r.Value != nil || r.Line() != tc.line {
			t.Errorf("%s: pass %v value %v\nline %q\nwant %q", tc.expr, r.Pass, fmtPtr(r.Value), r.Line(), tc.line)
		}
	}
	// Counters not read at all, with no note: said so.
	s, _ := ParseSLO("listen_overflows<10")
	if r := s.Eval(&summary.Summary{}); r.Pass || r.Detail != "listen_overflows = null: not measured: the kernel counters were not read" {
		t.Errorf("unread kernel: %+v", r)
	}
}

func TestEvalSLONoEvent(t *testing.T) {
	s, _ := ParseSLO("herd_peak_to_mean<5")
	r := s.Eval(&summary.Summary{})
	if r.Pass || r.Value != nil || r.Detail != "herd_peak_to_mean = null: no event disconnected any client: nothing to recover" {
		t.Errorf("Eval on a run without events = %+v, want a null failure", r)
	}
}

// A run's SLOs land in summary.json with their limit and unit, and Pass
// falls with one failure.
func TestSLOInSummaryJSON(t *testing.T) {
	slos, err := ParseSLOs([]string{"lost==0", "r99<1ms"})
	if err != nil {
		t.Fatal(err)
	}
	sum := sloSummary()
	sum.SetSLO(EvalSLOs(slos, sum))
	dir := t.TempDir()
	if err := folder.WriteSummary(dir, sum); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, folder.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	var file struct{ SLO json.RawMessage }
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	var compact bytes.Buffer
	json.Compact(&compact, file.SLO)
	b := compact.Bytes()
	want := `[{"expr":"lost==0","value":0,"pass":true,"limit":0,"detail":"lost = 0"},` +
		`{"expr":"r99<1ms","value":null,"pass":false,"limit":0.001,"unit":"s","detail":"r99 = null: never: 98 of 100 clients back after event 2"}]`
	if string(b) != want || sum.Pass {
		t.Errorf("slo = %s pass %v\nwant  %s pass false", b, sum.Pass, want)
	}
	if _, err := ParseSLOs([]string{"lost==0", "lost=0"}); err == nil {
		t.Error("ParseSLOs accepted a bad expression")
	}
}

func TestSLOText(t *testing.T) {
	var s SLO
	if err := json.Unmarshal([]byte(`"r99 < 20s"`), &s); err != nil || s.Limit != 20 {
		t.Fatalf("unmarshal = %+v, %v", s, err)
	}
	b, _ := json.Marshal([]SLO{s})
	if string(b) != `["r99 \u003c 20s"]` {
		t.Errorf("marshal = %s", b)
	}
	if err := json.Unmarshal([]byte(`"r99<"`), &s); err == nil {
		t.Error("unmarshal accepted a bad SLO")
	}
}

func TestSLOFiguresDocumented(t *testing.T) {
	names := map[string]bool{}
	for _, f := range SLOFigures() {
		if f[1] == "" || names[f[0]] {
			t.Errorf("figure %q: empty doc or listed twice", f[0])
		}
		names[f[0]] = true
	}
	for _, n := range []string{"r50", "r90", "r99", "r100", "herd_peak_to_mean", "herd_peak", "wasted_attempts",
		"outage_attempts", "lost", "dup_delivered", "connect_p99", "ttr_p99", "message_rtt_p99", "resume_p99",
		"message_rtt_scheduled_p50", "message_rtt_scheduled_p90", "message_rtt_scheduled_p99", "message_rtt_scheduled_max",
		"failures", "recovered_share"} {
		if !names[n] {
			t.Errorf("figure %s missing", n)
		}
	}
}

// FuzzParseSLO: no input panics; an error names a column inside the
// expression (or just past it); a parsed SLO prints in a canonical form
// that parses back to the same figure, operator and limit.
func FuzzParseSLO(f *testing.F) {
	for _, s := range []string{"r99<20s", "lost==0", "herd_peak_to_mean<5", "connect_p99<=250ms", "r99<2x",
		"recovered_share>=99%", "failures<1e3", "r100<1m30s", "  r50 >= 1.5s ", "lost=0", "µ<1", "r99<1µs x",
		"lost<1e999", "ttr_p99<=0", "r99<-1s", "lost<-0", "lost<.5e-3", "r99<9223372036854775807ns", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		s, err := ParseSLO(expr)
		if err != nil {
			var se *SLOError
			if !errors.As(err, &se) {
				t.Fatalf("error %v is not an *SLOError", err)
			}
			if n := utf8.RuneCountInString(expr); se.Col < 1 || se.Col > n+1 {
				t.Fatalf("col %d outside 1..%d", se.Col, n+1)
			}
			return
		}
		again, err := ParseSLO(s.String())
		if err != nil {
			t.Fatalf("canonical %q of %q does not parse: %v", s.String(), expr, err)
		}
		if again.Figure != s.Figure || again.Op != s.Op || again.Limit != s.Limit {
			t.Fatalf("%q -> %q -> %+v, want %+v", expr, s.String(), again, s)
		}
		s.Eval(sloSummary()) // must not panic
	})
}

// TestSLOCannotPass: a limit no figure can meet is refused when parsed:
// every figure is zero or more, a share at most 1.
func TestSLOCannotPass(t *testing.T) {
	for _, tc := range []struct{ expr, want string }{
		{"r99<-5s", "r99 is never negative: a limit of -5s gates nothing"},
		{"r99>=-1ms", "r99 is never negative"},
		{"stopped<=-1", "stopped is never negative: a limit of -1 gates nothing"},
		{"lost<0", "lost is never negative: lost<0 cannot pass; write lost==0"},
		{"ttr_p99<0", "ttr_p99 is never negative: ttr_p99<0 cannot pass"},
		{"recovered_share>100%", "recovered_share is at most 1 (100%): recovered_share>1 cannot pass"},
		{"recovered_share>1", "recovered_share is at most 1"},
	} {
		_, err := ParseSLO(tc.expr)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want %q", tc.expr, err, tc.want)
		}
	}
	for _, ok := range []string{"lost==0", "lost<=0", "r99<=0", "recovered_share>=1", "recovered_share>=100%", "herd_peak>0"} {
		if _, err := ParseSLO(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}

// TestCheckSLOKind: an HTTP fleet's figures only on an HTTP fleet, a
// WebSocket run's only on a WebSocket run.
func TestCheckSLOKind(t *testing.T) {
	parse := func(exprs ...string) []SLO {
		s, err := ParseSLOs(exprs)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	ws, web := parse("r99<20s", "connect_p99<1s", "lost==0"), parse("goodput>10", "http_p99<1s", "http_attempt_max<2s", "amplification<2")
	if err := CheckSLOKind(ws, false); err != nil {
		t.Errorf("WebSocket figures on a WebSocket run: %v", err)
	}
	if err := CheckSLOKind(web, true); err != nil {
		t.Errorf("HTTP figures on an HTTP fleet: %v", err)
	}
	err := CheckSLOKind(parse("lost==0", "HTTP_P99<1s"), false)
	if want := `slo "HTTP_P99<1s": col 1: http_p99 is a figure of an HTTP fleet run`; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("http_p99 on a WebSocket run: %v; want %q...", err, want)
	}
	err = CheckSLOKind(parse("goodput>1", " r99<1s"), true)
	if want := `slo " r99<1s": col 2: r99 is a figure of a WebSocket run`; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("r99 on an HTTP fleet: %v; want %q...", err, want)
	}
}

// TestCheckSLORecovery: recovery figures (r99, recovered_share, the
// herd's, wasted attempts, ttr) are refused where nothing is scheduled;
// the others pass.
func TestCheckSLORecovery(t *testing.T) {
	for expr, refused := range map[string]bool{
		"r99<10s": true, "recovered_share==100%": true, "herd_peak_to_mean<10": true, "wasted_attempts<0.1": true,
		"ttr_p99<5s": true, "connect_p99<1s": false, "lost==0": false, "stopped==0": false,
	} {
		slos, err := ParseSLOs([]string{expr})
		if err != nil {
			t.Fatal(err)
		}
		err = CheckSLORecovery(slos)
		if (err != nil) != refused || (refused && !strings.Contains(err.Error(), "measures the recovery from a chaos event")) {
			t.Errorf("%s: %v; want refused %v", expr, err, refused)
		}
	}
}
