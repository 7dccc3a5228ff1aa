package results

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/connerr"
)

// ms is a shorthand for offsets in the tables below.
func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func upAt(c uint32, at time.Duration) Transition   { return Transition{Client: c, At: at, Up: true} }
func downAt(c uint32, at time.Duration) Transition { return Transition{Client: c, At: at} }

// sec returns a pointer to s, for the nullable R figures.
func sec(s float64) *float64 { return &s }

// tick describes one timeline bucket by index.
type tick struct {
	i                int
	attempts, succ   uint32
	refused, timeout uint32
	closed1006       uint32
}

// timeline builds a Timeline from sparse bucket descriptions.
func timeline(ticks ...tick) Timeline {
	var tl Timeline
	for _, k := range ticks {
		b := tl.At(time.Duration(k.i) * Tick)
		b.Attempts += k.attempts
		b.Successes += k.succ
		b.Failures[connerr.Refused] += k.refused
		b.Failures[connerr.Timeout] += k.timeout
		b.Disconnects[connerr.Closed1006] += k.closed1006
	}
	return tl
}

// restartTen is a restart of a fleet of 10: all up at 0.05 s, all dropped
// at 1.000-1.009 s, target ready at 3 s, back one by one until 8 s.
func restartTen() (*Report, []Event) {
	r := NewReport(time.Time{}, 10)
	back := []int{3050, 3150, 3250, 3350, 3450, 4050, 4550, 5050, 6050, 8000}
	for c := range uint32(10) {
		r.Transitions = append(r.Transitions,
			upAt(c, ms(50)), downAt(c, ms(1000+int(c))), upAt(c, ms(back[c])))
	}
	slices.Reverse(r.Transitions) // any order: Recoveries sorts
	r.Timeline = timeline(
		tick{i: 0, attempts: 10, succ: 10}, // initial connects, before the event
		tick{i: 10, closed1006: 10},        // the drop
		tick{i: 20, attempts: 10, refused: 10},
		tick{i: 25, attempts: 4, refused: 4},
		// Herd window: buckets 30..80 (ready at 3.0 s, last back at 8.0 s).
		tick{i: 30, attempts: 10, succ: 1, timeout: 9},
		tick{i: 31, attempts: 9, succ: 1, timeout: 8},
		tick{i: 32, attempts: 8, succ: 1, timeout: 7},
		tick{i: 33, attempts: 7, succ: 1, timeout: 6},
		tick{i: 34, attempts: 6, succ: 1, timeout: 5},
		tick{i: 40, attempts: 5, succ: 1, timeout: 4},
		tick{i: 45, attempts: 4, succ: 1, timeout: 3},
		tick{i: 50, attempts: 3, succ: 1, timeout: 2},
		tick{i: 60, attempts: 2, succ: 1, timeout: 1},
		tick{i: 80, attempts: 1, succ: 1},
		tick{i: 90, attempts: 3, refused: 3}, // after recovery: not wasted
	)
	return r, []Event{{Kind: "restart", Mode: "abrupt", Start: ms(1000), End: ms(2900), Ready: ms(3000)}}
}

