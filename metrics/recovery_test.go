package metrics

import (
	"testing"
	"time"

	"github.com/stampede-dev/stampede/results"
)

const ms = time.Millisecond

// point is one connected count at an offset.
type point struct {
	at time.Duration
	n  int64
}

// TestRecoveryEstimate checks the live estimate against hand-worked
// connected counts.
func TestRecoveryEstimate(t *testing.T) {
	restart := results.Event{Spec: "restart", Start: 1000 * ms, Ready: 2000 * ms}
	for _, c := range []struct {
		name   string
		points []point
		events []results.Event
		now    time.Duration
		want   [][4]time.Duration
	}{{
		// 100 up before; 50 back 300 ms after ready, 90 at 500, all at 900.
		name:   "restart",
		points: []point{{0, 100}, {1100 * ms, 0}, {2300 * ms, 50}, {2500 * ms, 90}, {2700 * ms, 99}, {2900 * ms, 100}},
		events: []results.Event{restart},
		now:    3 * time.Second,
		want:   [][4]time.Duration{{300 * ms, 500 * ms, 700 * ms, 900 * ms}},
	}, {
		// Still recovering: only R50 known so far.
		name:   "partial",
		points: []point{{0, 100}, {1100 * ms, 0}, {2300 * ms, 50}},
		events: []results.Event{restart},
		now:    2400 * ms,
		want:   [][4]time.Duration{{300 * ms, -1, -1, -1}},
	}, {
		// A stall that dropped nobody: back at ready.
		name:   "nobody dropped",
		points: []point{{0, 100}},
		events: []results.Event{restart},
		now:    3 * time.Second,
		want:   [][4]time.Duration{{0, 0, 0, 0}},
	}, {
		// Nobody connected before the event: zero, as summary.Recovery.
		name:   "nobody before",
		points: []point{{1500 * ms, 10}},
		events: []results.Event{restart},
		now:    3 * time.Second,
		want:   [][4]time.Duration{{0, 0, 0, 0}},
	}, {
		// A count reached only after the next event's start does not count:
		// the first event's R100 is never known.
		name:   "cutoff",
		points: []point{{0, 100}, {1100 * ms, 0}, {2200 * ms, 95}, {3500 * ms, 100}},
		events: []results.Event{restart, {Spec: "second", Start: 3 * time.Second, Ready: 3200 * ms}},
		now:    4 * time.Second,
		want:   [][4]time.Duration{{200 * ms, 200 * ms, -1, -1}, {0, 0, 0, 0}},
	}} {
		t.Run(c.name, func(t *testing.T) {
			var h history
			for _, p := range c.points {
				h.add(p.at, p.n)
			}
			got := h.recovery(c.events, c.now)
			if len(got) != len(c.want) {
				t.Fatalf("%d estimates, want %d", len(got), len(c.want))
			}
			for i := range got {
				if got[i].event != i || got[i].r != c.want[i] {
					t.Errorf("event %d: %d %v, want %d %v", i, got[i].event, got[i].r, i, c.want[i])
				}
			}
		})
	}
}

// TestHistoryBounded checks that the history keeps changes only and stays
// within maxHistory, and that a known recovery survives the trimming.
func TestHistoryBounded(t *testing.T) {
	var h history
	for i := range 10 {
		h.add(time.Duration(i)*ms, 7)
	}
	if len(h.at) != 1 {
		t.Fatalf("%d entries for an unchanged count, want 1", len(h.at))
	}
	h = history{}
	h.add(0, 100)
	h.add(1100*ms, 0)
	h.add(2100*ms, 100)
	ev := []results.Event{{Spec: "restart", Start: time.Second, Ready: 2 * time.Second}}
	want := [4]time.Duration{100 * ms, 100 * ms, 100 * ms, 100 * ms}
	if got := h.recovery(ev, 3*time.Second)[0].r; got != want {
		t.Fatalf("before trimming: %v, want %v", got, want)
	}
	for i := range maxHistory + 10 {
		h.add(3*time.Second+time.Duration(i)*ms, int64(i%2))
	}
	if len(h.at) > maxHistory {
		t.Fatalf("%d entries, want at most %d", len(h.at), maxHistory)
	}
	if got := h.recovery(ev, time.Hour)[0].r; got != want {
		t.Fatalf("after trimming: %v, want %v", got, want)
	}
}
