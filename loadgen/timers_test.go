package loadgen

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestTimerHeap: after random schedules, reschedules and cancels, deadlines
// pop in order and every client's position is right.
func TestTimerHeap(t *testing.T) {
	const n = 500
	clients := make([]client, n)
	for i := range clients {
		clients[i].timer = noTimer
	}
	h := timerHeap{clients: clients}
	rng := rand.New(rand.NewPCG(1, 2))
	want := map[int32]int64{}
	for step := 0; step < 5000; step++ {
		c := int32(rng.IntN(n))
		if rng.IntN(4) == 0 {
			h.cancel(c)
			delete(want, c)
		} else {
			at := rng.Int64N(1e6)
			h.schedule(c, at)
			want[c] = at
		}
		if step%500 == 0 {
			checkHeap(t, &h)
		}
	}
	checkHeap(t, &h)
	if h.len() != len(want) {
		t.Fatalf("heap holds %d, want %d", h.len(), len(want))
	}
	var got []int64
	for h.len() > 0 {
		e := h.pop()
		if want[e.c] != e.at || clients[e.c].timer != noTimer {
			t.Fatalf("popped client %d at %d, want %d", e.c, e.at, want[e.c])
		}
		got = append(got, e.at)
	}
	if !slices.IsSorted(got) {
		t.Error("deadlines popped out of order")
	}
}

func checkHeap(t *testing.T, h *timerHeap) {
	t.Helper()
	for i, e := range h.e {
		if h.clients[e.c].timer != int32(i) {
			t.Fatalf("client %d thinks it is at %d, is at %d", e.c, h.clients[e.c].timer, i)
		}
		if i > 0 && h.e[(i-1)/2].at > e.at {
			t.Fatalf("heap order broken at %d", i)
		}
	}
}

// BenchmarkTimerHeap: rescheduling one of 20,000 deadlines.
func BenchmarkTimerHeap(b *testing.B) {
	const n = 20000
	clients := make([]client, n)
	h := timerHeap{clients: clients}
	for i := range clients {
		clients[i].timer = noTimer
		h.schedule(int32(i), int64(i)*1000)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		h.schedule(int32(i%n), int64(i*7919%n)*1000)
	}
}