func TestRecoveries(t *testing.T) {
	tenR, tenE := restartTen()
	for _, tc := range []struct {
		name   string
		r      *Report
		events []Event
		end    time.Duration
		want   []Recovery
	}{{
		name: "restart of ten", r: tenR, events: tenE, end: ms(10000),
		want: []Recovery{{
			ConnectedBefore: 10, Recovered: 10,
			R50S:  sec(0.45), // 5th back at 3.45 s, ready at 3.0 s
			R90S:  sec(3.05), // 9th back at 6.05 s
			R99S:  sec(5),    // ceil(9.9) = 10th back at 8.0 s
			R100S: sec(5),
			// Buckets 30..80 are 51 windows holding 10+9+8+7+6+5+4+3+2+1
			// = 55 attempts; the peak is 10.
			HerdPeakPer100ms: 10, HerdPeakToMean: 10.0 * 51 / 55,
			// Failures in 30..80: 9+8+7+6+5+4+3+2+1 = 45, over 10 clients.
			WastedAttemptsPerClient: 4.5, WastedAttempts: 45,
			// Failures in 10..29: 10+4 refused.
			OutageAttemptsPerClient: 1.4, OutageAttempts: 14,
			OutageS: 2, WindowStartS: 3, WindowEndS: 8.1,
		}},
	}, {
		// Two events 4 s apart. Event 0: c2 returns only after event 1's
		// start and c3 never: 2 of 4 back. Event 1: c2 connected during it
		// so is not counted; c0 drops at exactly Start (counted), c1 never
		// drops (back at Start, clamped to Ready).
		name: "two events",
		r: &Report{
			Transitions: []Transition{
				upAt(0, 0), upAt(1, 0), upAt(2, 0), upAt(3, 0),
				downAt(0, ms(1000)), downAt(1, ms(1000)), downAt(2, ms(1000)), downAt(3, ms(1000)),
				upAt(0, ms(1600)), upAt(1, ms(2000)), upAt(2, ms(5200)),
				downAt(0, ms(5000)), upAt(0, ms(6000)),
			},
			Timeline: timeline(
				tick{i: 12, attempts: 4, refused: 4},
				tick{i: 16, attempts: 4, succ: 1, timeout: 3},
				tick{i: 20, attempts: 3, succ: 1, timeout: 2},
				tick{i: 30, attempts: 2, timeout: 2},
				tick{i: 49, attempts: 2, timeout: 2},
				tick{i: 50, attempts: 2, succ: 1, refused: 1},
				tick{i: 60, attempts: 1, succ: 1},
			),
		},
		events: []Event{
			{Kind: "restart", Start: ms(1000), Ready: ms(1500)},
			{Kind: "restart", Start: ms(5000), Ready: ms(5500)},
		},
		end: ms(10000),
		want: []Recovery{{
			Event: 0, ConnectedBefore: 4, Recovered: 2,
			R50S: sec(0.5), // 2nd back at 2.0 s; 4th never: null
			// Not all back: the window runs from bucket 15 to the cutoff at
			// 5 s, buckets 15..49 = 35 windows holding 4+3+2+2 = 11.
			HerdPeakPer100ms: 4, HerdPeakToMean: 4.0 * 35 / 11,
			WastedAttempts: 3 + 2 + 2 + 2, WastedAttemptsPerClient: 9.0 / 4,
			OutageAttempts: 4, OutageAttemptsPerClient: 1,
			OutageS: 0.5, WindowStartS: 1.5, WindowEndS: 5,
		}, {
			Event: 1, ConnectedBefore: 2, Recovered: 2,
			R50S: sec(0), R90S: sec(0.5), R99S: sec(0.5), R100S: sec(0.5),
			// Buckets 55..60 = 6 windows, one attempt in 60.
			HerdPeakPer100ms: 1, HerdPeakToMean: 6,
			OutageAttempts: 1, OutageAttemptsPerClient: 0.5,
			OutageS: 0.5, WindowStartS: 5.5, WindowEndS: 6.1,
		}},
	}, {
		// c0 never drops; c1 connects at exactly Start and c2 dropped
		// before it: only c0 was connected before, back at Start.
		name: "never down, not connected before",
		r: &Report{Transitions: []Transition{
			upAt(0, 0), upAt(1, ms(1000)), upAt(2, ms(500)), downAt(2, ms(800)),
		}},
		events: []Event{{Kind: "stall", Start: ms(1000), Ready: ms(1000)}},
		end:    ms(2000),
		want: []Recovery{{
			ConnectedBefore: 1, Recovered: 1,
			R50S: sec(0), R90S: sec(0), R99S: sec(0), R100S: sec(0),
			WindowStartS: 1, WindowEndS: 1.1, // one empty window: no herd
		}},
	}, {
		// A client that flaps counts at its first return.
		name: "flapping",
		r: &Report{Transitions: []Transition{
			upAt(0, 0), downAt(0, ms(1000)), upAt(0, ms(1200)), downAt(0, ms(1300)), upAt(0, ms(2000)),
		}},
		events: []Event{{Kind: "restart", Start: ms(1000), Ready: ms(1100)}},
		end:    ms(3000),
		want: []Recovery{{
			ConnectedBefore: 1, Recovered: 1,
			R50S: sec(0.1), R90S: sec(0.1), R99S: sec(0.1), R100S: sec(0.1),
			OutageS: 0.1, WindowStartS: 1.1, WindowEndS: 1.3,
		}},
	}, {
		// Nobody connected: nothing to recover, every R is 0.
		name:   "empty fleet",
		r:      &Report{},
		events: []Event{{Kind: "restart", Start: ms(1000), Ready: ms(2000)}},
		end:    ms(3000),
		want: []Recovery{{
			R50S: sec(0), R90S: sec(0), R99S: sec(0), R100S: sec(0),
			OutageS: 1, WindowStartS: 2, WindowEndS: 2.1,
		}},
	}, {
		// Ready unknown (zero): the clock starts at Start. The client never
		// returns and the run's end is derived from the timeline (bucket
		// 29 is the last: end 3 s), so the window is buckets 20..29.
		name: "ready unknown, never back, derived end",
		r: &Report{
			Transitions: []Transition{upAt(0, 0), downAt(0, ms(2000))},
			Timeline:    timeline(tick{i: 21, attempts: 2, refused: 2}, tick{i: 29, attempts: 1, refused: 1}),
		},
		events: []Event{{Kind: "outage", Start: ms(2000)}},
		want: []Recovery{{
			ConnectedBefore:  1,
			HerdPeakPer100ms: 2, HerdPeakToMean: 2.0 * 10 / 3,
			WastedAttempts: 3, WastedAttemptsPerClient: 3,
			WindowStartS: 2, WindowEndS: 3,
		}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := Recoveries(tc.r, tc.events, tc.end)
			if g, w := fmt.Sprintf("%+v", derefAll(got)), fmt.Sprintf("%+v", derefAll(tc.want)); g != w {
				t.Errorf("Recoveries =\n%s\nwant\n%s", g, w)
			}
		})
	}
}

