package results

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/connerr"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata")

func TestNewRunID(t *testing.T) {
	at := time.Date(2026, 11, 29, 13, 0, 0, 0, time.FixedZone("CET", 3600))
	for _, tc := range []struct {
		name string
		seed uint64
		want string
	}{
		{"low bits in hex", 0x1a2b, "2026-11-29T12-00-00Z-1a2b"}, // 13:00 CET is 12:00 UTC
		{"padded", 42, "2026-11-29T12-00-00Z-002a"},
		{"high bits dropped", 0xffff_0000_0000_1a2b, "2026-11-29T12-00-00Z-1a2b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := NewRunID(at, tc.seed); got != tc.want {
				t.Errorf("NewRunID = %q, want %q", got, tc.want)
			}
		})
	}
}

// summaryInput is restartTen with everything else a run records.
func summaryInput() Input {
	r, events := restartTen()
	RecordLatency(r.Connect, 1500*time.Microsecond)
	RecordLatency(r.TTR, 2*time.Second)
	r.Messages = Messages{Sent: 20, Acked: 20, Resumed: 10, Delivered: 180}
	r.Stopped = map[string]Stopped{"tls": {Count: 1, LastError: "x509: certificate signed by unknown authority"}}
	// A backlog change at 0.5 s, given after the restart: Summarize orders
	// events by Start, so it becomes event 0.
	events = append(events, Event{Kind: "backlog", Spec: "at 500ms backlog 16", Start: 500 * time.Millisecond})
	return Input{
		RunID:  "2026-11-29T12-00-00Z-002a",
		Seed:   42,
		Config: map[string]any{"clients": 10, "policy": "fixed:initial=1s"},
		Report: r,
		Events: events,
		End:    10 * time.Second,
		Kernel: KernelDelta{ListenOverflows: 249, ListenDrops: 249, TCPSynRetrans: 249},
		Resources: map[string]ResourceStats{
			RoleLoadgen: {PeakRSSBytes: 1 << 20, CPUSeconds: 1.5, PeakFDs: 14, PeakThreads: 6, Processes: 1, ProcessesSeen: 1, Samples: 10},
		},
	}
}

func TestSummarizeGolden(t *testing.T) {
	s := Summarize(summaryInput())
	dir := t.TempDir()
	if err := s.WriteJSON(dir); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "summary.golden.json")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("summary.json differs from %s (go test -run Golden -update to accept):\n%s", golden, got)
	}

	back, err := ReadSummary(filepath.Join(dir, SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, s) {
		t.Errorf("ReadSummary(WriteJSON(s)) != s:\n%+v\n%+v", back, s)
	}
}

func TestSummarizeFigures(t *testing.T) {
	s := Summarize(summaryInput())
	if len(s.Events) != 2 || s.Events[0].Kind != "backlog" || s.Events[1].Kind != "restart" {
		t.Fatalf("events not in Start order: %+v", s.Events)
	}
	// The backlog event's window is cut by the restart at 1 s; all 10 were
	// up and none dropped before it: recovered at once.
	if r := s.Recovery[0]; r.ConnectedBefore != 10 || r.Recovered != 10 || *r.R100S != 0 {
		t.Errorf("backlog recovery = %+v", r)
	}
	if r := s.Recovery[1]; r.Event != 1 || *r.R50S != 0.45 || r.WastedAttemptsPerClient != 4.5 {
		t.Errorf("restart recovery = %+v", r)
	}
	if e := s.Events[0]; e.ReadyS != 0.5 || e.OutageS != 0 {
		t.Errorf("backlog event ready %v outage %v, want 0.5 0 (no readiness: Start)", e.ReadyS, e.OutageS)
	}
	if e := s.Events[1]; e.StartS != 1 || e.EndS != 2.9 || e.ReadyS != 3 || e.OutageS != 2 {
		t.Errorf("restart event = %+v", e)
	}
	// 10 + 10 + 4 + 55 + 3 attempts; successes 10 + 10; 14 + 3 refused and
	// 45 timeouts.
	if c := s.Connect; c.Attempts != 82 || c.Successes != 20 || c.Failures["refused"] != 17 ||
		c.Failures["timeout"] != 45 || c.Disconnects["closed_1006"] != 10 || len(c.Failures) != connerr.NumClasses-1 {
		t.Errorf("connect = %+v", c)
	}
	// 2 s is stored at three significant digits: in a bucket 1024 µs wide
	// starting at 1999.872 ms, reported at its top, 2000.895 ms.
	if l := s.LatencyMS; l.Connect.P99 != 1.5 || l.TTR.Max != 2000.895 || l.MessageRTT.Count != 0 {
		t.Errorf("latency = %+v", l)
	}
	if tg, ok := s.Resources[RoleTarget]; !ok || tg != (ResourceStats{}) {
		t.Errorf("target resources = %+v (present %v), want present and zero", tg, ok)
	}
}

func TestSummarizeEmpty(t *testing.T) {
	// Nothing recorded: every contract field still present, no nulls where
	// a list or object is promised.
	s := Summarize(Input{})
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"run_id", "seed", "config", "clients", "events", "connect", "recovery",
		"latency_ms", "messages", "kernel", "resources", "slo", "pass", "stopped"} {
		v, ok := m[k]
		if !ok || (v == nil) {
			t.Errorf("%s = %v (present %v)", k, v, ok)
		}
	}
	if !s.Pass || string(s.Config) != "{}" {
		t.Errorf("pass %v config %s, want true {}", s.Pass, s.Config)
	}
}

func TestSummarizeBadConfig(t *testing.T) {
	s := Summarize(Input{Config: func() {}})
	var m map[string]string
	if err := json.Unmarshal(s.Config, &m); err != nil || m["error"] == "" {
		t.Errorf("config = %s, want an error object", s.Config)
	}
}

func TestSetSLO(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []SLOResult
		pass bool
	}{
		{"none", nil, true},
		{"all pass", []SLOResult{{Expr: "lost==0", Pass: true}, {Expr: "r99<5s", Value: ptr(3), Pass: true}}, true},
		{"one fails", []SLOResult{{Expr: "lost==0", Pass: true}, {Expr: "r99<5s", Value: ptr(7)}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Summarize(Input{})
			s.SetSLO(tc.in)
			if s.Pass != tc.pass || s.SLO == nil || len(s.SLO) != len(tc.in) {
				t.Errorf("pass %v slo %v, want %v and %d results", s.Pass, s.SLO, tc.pass, len(tc.in))
			}
		})
	}
}

func TestReadSummaryErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"run_id": 3}`), 0o644)
	for _, p := range []string{filepath.Join(dir, "missing.json"), bad} {
		if _, err := ReadSummary(p); err == nil {
			t.Errorf("ReadSummary(%s) succeeded", p)
		}
	}
}
