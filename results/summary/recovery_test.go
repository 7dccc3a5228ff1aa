package summary

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/connerr"
	"github.com/stampede-dev/stampede/results"
)

// ms is a shorthand for offsets in the tables below.
func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func upAt(c uint32, at time.Duration) results.Transition {
	return results.Transition{Client: c, At: at, Up: true}
}
func downAt(c uint32, at time.Duration) results.Transition {
	return results.Transition{Client: c, At: at}
}

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
func timeline(ticks ...tick) results.Timeline {
	var tl results.Timeline
	for _, k := range ticks {
		b := tl.At(time.Duration(k.i) * results.Tick)
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
func restartTen() (*results.Report, []results.Event) {
	r := results.NewReport(time.Time{}, 10)
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
	return r, []results.Event{{Kind: "restart", Mode: "abrupt", Start: ms(1000), End: ms(2900), Ready: ms(3000)}}
}

// f, u32 and u64 return pointers, for the nullable figures.
func f(v float64) *float64 { return &v }
func u32(v uint32) *uint32 { return &v }
func u64(v uint64) *uint64 { return &v }

// measured fills the herd and attempt figures of a Recovery in the tables
// below: peak and ratio, wasted and outage attempts, ConnectedBefore n,
// the window.
func measured(r Recovery, peak uint32, ratio float64, wasted, outage uint64, winStart, winEnd float64) Recovery {
	n := float64(r.ConnectedBefore)
	r.HerdPeakPer100ms, r.HerdPeakToMean = u32(peak), f(ratio)
	r.WastedAttempts, r.WastedAttemptsPerClient = u64(wasted), f(float64(wasted)/n)
	r.OutageAttempts, r.OutageAttemptsPerClient = u64(outage), f(float64(outage)/n)
	r.WindowStartS, r.WindowEndS = f(winStart), f(winEnd)
	return r
}

func TestRecoveries(t *testing.T) {
	tenR, tenE := restartTen()
	for _, tc := range []struct {
		name   string
		r      *results.Report
		events []results.Event
		end    time.Duration
		want   []Recovery
	}{{
		name: "restart of ten", r: tenR, events: tenE, end: ms(10000),
		want: []Recovery{measured(Recovery{
			ConnectedBefore: 10, Disconnected: 10, Recovered: 10,
			R50S:    sec(0.45), // 5th back at 3.45 s, ready at 3.0 s
			R90S:    sec(3.05), // 9th back at 6.05 s
			R99S:    sec(5),    // ceil(9.9) = 10th back at 8.0 s
			R100S:   sec(5),
			OutageS: f(2),
		},
			// Buckets 30..80 are 51 windows holding 10+9+8+7+6+5+4+3+2+1
			// = 55 attempts; the peak is 10.
			10, 10.0*51/55,
			// Failures in 30..80: 9+8+7+6+5+4+3+2+1 = 45; in 10..29: 10+4
			// refused.
			45, 14, 3, 8.1)},
	}, {
		// Two events 4 s apart. Event 0: c2 returns only after event 1's
		// start, which counts (the run's end is the cutoff, not the next
		// event), and c3 never: 3 of 4 back. Event 1: c2 connected during
		// it so is not counted; c0 drops at exactly Start (counted), c1
		// never drops (back at Start, clamped to Ready).
		name: "two events",
		r: &results.Report{
			Transitions: []results.Transition{
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
		events: []results.Event{
			{Kind: "restart", Start: ms(1000), Ready: ms(1500)},
			{Kind: "restart", Start: ms(5000), Ready: ms(5500)},
		},
		end: ms(10000),
		want: []Recovery{measured(Recovery{
			Event: 0, ConnectedBefore: 4, Disconnected: 4, Recovered: 3, StillRetrying: 1,
			R50S:    sec(0.5), // 2nd back at 2.0 s; 4th never: null
			OutageS: f(0.5),
		},
			// Not all back: the window runs from bucket 15 to the run's
			// end at 10 s, buckets 15..99 = 85 windows holding
			// 4+3+2+2+2+1 = 14.
			4, 4.0*85/14, 3+2+2+2+1, 4, 1.5, 10),
			measured(Recovery{
				Event: 1, ConnectedBefore: 2, Disconnected: 1, Recovered: 2, NeverDown: 1,
				R50S: sec(0), R90S: sec(0.5), R99S: sec(0.5), R100S: sec(0.5),
				OutageS: f(0.5),
			},
				// Buckets 55..60 = 6 windows, one attempt in 60.
				1, 6, 0, 1, 5.5, 6.1)},
	}, {
		// c0 never drops; c1 connects at exactly Start and c2 dropped
		// before it: only c0 was connected before, and it stayed: nobody
		// to recover, nothing measured.
		name: "never down, not connected before",
		r: &results.Report{Transitions: []results.Transition{
			upAt(0, 0), upAt(1, ms(1000)), upAt(2, ms(500)), downAt(2, ms(800)),
		}},
		events: []results.Event{{Kind: "stall", Start: ms(1000), Ready: ms(1000)}},
		end:    ms(2000),
		want:   []Recovery{{ConnectedBefore: 1, Recovered: 1, NeverDown: 1, OutageS: f(0)}},
	}, {
		// A client that flaps counts at its first return.
		name: "flapping",
		r: &results.Report{Transitions: []results.Transition{
			upAt(0, 0), downAt(0, ms(1000)), upAt(0, ms(1200)), downAt(0, ms(1300)), upAt(0, ms(2000)),
		}},
		events: []results.Event{{Kind: "restart", Start: ms(1000), Ready: ms(1100)}},
		end:    ms(3000),
		want: []Recovery{measured(Recovery{
			ConnectedBefore: 1, Disconnected: 1, Recovered: 1,
			R50S: sec(0.1), R90S: sec(0.1), R99S: sec(0.1), R100S: sec(0.1),
			OutageS: f(0.1),
		}, 0, 0, 0, 0, 1.1, 1.3)},
	}, {
		// Nobody connected: nothing to recover, every figure null, never
		// 0.
		name:   "empty fleet",
		r:      &results.Report{},
		events: []results.Event{{Kind: "restart", Start: ms(1000), Ready: ms(2000)}},
		end:    ms(3000),
		want:   []Recovery{{OutageS: f(1)}},
	}, {
		// Ready unknown (zero): the clock starts at Start. The client never
		// returns and the run's end is derived from the timeline (bucket
		// 29 is the last: end 3 s), so the window is buckets 20..29.
		name: "ready unknown, never back, derived end",
		r: &results.Report{
			Transitions: []results.Transition{upAt(0, 0), downAt(0, ms(2000))},
			Timeline:    timeline(tick{i: 21, attempts: 2, refused: 2}, tick{i: 29, attempts: 1, refused: 1}),
		},
		events: []results.Event{{Kind: "outage", Start: ms(2000)}},
		want: []Recovery{measured(Recovery{ConnectedBefore: 1, Disconnected: 1, StillRetrying: 1, OutageS: f(0)},
			2, 2.0*10/3, 3, 0, 2, 3)},
	}, {
		// The same, never ready (a detected outage nobody came back
		// after): no clock to start, no herd window; every failure to the
		// run's end is an outage attempt, none is wasted.
		name: "never ready",
		r: &results.Report{
			Transitions: []results.Transition{upAt(0, 0), downAt(0, ms(2000))},
			Timeline:    timeline(tick{i: 21, attempts: 2, refused: 2}, tick{i: 29, attempts: 1, refused: 1}),
		},
		events: []results.Event{{Kind: "outage", Start: ms(2000), Detected: true, NeverReady: true}},
		want: []Recovery{{ConnectedBefore: 1, Disconnected: 1, StillRetrying: 1,
			OutageAttempts: u64(3), OutageAttemptsPerClient: f(3)}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := Recoveries(tc.r, tc.events, tc.end)
			if g, w := showAll(got), showAll(tc.want); g != w {
				t.Errorf("Recoveries =\n%s\nwant\n%s", g, w)
			}
		})
	}
}

// showAll prints recoveries with every pointer as its value (or null), so
// that values, not addresses, are compared and a mismatch reads.
func showAll(rs []Recovery) string {
	var b strings.Builder
	for _, r := range rs {
		v := reflect.ValueOf(r)
		for i := range v.NumField() {
			fv := v.Field(i)
			s := "null"
			if fv.Kind() != reflect.Pointer {
				s = fmt.Sprint(fv.Interface())
			} else if !fv.IsNil() {
				s = fmt.Sprint(fv.Elem().Interface())
			}
			fmt.Fprintf(&b, "%s=%s ", v.Type().Field(i).Name, s)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// Events close together (docs/chaos.md's recipe): a restart at 3 s, ready
// at 4.2 s, and a reject from 4 s to 7 s while every client is still
// away. The restart's clients are measured until they are back (10 s),
// past the reject's start; the reject had nobody connected before it, so
// its figures are null, not 0.
func TestRecoveryEventsCloseTogether(t *testing.T) {
	r := results.NewReport(time.Time{}, 4)
	back := []int{7500, 8000, 9000, 10000}
	for c := range uint32(4) {
		r.Transitions = append(r.Transitions, upAt(c, ms(100)), downAt(c, ms(3000+int(c))), upAt(c, ms(back[c])))
	}
	r.Timeline = timeline(
		tick{i: 1, attempts: 4, succ: 4},
		tick{i: 30, closed1006: 4},
		tick{i: 35, attempts: 4, refused: 4},
		tick{i: 50, attempts: 4, refused: 4},          // 503s, counted as refused here
		tick{i: 75, attempts: 4, succ: 1, refused: 3}, // the reject over: back one by one
		tick{i: 80, attempts: 3, succ: 1, refused: 2},
		tick{i: 90, attempts: 2, succ: 1, refused: 1},
		tick{i: 100, attempts: 1, succ: 1},
	)
	events := []results.Event{
		{Kind: "restart", Mode: "abrupt", Start: ms(3000), End: ms(4000), Ready: ms(4200)},
		{Kind: "reject", Mode: "503", Start: ms(4000), End: ms(7000), Ready: ms(7000)},
	}
	got := Recoveries(r, events, ms(15000))
	want := []Recovery{
		measured(Recovery{Event: 0, ConnectedBefore: 4, Disconnected: 4, Recovered: 4,
			R50S: sec(3.8), R90S: sec(5.8), R99S: sec(5.8), R100S: sec(5.8), OutageS: f(1.2)},
			// Buckets 42..100: 59 windows, 4+4+3+2+1 = 14 attempts.
			4, 4.0*59/14, 4+3+2+1, 4, 4.2, 10.1),
		{Event: 1, OutageS: f(3)},
	}
	if g, w := showAll(got), showAll(want); g != w {
		t.Errorf("Recoveries =\n%s\nwant\n%s", g, w)
	}
}

// A restart followed by a stall while the fleet is still coming back: the
// restart counts every client at its first return, before or after the
// stall; the stall counts the two connected when it began, of which one
// dropped during it (its second drop is not the restart's business).
func TestRecoveryRestartThenStall(t *testing.T) {
	r := &results.Report{Transitions: []results.Transition{
		upAt(0, 0), upAt(1, 0), upAt(2, 0), upAt(3, 0),
		downAt(0, ms(1000)), downAt(1, ms(1000)), downAt(2, ms(1000)), downAt(3, ms(1000)),
		upAt(0, ms(2100)), upAt(1, ms(2400)), // back before the stall
		downAt(0, ms(3000)), upAt(0, ms(4600)), // dropped by the stall
		upAt(2, ms(4700)), upAt(3, ms(5000)), // back after the stall
	}}
	events := []results.Event{
		{Kind: "restart", Start: ms(1000), Ready: ms(2000)},
		{Kind: "stall", Start: ms(2500), End: ms(4500), Ready: ms(4500)},
	}
	got := Recoveries(r, events, ms(8000))
	r0, r1 := got[0], got[1]
	if r0.Recovered != 4 || showAll([]Recovery{{R50S: r0.R50S, R100S: r0.R100S}}) != showAll([]Recovery{{R50S: f(0.4), R100S: f(3)}}) {
		t.Errorf("restart: %s; want 4 back, R50 0.4 s, R100 3 s", showAll(got[:1]))
	}
	if r1.ConnectedBefore != 2 || r1.Disconnected != 1 || r1.Recovered != 2 || r1.R50S == nil || *r1.R50S != 0 || r1.R100S == nil || *r1.R100S != 0.1 {
		t.Errorf("stall: %s; want 1 of 2 down, R50 0, R100 0.1 s", showAll(got[1:]))
	}
	// Had nobody dropped in the stall, it had nobody to recover.
	r.Transitions = slices.DeleteFunc(r.Transitions, func(tr results.Transition) bool {
		return tr.Client == 0 && tr.At >= ms(3000)
	})
	if got := Recoveries(r, events, ms(8000))[1]; got.Disconnected != 0 || got.Recovered != 2 || got.R50S != nil || got.HerdPeakPer100ms != nil {
		t.Errorf("stall nobody dropped in: %s; want null figures", showAll([]Recovery{got}))
	}
}

// An every-schedule faster than the recovery: restarts at 1, 2 and 3 s,
// each ready 200 ms later, while clients take up to 3.5 s to come back.
// Each event's clients are measured to their return, across the later
// events (cut at the next event, event 0 had only c0 back: R100 never).
func TestRecoveryEveryFasterThanRecovery(t *testing.T) {
	r := &results.Report{Transitions: []results.Transition{
		upAt(0, 0), upAt(1, 0), upAt(2, 0),
		downAt(0, ms(1000)), downAt(1, ms(1000)), downAt(2, ms(1000)),
		upAt(0, ms(1500)), downAt(0, ms(2000)), upAt(0, ms(3500)),
		upAt(1, ms(2500)), downAt(1, ms(3000)), upAt(1, ms(4000)),
		upAt(2, ms(4500)),
	}}
	var events []results.Event
	for i := 1; i <= 3; i++ {
		events = append(events, results.Event{Kind: "restart", Start: ms(1000 * i), Ready: ms(1000*i + 200)})
	}
	got := Recoveries(r, events, ms(6000))
	for i, w := range []struct {
		before, down, back int
		r50, r100          float64
	}{
		{3, 3, 3, 1.3, 3.3}, // back at 1.5, 2.5, 4.5 s
		{1, 1, 1, 1.3, 1.3}, // c0, back at 3.5 s
		{1, 1, 1, 0.8, 0.8}, // c1, back at 4.0 s
	} {
		g := got[i]
		if g.ConnectedBefore != w.before || g.Disconnected != w.down || g.Recovered != w.back ||
			g.R50S == nil || g.R100S == nil || *g.R50S != w.r50 || *g.R100S != w.r100 {
			t.Errorf("event %d: %s; want %+v", i, showAll([]Recovery{g}), w)
		}
	}
}

// A harmless event (a backlog change) long before a restart is not charged
// with the restart's disconnects: a down after the next event began is
// that event's.
func TestRecoveryHarmlessEventBeforeRestart(t *testing.T) {
	r := &results.Report{Transitions: concat(fleet(3), dropAll(3, ms(5000), ms(1), ms(1000)))}
	events := []results.Event{
		{Kind: "backlog", Mode: "16", Start: ms(1000), Ready: ms(1000)},
		{Kind: "restart", Start: ms(5000), Ready: ms(5500)},
	}
	got := Recoveries(r, events, ms(8000))
	if got[0].ConnectedBefore != 3 || got[0].Disconnected != 0 || got[0].R100S != nil {
		t.Errorf("backlog: %s; want 3 connected, nobody to recover", showAll(got[:1]))
	}
	if got[1].Disconnected != 3 || got[1].R100S == nil || *got[1].R100S != 0.502 {
		t.Errorf("restart: %s; want 3 down, R100 0.502 s", showAll(got[1:]))
	}
}

// BenchmarkRecoveries is a bench-sized run: 50,000 clients, one restart,
// three transitions each, a 60 s timeline.
func BenchmarkRecoveries(b *testing.B) {
	r := results.NewReport(time.Time{}, 50000)
	for c := range uint32(50000) {
		r.Transitions = append(r.Transitions,
			upAt(c, ms(int(c%1000))), downAt(c, ms(10000)), upAt(c, ms(12000+int(c%20000))))
	}
	r.Timeline.At(60 * time.Second)
	events := []results.Event{{Kind: "restart", Start: ms(10000), Ready: ms(12000)}}
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
	r := results.NewReport(time.Time{}, 2)
	r.Transitions = []results.Transition{
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
	ev := []results.Event{{Kind: "restart", Start: ms(1000), Ready: ms(3020)}}
	rec := Recoveries(r, ev, ms(5000))[0]
	want := measured(Recovery{ConnectedBefore: 2, Disconnected: 2, Recovered: 2,
		R50S: f(0.13), R90S: f(0.23), R99S: f(0.23), R100S: f(0.23), OutageS: f(2.02)},
		1, 1, 0, 2, 3.1, 3.3)
	if g, w := showAll([]Recovery{rec}), showAll([]Recovery{want}); g != w {
		t.Errorf("Recoveries =\n%s\nwant\n%s", g, w)
	}
}
