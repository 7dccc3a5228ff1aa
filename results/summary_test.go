package results

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/connerr"
	"github.com/stampede-dev/stampede/results/track"
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
	r.Track = &track.Record{} // the message protocol ran: deliveries checked
	r.Stopped = map[string]Stopped{"tls": {Count: 1, LastError: "x509: certificate signed by unknown authority"}}
	// A backlog change at 0.5 s, given after the restart: Summarize orders
	// events by Start, so it becomes event 0.
	events = append(events, Event{Kind: "backlog", Spec: "at 500ms backlog 16", Start: 500 * time.Millisecond})
	return Input{
		RunID:      "2026-11-29T12-00-00Z-002a",
		Seed:       42,
		Config:     map[string]any{"clients": 10, "policy": "fixed:initial=1s"},
		Report:     r,
		Events:     events,
		End:        10 * time.Second,
		Kernel:     KernelDelta{ListenOverflows: 249, ListenDrops: 249, TCPSynRetrans: 249},
		KernelRead: true,
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

// A server that went away and never came back (a loadgen with nothing
// supervising it): the detected outage has no ready time, its refusals
// are outage attempts, none is wasted, and an R gate fails saying that
// recovery never happened. Ready was once the outage's own Start, which
// made every refusal a wasted herd attempt and R figures null only by luck.
func TestSummarizeNeverReady(t *testing.T) {
	r := NewReport(time.Time{}, 4)
	r.Transitions = concat(fleet(4), []Transition{downAt(0, ms(1000)), downAt(1, ms(1000)), downAt(2, ms(1001)), downAt(3, ms(1002))})
	for _, at := range []int{1000, 1500, 2000, 2500} {
		b := r.Timeline.At(ms(at))
		b.Attempts += 4
		b.Failures[connerr.Refused] += 4
	}
	s := Summarize(Input{Report: r, Events: DetectOutages(r, DetectConfig{}), End: 3 * time.Second})
	if len(s.Events) != 1 || s.Events[0].ReadyS != nil || s.Events[0].OutageS != nil {
		t.Fatalf("events = %+v; want one outage, ready and outage null", s.Events)
	}
	want := Recovery{ConnectedBefore: 4, Disconnected: 4, StillRetrying: 4, OutageAttempts: u64(16), OutageAttemptsPerClient: f(4), MeasuredFrom: MeasuredNone,
		Note: "not ready again before the run's end at 3.00s: 0 of 4 back by then, no R figure"}
	if g, w := showAll(s.Recovery), showAll([]Recovery{want}); g != w {
		t.Errorf("recovery =\n%s\nwant\n%s", g, w)
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"ready_s":null`, `"wasted_attempts":null`, `"outage_attempts":16`, `"r99_s":null`} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("summary.json lacks %s", want)
		}
	}
	slos, err := ParseSLOs([]string{"r99<10s", "wasted_attempts<1", "outage_attempts<=4"})
	if err != nil {
		t.Fatal(err)
	}
	never := "recovery never happened: the target was not ready again after event 0 (outage (detected) at 1.00s) before the run ended"
	for i, want := range []string{
		"SLO r99<10s: FAIL (r99 = null: " + never + ")",
		"SLO wasted_attempts<1: FAIL (wasted_attempts = null: " + never + ")",
		"SLO outage_attempts<=4: pass (outage_attempts = 4)",
	} {
		if got := slos[i].Eval(s).Line(); got != want {
			t.Errorf("%s\nwant %s", got, want)
		}
	}
	var text bytes.Buffer
	if err := s.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"outage (detected)  1.00s  never  0/4  0  never  never  never  never  -  -  -  4.00"} {
		if !bytes.Contains(bytes.Join(bytes.Fields(text.Bytes()), []byte(" ")), bytes.Join(bytes.Fields([]byte(want)), []byte(" "))) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
}

// The text summary shows an event with nobody to recover as dashes, not
// as 0/0 with R figures of 0.00s.
func TestWriteTextNobodyToRecover(t *testing.T) {
	r := NewReport(time.Time{}, 2)
	r.Transitions = concat(fleet(2), dropAll(2, ms(3000), ms(1), ms(4000)))
	events := []Event{
		{Kind: "restart", Mode: "abrupt", Start: ms(3000), Ready: ms(4200)},
		{Kind: "reject", Mode: "503", Start: ms(4000), End: ms(7000), Ready: ms(7000)},
	}
	var b bytes.Buffer
	if err := Summarize(Input{Report: r, Events: events, End: ms(15000)}).WriteText(&b); err != nil {
		t.Fatal(err)
	}
	text := strings.Join(strings.Fields(b.String()), " ")
	for _, want := range []string{
		"restart abrupt 3.00s 4.20s 2/2 0 2.80s 2.80s 2.80s 2.80s 0 0.0 0.00 0.00",
		"reject 503 4.00s 7.00s 0/0 0 - - - - - - - -",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, b.String())
		}
	}
}

// The text summary prints the delivery check's figures when the protocol
// ran, says they were not checked when it did not, and shows kernel
// counters that were not read as "-" with the reason.
func TestWriteTextUnmeasured(t *testing.T) {
	for _, tc := range []struct {
		name string
		sum  Summary
		want []string
	}{
		{"tracked", Summary{Messages: Messages{Sent: 5, Acked: 5, Expected: 8, Received: 7, Lost: 1, Unsynced: 2, Unacked: 3, BadFrames: 4, Tracked: true},
			KernelRead: true, Kernel: KernelDelta{ListenOverflows: 7}},
			[]string{"messages: sent 5, acked 5, retried 0, dup_suppressed 0, dup_delivered 0, lost 1, resumed 0",
				"deliveries: expected 8, received 7, unsynced 2, unacked 3, bad_frames 4,",
				"kernel: ListenOverflows 7,"}},
		{"echo, foreign kernel", Summary{Messages: Messages{Sent: 5, Delivered: 5}, KernelNote: "the target listens on another host (10.0.0.7)"},
			[]string{"messages: sent 5, delivered 5; deliveries not checked (no message protocol): lost, unsynced, unacked, bad_frames -",
				"kernel: - (the target listens on another host (10.0.0.7))"}},
		{"kernel not read", Summary{}, []string{"kernel: - (the kernel counters were not read)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := tc.sum.WriteText(&b); err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("text lacks %q:\n%s", w, b.String())
				}
			}
		})
	}
}

// TestDropExplained: a detected outage starting within an explaining
// event's span goes; one outside it, and every told event, stay.
func TestDropExplained(t *testing.T) {
	s := func(d float64) time.Duration { return time.Duration(d * float64(time.Second)) }
	events := []Event{
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

// The terminal summary gives each role's memory per connection when its
// sockets were counted, and leaves it out otherwise.
func TestWriteTextPerConnection(t *testing.T) {
	s := &Summary{Resources: map[string]ResourceStats{
		RoleTarget:      {PeakRSSBytes: 100 << 20, Processes: 2, PeakConns: 102400, PeakSocketMemBytes: 409600, CPUUsPerConnect: ptrTo(41.25)},
		RoleCoordinator: {PeakRSSBytes: 30 << 20, Processes: 1},
	}}
	for role, r := range s.Resources {
		r.PerConn()
		s.Resources[role] = r
	}
	var b strings.Builder
	if err := s.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.Contains(out, "target: peak RSS 100.0 MiB, CPU 0.0s, peak fds 0, 2 process(es); per connection (102400): RSS 1024 B, kernel socket buffers 4 B; CPU per connect 41.2 µs, per reconnect -\n") {
		t.Errorf("target line missing or wrong:\n%s", out)
	}
	if !strings.Contains(out, "coordinator: peak RSS 30.0 MiB, CPU 0.0s, peak fds 0, 1 process(es)\n") {
		t.Errorf("coordinator line missing or wrong:\n%s", out)
	}
}

// A role's sampled connection peak is raised to the fleet's own peak
// (the timeline's), which sparse socket counts can miss, and the
// per-connection figures follow; a role whose sockets were not counted
// keeps none.
func TestSummaryPeakConnsFromTimeline(t *testing.T) {
	r := NewReport(time.Time{}, 10)
	r.Timeline.At(100 * time.Millisecond).Successes = 800
	r.Timeline.At(200 * time.Millisecond).Successes = 200 // 1,000 connected
	r.Timeline.At(300 * time.Millisecond).Disconnects[connerr.Closed1006] = 1000
	r.Timeline.At(400 * time.Millisecond).Successes = 900
	s := Summarize(Input{Report: r, End: time.Second, Resources: map[string]ResourceStats{
		RoleLoadgen:     {PeakRSSBytes: 2_000_000, PeakConns: 300, PeakSocketMemBytes: 30_000},
		RoleTarget:      {PeakRSSBytes: 1_000_000, PeakConns: 1200},
		RoleCoordinator: {PeakRSSBytes: 5_000_000},
	}})
	if lg := s.Resources[RoleLoadgen]; lg.PeakConns != 1000 || lg.RSSPerConnBytes != 2000 || lg.SocketMemPerConnBytes != 30 {
		t.Errorf("loadgen %+v: want peak_conns 1000 (the timeline's), 2000 B and 30 B per connection", lg)
	}
	if tg := s.Resources[RoleTarget]; tg.PeakConns != 1200 {
		t.Errorf("target peak_conns %d: a sampled peak above the timeline's stays", tg.PeakConns)
	}
	if co := s.Resources[RoleCoordinator]; co.PeakConns != 0 || co.RSSPerConnBytes != 0 {
		t.Errorf("coordinator %+v: no sockets counted, no per-connection figures", co)
	}
}
