package summary

import (
	"testing"
	"time"

	"github.com/stampede-dev/stampede/results"
)

func fptr(f float64) *float64 { return &f }

func fstr(f *float64) string {
	if f == nil {
		return "null"
	}
	return time.Duration(*f * 1e3).String() // µs as ns: exact to 0.001 µs
}

// TestCPUPerConnect checks the arithmetic: CPU between the samples
// nearest each end of a span (the first after the ramp's end), over its
// divisor, in µs; null for a 0 divisor or an end the sampler missed.
func TestCPUPerConnect(t *testing.T) {
	s := time.Second
	// Samples at -0.3 s, 0.7 s, ... every second; the CPU grows 0.5 s a
	// second to 10.7 s, then 2 s a second (the herd), then not at all.
	var pts []CPUPoint
	cpu := 1.0
	for at := -300 * time.Millisecond; at < 30*s; at += s {
		pts = append(pts, CPUPoint{At: at, CPUSeconds: cpu})
		switch {
		case at < 10*s:
			cpu += 0.5
		case at < 20*s:
			cpu += 2
		}
	}
	// The first connects: 1,000 in a ramp that ends at 3.05 s, an idle
	// (pinging) fleet until the event at 10.2 s, 5 after it.
	flow := results.Flow{{Step: 100, Firsts: 400}, {Step: 3049, Firsts: 600}, {Step: 10200, Firsts: 5}}
	events := []results.Event{{Kind: "restart", Start: 10200 * time.Millisecond, End: 12 * s, Ready: 12500 * time.Millisecond}}
	recs := []Recovery{{ConnectedBefore: 1000, Disconnected: 990, Recovered: 1000, NeverDown: 10, WindowEndS: fptr(19.9)}}
	sp := cpuSpans(flow, nil, events, recs, 30*s)
	if sp.FirstConnects != 1000 || sp.Reconnects != 990 || sp.ConnectEnd != 3050*time.Millisecond ||
		sp.ReconnectStart != 10200*time.Millisecond || sp.ReconnectEnd != 19900*time.Millisecond {
		t.Fatalf("spans %+v", sp)
	}
	conn, reconn := sp.PerConnect(pts)
	// Connect span: samples at -0.3 s (1.0) and 3.7 s, the first after
	// the ramp (3.0): 2 s / 1,000 = 2,000 µs; the idle fleet's 3 s to the
	// event are left out. Reconnect span: 9.7 s (6.0) to 19.7 s (6.5 + 9
	// × 2 = 24.5): 18.5 s / 990 = 18,686.9 µs.
	if fstr(conn) != fstr(fptr(2000)) || fstr(reconn) != fstr(fptr(18686.9)) {
		t.Errorf("per connect %s, per reconnect %s; want 2000 and 18686.9 µs", fstr(conn), fstr(reconn))
	}
	// 99 % back 4.2 s after ready (16.7 s), the last 1 % by 19.9 s: the
	// span ends at 16.7 s over the 990 - 10 back by then. Samples 9.7 s
	// (6.0) and 16.7 s (6.5 + 6 × 2 = 18.5): 12.5 s / 980 = 12,755.1 µs.
	tail := []Recovery{recs[0]}
	tail[0].R99S = fptr(4.2)
	sp = cpuSpans(flow, nil, events, tail, 30*s)
	if _, reconn = sp.PerConnect(pts); sp.ReconnectEnd != 16700*time.Millisecond || sp.Reconnects != 980 || fstr(reconn) != fstr(fptr(12755.1)) {
		t.Errorf("a slow last 1 %%: span to %v over %d, per reconnect %s; want 16.7 s, 980, 12755.1 µs", sp.ReconnectEnd, sp.Reconnects, fstr(reconn))
	}
	// 99 % back only as the window ends (19.9 s): the window is the span.
	tail[0].R99S = fptr(7.4)
	if sp = cpuSpans(flow, nil, events, tail, 30*s); sp.ReconnectEnd != 19900*time.Millisecond || sp.Reconnects != 990 {
		t.Errorf("99 %% back at the window's end: span to %v over %d; want 19.9 s, 990", sp.ReconnectEnd, sp.Reconnects)
	}

	// No sample within a second after the ramp's end: null.
	var late []CPUPoint
	for _, p := range pts {
		if p.At < 3*s || p.At > 5*s {
			late = append(late, p)
		}
	}
	if conn, _ = sp.PerConnect(late); conn != nil {
		t.Errorf("ramp's end unsampled: per connect %s; want null", fstr(conn))
	}

	// No event: the ramp runs to the run's last first connect, no
	// reconnect figure.
	sp = cpuSpans(flow, nil, nil, nil, 30*s)
	conn, reconn = sp.PerConnect(pts)
	if sp.FirstConnects != 1005 || sp.ConnectEnd != 10201*time.Millisecond || conn == nil || reconn != nil {
		t.Errorf("no event: %+v, per connect %s, per reconnect %s", sp, fstr(conn), fstr(reconn))
	}

	// Nobody came back: null; nobody connected: null.
	sp = cpuSpans(nil, nil, events, []Recovery{{ConnectedBefore: 10, NeverDown: 10, Recovered: 10}}, 30*s)
	if conn, reconn = sp.PerConnect(pts); conn != nil || reconn != nil {
		t.Errorf("no divisor: per connect %s, per reconnect %s; want null", fstr(conn), fstr(reconn))
	}

	// A gap in the samples around the ramp's end and the event (none
	// within a second of either): both figures null, and the reconnect
	// span runs to the run's end without a herd window.
	var gap []CPUPoint
	for _, p := range pts {
		if p.At < 3*s || p.At > 12*s {
			gap = append(gap, p)
		}
	}
	sp = cpuSpans(flow, nil, events, []Recovery{{Recovered: 5, NeverDown: 0}}, 30*s)
	if sp.ReconnectEnd != 30*s {
		t.Errorf("reconnect span ends at %v, want the run's end", sp.ReconnectEnd)
	}
	if conn, reconn = sp.PerConnect(gap); conn != nil || reconn != nil {
		t.Errorf("unsampled: per connect %s, per reconnect %s; want null", fstr(conn), fstr(reconn))
	}
	if _, ok := cpuAt(nil, 0); ok {
		t.Error("cpuAt of no samples: sampled")
	}
}

