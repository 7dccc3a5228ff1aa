package summary

import (
	"testing"
	"time"

	"github.com/stampede-dev/stampede/results"
)

// TestResubscribed: a session protocol's fleet gets its recovery to
// re-subscribed beside the one to back, from its own transitions and
// from merged partials alike; a fleet without one gets none.
func TestResubscribed(t *testing.T) {
	const s = time.Second
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	r := results.NewReport(time.Time{}, 2)
	for c := uint32(0); c < 2; c++ {
		// Up at 0, down at 2 s, back at 3.1 s and 3.2 s; re-subscribed
		// 100 ms after each back.
		back := 3*s + ms(100*int(c+1))
		r.Transitions = append(r.Transitions, results.Transition{Client: c, Up: true}, results.Transition{Client: c, At: 2 * s}, results.Transition{Client: c, At: back, Up: true})
		r.Resubscribed = append(r.Resubscribed, results.Transition{Client: c, At: ms(100), Up: true}, results.Transition{Client: c, At: 2 * s}, results.Transition{Client: c, At: back + ms(100), Up: true})
	}
	events := []results.Event{{Kind: "restart", Start: 2 * s, Ready: 3 * s}}
	sum := Summarize(Input{Report: r, Events: events, End: 5 * s})
	rec := sum.Recovery[0]
	x := rec.Resubscribed
	if x == nil || x.SubscribedBefore != 2 || x.Recovered != 2 || x.R50S == nil || *x.R50S != 0.2 || x.R100S == nil || *x.R100S != 0.3 {
		t.Fatalf("re-subscribed = %+v", x)
	}
	if *rec.R100S != 0.2 {
		t.Errorf("back R100 = %v, want 0.2", *rec.R100S)
	}
	parts := results.RecoveryPartials(r.Resubscribed, events, 5*s)
	r2 := *r
	r2.Resubscribed = nil
	if y := Summarize(Input{Report: &r2, Events: events, End: 5 * s, Resubscribed: parts}).Recovery[0].Resubscribed; y == nil || *y.R100S != 0.3 {
		t.Errorf("from merged partials: %+v", y)
	}
	if z := Summarize(Input{Report: &r2, Events: events, End: 5 * s}).Recovery[0].Resubscribed; z != nil {
		t.Errorf("no session protocol: %+v, want none", z)
	}
}