// derefAll prints the R pointers as values (or null) so that values, not
// addresses, are compared and a mismatch reads.
func derefAll(rs []Recovery) []string {
	p := func(f *float64) string {
		if f == nil {
			return "null"
		}
		return fmt.Sprint(*f)
	}
	var out []string
	for _, r := range rs {
		rs := fmt.Sprintf(" R=%s/%s/%s/%s", p(r.R50S), p(r.R90S), p(r.R99S), p(r.R100S))
		r.R50S, r.R90S, r.R99S, r.R100S = nil, nil, nil, nil
		s := fmt.Sprintf("%+v", r) + rs
		out = append(out, s)
	}
	return out
}

// BenchmarkRecoveries is a bench-sized run: 50,000 clients, one restart,
// three transitions each, a 60 s timeline.
func BenchmarkRecoveries(b *testing.B) {
	r := NewReport(time.Time{}, 50000)
	for c := range uint32(50000) {
		r.Transitions = append(r.Transitions,
			upAt(c, ms(int(c%1000))), downAt(c, ms(10000)), upAt(c, ms(12000+int(c%20000))))
	}
	r.Timeline.At(60 * time.Second)
	events := []Event{{Kind: "restart", Start: ms(10000), Ready: ms(12000)}}
	b.ReportAllocs()
	for b.Loop() {
		Recoveries(r, events, 60*time.Second)
	}
}

// TestRecoveryWindowStartsAfterReady: a refusal in the bucket that holds
// Ready happened (for all the bucket says) before the target was ready, so
// it is an outage attempt, never a wasted one; the herd window starts at the
// next bucket boundary.
func TestRecoveryWindowStartsAfterReady(t *testing.T) {
	r := NewReport(time.Time{}, 2)
	r.Transitions = []Transition{
		upAt(0, ms(50)), upAt(1, ms(50)),
		downAt(0, ms(1000)), downAt(1, ms(1000)),
		upAt(0, ms(3150)), upAt(1, ms(3250)),
	}
	r.Timeline = timeline(
		tick{i: 0, attempts: 2, succ: 2},
		tick{i: 10, closed1006: 2},
		tick{i: 30, attempts: 2, refused: 2}, // at 3.00 s, ready at 3.02 s
		tick{i: 31, attempts: 1, succ: 1},
		tick{i: 32, attempts: 1, succ: 1},
	)
	ev := []Event{{Kind: "restart", Start: ms(1000), Ready: ms(3020)}}
	rec := Recoveries(r, ev, ms(5000))[0]
	if rec.OutageAttempts != 2 || rec.WastedAttempts != 0 {
		t.Errorf("outage %d, wasted %d; want 2 and 0", rec.OutageAttempts, rec.WastedAttempts)
	}
	if rec.WindowStartS != 3.1 || rec.WindowEndS != 3.3 {
		t.Errorf("window %v..%v; want 3.1..3.3", rec.WindowStartS, rec.WindowEndS)
	}
	if rec.HerdPeakPer100ms != 1 || rec.HerdPeakToMean != 1 {
		t.Errorf("herd %d, %v; want 1, 1", rec.HerdPeakPer100ms, rec.HerdPeakToMean)
	}
}