// TestCPUPerAttempt checks the herd's figures: the reconnect span's CPU
// over the attempts started in it, and the CPU from the event to ready
// over the connections that ended in that span.
func TestCPUPerAttempt(t *testing.T) {
	s := time.Second
	var pts []CPUPoint // as TestCPUPerConnect's: 0.5 s a second to 10.7 s, then 2 s a second to 19.7 s
	cpu := 1.0
	for at := -300 * time.Millisecond; at < 30*s; at += s {
		pts = append(pts, CPUPoint{At: at, CPUSeconds: cpu})
		switch {
		case at < 10*s:
			cpu += 0.5
		case at < 20*s:
			cpu += 2
		}
	}
	tl := make(results.Timeline, 300)
	for b := 90; b < 250; b++ { // 10 attempts every 100 ms from 9 s to 25 s
		tl[b].Attempts = 10
	}
	tl[102].Disconnects[1] = 990 // at the event
	tl[130].Disconnects[1] = 7   // after ready: not a close of the outage
	events := []results.Event{{Kind: "restart", Start: 10200 * time.Millisecond, End: 12 * s, Ready: 12500 * time.Millisecond}}
	recs := []Recovery{{ConnectedBefore: 1000, Disconnected: 990, Recovered: 1000, NeverDown: 10, WindowEndS: fptr(19.9)}}
	sp := cpuSpans(nil, tl, events, recs, 30*s)
	// Attempts of buckets 102..198 (10.2 s to 19.8 s): 97 × 10.
	if sp.Attempts != 970 || sp.Closes != 990 || sp.CloseEnd != 12500*time.Millisecond {
		t.Fatalf("spans %+v; want 970 attempts, 990 closes, close span to 12.5 s", sp)
	}
	att, cl := sp.PerAttempt(pts)
	// Attempts: 9.7 s (6.0) to 19.7 s (24.5): 18.5 s / 970 = 19,072.2 µs.
	// Closes: 9.7 s (6.0) to 12.7 s (10.5): 4.5 s / 990 = 4,545.5 µs.
	if fstr(att) != fstr(fptr(19072.2)) || fstr(cl) != fstr(fptr(4545.5)) {
		t.Errorf("per attempt %s, per close %s; want 19072.2 and 4545.5 µs", fstr(att), fstr(cl))
	}
	// No event: neither; never ready: no close figure.
	if a, c := cpuSpans(nil, tl, nil, nil, 30*s).PerAttempt(pts); a != nil || c != nil {
		t.Errorf("no event: per attempt %s, per close %s; want null", fstr(a), fstr(c))
	}
	never := []results.Event{{Kind: "restart", Start: 10200 * time.Millisecond, End: 12 * s, NeverReady: true}}
	if a, c := cpuSpans(nil, tl, never, recs, 30*s).PerAttempt(pts); a == nil || c != nil {
		t.Errorf("never ready: per attempt %s, per close %s; want a figure and null", fstr(a), fstr(c))
	}
}
