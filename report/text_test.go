package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/connerr"
	"github.com/stampede-dev/stampede/internal/resultstest"
	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/results/slo"
	"github.com/stampede-dev/stampede/results/summary"
)

// A server that went away and never came back (a loadgen with nothing
// supervising it): the detected outage has no ready time, its refusals
// are outage attempts, none is wasted, and an R gate fails saying that
// recovery never happened. Ready was once the outage's own Start, which
// made every refusal a wasted herd attempt and R figures null only by luck.
func TestSummarizeNeverReady(t *testing.T) {
	r := results.NewReport(time.Time{}, 4)
	r.Transitions = resultstest.Concat(resultstest.Fleet(4), []results.Transition{resultstest.DownAt(0, resultstest.Ms(1000)), resultstest.DownAt(1, resultstest.Ms(1000)), resultstest.DownAt(2, resultstest.Ms(1001)), resultstest.DownAt(3, resultstest.Ms(1002))})
	for _, at := range []int{1000, 1500, 2000, 2500} {
		b := r.Timeline.At(resultstest.Ms(at))
		b.Attempts += 4
		b.Failures[connerr.Refused] += 4
	}
	s := summary.Summarize(summary.Input{Report: r, Events: summary.DetectOutages(r, summary.DetectConfig{}), End: 3 * time.Second})
	if len(s.Events) != 1 || s.Events[0].ReadyS != nil || s.Events[0].OutageS != nil {
		t.Fatalf("events = %+v; want one outage, ready and outage null", s.Events)
	}
	want := summary.Recovery{ConnectedBefore: 4, Disconnected: 4, StillRetrying: 4, OutageAttempts: resultstest.U64(16), OutageAttemptsPerClient: resultstest.F(4), MeasuredFrom: summary.MeasuredNone,
		Note: "not ready again before the run's end at 3.00s: 0 of 4 back by then, no R figure"}
	if g, w := resultstest.ShowAll(s.Recovery), resultstest.ShowAll([]summary.Recovery{want}); g != w {
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
	slos, err := slo.ParseSLOs([]string{"r99<10s", "wasted_attempts<1", "outage_attempts<=4"})
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
	if err := WriteText(&text, s); err != nil {
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
	r := results.NewReport(time.Time{}, 2)
	r.Transitions = resultstest.Concat(resultstest.Fleet(2), resultstest.DropAll(2, resultstest.Ms(3000), resultstest.Ms(1), resultstest.Ms(4000)))
	events := []results.Event{
		{Kind: "restart", Mode: "abrupt", Start: resultstest.Ms(3000), Ready: resultstest.Ms(4200)},
		{Kind: "reject", Mode: "503", Start: resultstest.Ms(4000), End: resultstest.Ms(7000), Ready: resultstest.Ms(7000)},
	}
	var b bytes.Buffer
	if err := WriteText(&b, summary.Summarize(summary.Input{Report: r, Events: events, End: resultstest.Ms(15000)})); err != nil {
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
		sum  summary.Summary
		want []string
	}{
		{"tracked", summary.Summary{Messages: results.Messages{Sent: 5, Acked: 5, Expected: 8, Received: 7, Lost: 1, Unsynced: 2, Unacked: 3, BadFrames: 4, Tracked: true},
			KernelRead: true, Kernel: results.KernelDelta{ListenOverflows: 7}},
			[]string{"messages: sent 5, acked 5, retried 0, dup_suppressed 0, dup_delivered 0, lost 1, resumed 0",
				"deliveries: expected 8, received 7, unsynced 2, unacked 3, bad_frames 4,",
				"kernel: ListenOverflows 7,"}},
		{"echo, foreign kernel", summary.Summary{Messages: results.Messages{Sent: 5, Delivered: 5}, KernelNote: "the target listens on another host (10.0.0.7)"},
			[]string{"messages: sent 5, delivered 5; deliveries not checked (no message protocol): lost, unsynced, unacked, bad_frames -",
				"kernel: - (the target listens on another host (10.0.0.7))"}},
		{"kernel not read", summary.Summary{}, []string{"kernel: - (the kernel counters were not read)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteText(&b, &tc.sum); err != nil {
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

// The terminal summary gives each role's memory per connection when its
// sockets were counted, and leaves it out otherwise.
func TestWriteTextPerConnection(t *testing.T) {
	s := &summary.Summary{Resources: map[string]results.ResourceStats{
		results.RoleTarget:      {PeakRSSBytes: 100 << 20, Processes: 2, PeakConns: 102400, PeakSocketMemBytes: 409600, CPUUsPerConnect: new(41.25)},
		results.RoleCoordinator: {PeakRSSBytes: 30 << 20, Processes: 1},
	}}
	for role, r := range s.Resources {
		r.PerConn()
		s.Resources[role] = r
	}
	var b strings.Builder
	if err := WriteText(&b, s); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.Contains(out, "target: peak RSS 100.0 MiB, CPU 0.0s, peak fds 0, 2 process(es); per connection (102400): RSS 1024 B, kernel socket buffers 4 B; CPU per connect 41.2 µs, per reconnect -\n") {
		t.Errorf("target line missing or wrong:\n%s", out)
	}
	if !strings.Contains(out, "coordinator: peak RSS 30.0 MiB, CPU 0.0s, peak fds 0, 1 process(es)\n") {
		t.Errorf("coordinator line missing or wrong:\n%s", out)
	}
	if strings.Contains(out, "TLS handshakes") {
		t.Errorf("a ws:// target with TLS handshakes:\n%s", out)
	}
	s.TLSHandshakes = map[string]results.TLSHandshakes{results.RoleTarget: results.NewTLSHandshakes(10, 90, 15000, 27000)}
	b.Reset()
	if err := WriteText(&b, s); err != nil {
		t.Fatal(err)
	}
	if want := "per reconnect -\n  TLS handshakes: 10 full (CPU 1.5 µs each), 90 resumed (CPU 0.3 µs each)\ncoordinator"; !strings.Contains(b.String(), want) {
		t.Errorf("text =\n%s\nwant %q", b.String(), want)
	}
}

// TestWriteTextSimulated: a simulated summary says so on its first line
// and on every line that would read as a measurement (the kernel's
// counters, the processes); a real one says nothing of the kind.
func TestWriteTextSimulated(t *testing.T) {
	for _, sim := range []bool{false, true} {
		s := &summary.Summary{RunID: "r", Seed: 1, Clients: 10, Processes: 1, DurationS: 5, Simulated: sim, KernelRead: true,
			Resources: map[string]results.ResourceStats{results.RoleLoadgen: {Processes: 1}}}
		var b bytes.Buffer
		if err := WriteText(&b, s); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(b.String(), "\n")
		for _, l := range lines {
			measured := strings.HasPrefix(l, "run ") || strings.HasPrefix(l, "kernel") || strings.HasPrefix(l, results.RoleLoadgen)
			if measured && sim && !strings.Contains(l, "simulated") {
				t.Errorf("simulated summary: %q reads as a measurement", l)
			}
			if !sim && strings.Contains(l, "simulated") {
				t.Errorf("real summary: %q", l)
			}
		}
		if sim && (!strings.HasPrefix(lines[0], "simulated run r ") || !strings.Contains(b.String(), "\nkernel (simulated): ListenOverflows") ||
			!strings.Contains(b.String(), "\nloadgen (simulated): ")) {
			t.Errorf("simulated summary:\n%s", b.String())
		}
	}
}

// A wss:// event's line says how many of its reconnects resumed their TLS
// session; a ws:// event has none.
func TestWriteTextEventTLS(t *testing.T) {
	s := &summary.Summary{Events: []summary.EventSummary{
		{Kind: "deploy", Mode: "command", TLSFull: 3, TLSResumed: 97},
		{Kind: "restart", Mode: "abrupt"},
	}}
	var b bytes.Buffer
	if err := WriteText(&b, s); err != nil {
		t.Fatal(err)
	}
	want := "  event 0: TLS handshakes of the connects from it on: 3 full, 97 resumed (97.0% resumed)\n"
	if !strings.Contains(b.String(), want) {
		t.Errorf("text =\n%s\nwant a line %q", b.String(), want)
	}
	if strings.Count(b.String(), "TLS handshakes") != 1 {
		t.Errorf("text =\n%s\nwant one TLS line (the ws:// event has none)", b.String())
	}
}
