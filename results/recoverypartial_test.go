package results

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// randomRun is a seeded fleet of n clients flapping through three
// overlapping events, with a timeline to go with it.
func randomRun(seed uint64, n int) (*Report, []Event, time.Duration) {
	rng := rand.New(rand.NewPCG(seed, 1))
	r := NewReport(time.Time{}, n)
	end := 20 * time.Second
	for c := range uint32(n) {
		at := time.Duration(rng.IntN(1000)) * time.Millisecond
		up := false
		for at < end+time.Second { // some transitions after the end: ignored
			up = !up
			r.Transitions = append(r.Transitions, Transition{Client: c, At: at, Up: up})
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
	events := []Event{
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
		shares := make([][]Transition, procs)
		for _, tr := range r.Transitions {
			shares[tr.Client%procs] = append(shares[tr.Client%procs], tr)
		}
		var merged []RecoveryPartial
		for i := procs - 1; i >= 0; i-- {
			b, err := json.Marshal(RecoveryPartials(shares[i], events, end))
			if err != nil {
				t.Fatal(err)
			}
			var part []RecoveryPartial
			if err := json.Unmarshal(b, &part); err != nil {
				t.Fatal(err)
			}
			merged = MergeRecoveryPartials(merged, part)
		}
		if got := showAll(FinishRecoveries(merged, r.Timeline, events, end)); got != whole {
			t.Errorf("seed %d: merged partials\n%s\nwhole fleet\n%s", seed, got, whole)
		}
		if seed == 0 {
			t.Logf("whole fleet:\n%s", whole)
		}
	}
}

func TestRecoveryPartialMerge(t *testing.T) {
	p := RecoveryPartial{ConnectedBefore: 3, Disconnected: 2, Returns: []ReturnCount{{1, 1}, {5, 1}}}
	p.Merge(RecoveryPartial{ConnectedBefore: 4, Disconnected: 4, Returns: []ReturnCount{{0, 2}, {5, 1}, {9, 1}}})
	want := RecoveryPartial{ConnectedBefore: 7, Disconnected: 6, Returns: []ReturnCount{{0, 2}, {1, 1}, {5, 2}, {9, 1}}}
	if g, w := fmtJSON(p), fmtJSON(want); g != w {
		t.Errorf("Merge = %s, want %s", g, w)
	}
	p.Merge(RecoveryPartial{})
	if g, w := fmtJSON(p), fmtJSON(want); g != w {
		t.Errorf("Merge of nothing = %s, want %s", g, w)
	}
}

func fmtJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// SplitPartials cuts partials into chunks of bounded returns that merge
// back into the same partials.
func TestSplitPartials(t *testing.T) {
	parts := []RecoveryPartial{
		{ConnectedBefore: 10, Disconnected: 7, Returns: []ReturnCount{{1, 1}, {2, 2}, {5, 1}, {9, 3}}},
		{ConnectedBefore: 4},
		{ConnectedBefore: 3, Disconnected: 3, Returns: []ReturnCount{{20, 1}, {21, 2}, {30, 1}}},
	}
	chunks := SplitPartials(parts, 3)
	if len(chunks) != 3 {
		t.Fatalf("%d chunks; want 3 of at most 3 returns", len(chunks))
	}
	var back []RecoveryPartial
	for _, c := range chunks {
		n := 0
		for _, p := range c {
			n += len(p.Returns)
		}
		if n > 3 || len(c) != len(parts) {
			t.Fatalf("chunk of %d partials with %d returns", len(c), n)
		}
		back = MergeRecoveryPartials(back, c)
	}
	if !reflect.DeepEqual(back, parts) {
		t.Fatalf("merged chunks %+v; want %+v", back, parts)
	}
}
