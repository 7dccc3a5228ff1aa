package sim

import (
	"math/rand/v2"
	"testing"
	"time"
)

// less is the queue's reference order: by time, then kind, then who.
func less(a, b *entry) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	if a.kind != b.kind {
		return a.kind < b.kind
	}
	return a.who < b.who
}

// TestCalendarOrder pushes entries at random instants over a few
// milliseconds, some of them while the calendar runs (into the running
// millisecond, as the engine does), and checks that every entry comes out
// once, in less's order, and that entries past the end are dropped.
func TestCalendarOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	c := newCalendar(5 * time.Millisecond)
	end := int64(5*time.Millisecond) + bucketWidth
	want := map[entry]int{}
	add := func(e entry) {
		c.push(e)
		if e.at < end {
			want[e]++
		}
	}
	rnd := func(from int64) entry {
		return entry{
			at:   from + r.Int64N(int64(2*time.Millisecond)),
			who:  r.Uint32N(50),
			gen:  uint8(r.UintN(3)),
			kind: kind(r.UintN(uint(evClosed) + 1)),
		}
	}
	for range 5000 {
		add(rnd(0))
	}
	add(entry{at: end + 1, who: 1, kind: evStart}) // past the end
	var prev entry
	first := true
	for n := 0; ; n++ {
		e, ok := c.pop()
		if !ok {
			break
		}
		if !first && less(&e, &prev) {
			t.Fatalf("entry %d %+v came after %+v", n, e, prev)
		}
		first, prev = false, e
		if want[e] == 0 {
			t.Fatalf("entry %+v popped but not pushed (or twice)", e)
		}
		want[e]--
		if n%7 == 0 && n < 20000 {
			// Pushed at or after the one just run, as the engine's are.
			f := rnd(e.at)
			f.at = e.at + f.at%int64(200*time.Microsecond)
			add(f)
		}
	}
	for e, n := range want {
		if n != 0 {
			t.Errorf("entry %+v never popped", e)
		}
	}
}
