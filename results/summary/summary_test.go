package summary

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/connerr"
	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/results/track"
)

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
	results.RecordLatency(r.Connect, 1500*time.Microsecond)
	results.RecordLatency(r.TTR, 2*time.Second)
	r.Messages = results.Messages{Sent: 20, Acked: 20, Resumed: 10, Delivered: 180}
	r.Track = &track.Record{} // the message protocol ran: deliveries checked
	r.Stopped = map[string]results.Stopped{"tls": {Count: 1, LastError: "x509: certificate signed by unknown authority"}}
	// A backlog change at 0.5 s, given after the restart: Summarize orders
	// events by Start, so it becomes event 0.
	events = append(events, results.Event{Kind: "backlog", Spec: "at 500ms backlog 16", Start: 500 * time.Millisecond})
	return Input{
		RunID:      "2026-11-29T12-00-00Z-002a",
		Seed:       42,
		Config:     map[string]any{"clients": 10, "policy": "fixed:initial=1s"},
		Report:     r,
		Events:     events,
		End:        10 * time.Second,
		Kernel:     results.KernelDelta{ListenOverflows: 249, ListenDrops: 249, TCPSynRetrans: 249},
		KernelRead: true,
		Resources: map[string]results.ResourceStats{
			results.RoleLoadgen: {PeakRSSBytes: 1 << 20, CPUSeconds: 1.5, PeakFDs: 14, PeakThreads: 6, Processes: 1, ProcessesSeen: 1, Samples: 10},
		},
	}
}

func TestSummarizeFigures(t *testing.T) {
	s := Summarize(summaryInput())
	if len(s.Events) != 2 || s.Events[0].Kind != "backlog" || s.Events[1].Kind != "restart" {
		t.Fatalf("events not in Start order: %+v", s.Events)
	}
	// The backlog event at 0.5 s: all 10 were up and none dropped before
	// the restart began: nobody to recover, its figures null.
	if r := s.Recovery[0]; r.ConnectedBefore != 10 || r.Disconnected != 0 || r.Recovered != 10 || r.R100S != nil || r.HerdPeakPer100ms != nil {
		t.Errorf("backlog recovery = %s", showAll(s.Recovery[:1]))
	}
	if r := s.Recovery[1]; r.Event != 1 || *r.R50S != 0.45 || *r.WastedAttemptsPerClient != 4.5 {
		t.Errorf("restart recovery = %s", showAll(s.Recovery[1:]))
	}
	if e := s.Events[0]; *e.ReadyS != 0.5 || *e.OutageS != 0 {
		t.Errorf("backlog event ready %v outage %v, want 0.5 0 (no readiness: Start)", *e.ReadyS, *e.OutageS)
	}
	if e := s.Events[1]; e.StartS != 1 || e.EndS != 2.9 || *e.ReadyS != 3 || *e.OutageS != 2 {
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
	if tg, ok := s.Resources[results.RoleTarget]; !ok || !reflect.DeepEqual(tg, results.ResourceStats{}) {
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
		{"all pass", []SLOResult{{Expr: "lost==0", Pass: true}, {Expr: "r99<5s", Value: f(3), Pass: true}}, true},
		{"one fails", []SLOResult{{Expr: "lost==0", Pass: true}, {Expr: "r99<5s", Value: f(7)}}, false},
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

// TestDropExplained: a detected outage starting within an explaining
// event's span goes; one outside it, and every told event, stay.
func TestDropExplained(t *testing.T) {
	s := func(d float64) time.Duration { return time.Duration(d * float64(time.Second)) }
	events := []results.Event{
		{Kind: "deploy", Start: s(10), End: s(30), Ready: s(30)},
		{Kind: "backend", Spec: "s1", Start: s(12), End: s(15), Ready: s(12), Explains: true},
		{Kind: "outage", Detected: true, Start: s(12.004), Ready: s(13)},
		{Kind: "outage", Detected: true, Start: s(15), Ready: s(16)},
		{Kind: "outage", Detected: true, Start: s(16), Ready: s(17)},
		{Kind: "restart", Start: s(20), End: s(22)},
	}
	var got []string
	for _, e := range DropExplained(events) {
		got = append(got, fmt.Sprintf("%s@%v", e.Kind, e.Start.Seconds()))
	}
	if want := "deploy@10 backend@12 outage@16 restart@20"; strings.Join(got, " ") != want {
		t.Errorf("DropExplained: %s, want %s", strings.Join(got, " "), want)
	}
}

// A role's sampled connection peak is raised to the fleet's own peak
// (the timeline's), which sparse socket counts can miss, and the
// per-connection figures follow; a role whose sockets were not counted
// keeps none.
func TestSummaryPeakConnsFromTimeline(t *testing.T) {
	r := results.NewReport(time.Time{}, 10)
	r.Timeline.At(100 * time.Millisecond).Successes = 800
	r.Timeline.At(200 * time.Millisecond).Successes = 200 // 1,000 connected
	r.Timeline.At(300 * time.Millisecond).Disconnects[connerr.Closed1006] = 1000
	r.Timeline.At(400 * time.Millisecond).Successes = 900
	s := Summarize(Input{Report: r, End: time.Second, Resources: map[string]results.ResourceStats{
		results.RoleLoadgen:     {PeakRSSBytes: 2_000_000, PeakConns: 300, PeakSocketMemBytes: 30_000},
		results.RoleTarget:      {PeakRSSBytes: 1_000_000, PeakConns: 1200},
		results.RoleCoordinator: {PeakRSSBytes: 5_000_000},
	}})
	if lg := s.Resources[results.RoleLoadgen]; lg.PeakConns != 1000 || lg.RSSPerConnBytes != 2000 || lg.SocketMemPerConnBytes != 30 {
		t.Errorf("loadgen %+v: want peak_conns 1000 (the timeline's), 2000 B and 30 B per connection", lg)
	}
	if tg := s.Resources[results.RoleTarget]; tg.PeakConns != 1200 {
		t.Errorf("target peak_conns %d: a sampled peak above the timeline's stays", tg.PeakConns)
	}
	if co := s.Resources[results.RoleCoordinator]; co.PeakConns != 0 || co.RSSPerConnBytes != 0 {
		t.Errorf("coordinator %+v: no sockets counted, no per-connection figures", co)
	}
}
