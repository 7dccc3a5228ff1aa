package summary

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/results"
)

// randomRun is a seeded fleet of n clients flapping through three
// overlapping events, with a timeline to go with it.
func randomRun(seed uint64, n int) (*results.Report, []results.Event, time.Duration) {
	rng := rand.New(rand.NewPCG(seed, 1))
	r := results.NewReport(time.Time{}, n)
	end := 20 * time.Second
	for c := range uint32(n) {
		at := time.Duration(rng.IntN(1000)) * time.Millisecond
		up := false
		for at < end+time.Second { // some transitions after the end: ignored
			up = !up
			r.Transitions = append(r.Transitions, results.Transition{Client: c, At: at, Up: up})
			b := r.Timeline.At(at)
			b.Attempts++
			if up {
				b.Successes++
			} else {
				b.Failures[rng.IntN(3)]++
			}
			// Microsecond offsets, so returns fall inside milliseconds.
			at += time.Duration(1+rng.IntN(6000000)) * time.Microsecond
		}
	}
	events := []results.Event{
		{Kind: "restart", Start: 3 * time.Second, Ready: 4200 * time.Millisecond},
		{Kind: "reject", Start: 4 * time.Second, Ready: 7 * time.Second},
		{Kind: "restart", Start: 9 * time.Second, Ready: 9500 * time.Millisecond},
		{Kind: "outage", Start: 15 * time.Second, NeverReady: true},
	}
	return r, events, end
}

// Recovery computed over the whole fleet equals the merge of partials
// computed over a split of its clients (as loadgen processes would), sent
// as JSON, in any merge order: the figures need no client's transitions
// beyond its own process.
func TestRecoveryPartialsMerge(t *testing.T) {
	for seed := range uint64(5) {
		r, events, end := randomRun(seed, 300)
		whole := showAll(Recoveries(r, events, end))

		const procs = 3
		shares := make([][]results.Transition, procs)
		for _, tr := range r.Transitions {
			shares[tr.Client%procs] = append(shares[tr.Client%procs], tr)
		}
		var merged []results.RecoveryPartial
		for i := procs - 1; i >= 0; i-- {
			b, err := json.Marshal(results.RecoveryPartials(shares[i], events, end))
			if err != nil {
				t.Fatal(err)
			}
			var part []results.RecoveryPartial
			if err := json.Unmarshal(b, &part); err != nil {
				t.Fatal(err)
			}
			merged = results.MergeRecoveryPartials(merged, part)
		}
		if got := showAll(FinishRecoveries(merged, r.Timeline, events, end)); got != whole {
			t.Errorf("seed %d: merged partials\n%s\nwhole fleet\n%s", seed, got, whole)
		}
		if seed == 0 {
			t.Logf("whole fleet:\n%s", whole)
		}
	}
}
