package results

import (
	"cmp"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"
)

// A long flow is cut into pieces that each fit the limit exactly as
// promised (the shell of a flow piece counts), and merge back into it;
// Flow.Pieces cuts the same ones.
func TestFlowPiecesBounded(t *testing.T) {
	var f Flow
	for i := range int64(20000) {
		f = append(f, FlowCount{Step: 1_000_000 + i*3, Ups: 40000, Downs: 39999, Firsts: 12345})
	}
	a := NewAssembler(0)
	if err := a.Add(Piece{Flow: f}); err != nil {
		t.Fatal(err)
	}
	const limit = 4 << 10
	ps, err := a.Pieces(limit)
	if err != nil {
		t.Fatal(err)
	}
	// Flow.Pieces cuts the same pieces without an assembler.
	if own, err := f.Pieces(limit); err != nil || !reflect.DeepEqual(own, ps) {
		t.Fatalf("Flow.Pieces: %d pieces (%v), the assembler's %d", len(own), err, len(ps))
	}
	b := NewAssembler(0)
	for _, p := range ps {
		raw, _ := json.Marshal(p)
		if len(raw) > limit {
			t.Fatalf("a flow piece of %d bytes, over the %d limit", len(raw), limit)
		}
		if err := b.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	r, err := b.Report(time.Time{}, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Flow) != len(f) || r.Flow[len(f)-1] != f[len(f)-1] || r.Flow[0] != f[0] {
		t.Fatalf("merged flow of %d steps, want %d", len(r.Flow), len(f))
	}
}

// FlowOf counts only real changes, and the flows of a split of the
// clients merge into the flow of all of them.
func TestFlowOfAndMerge(t *testing.T) {
	trs := []Transition{
		upAt(1, ms(10)), upAt(2, 10*time.Millisecond+300*time.Microsecond), upAt(1, ms(11)), // a repeated up is no change
		downAt(1, ms(500)), downAt(1, ms(501)), // nor a repeated down
		downAt(3, ms(600)), // a client never up
		upAt(1, ms(900)), downAt(2, ms(900)),
	}
	want := Flow{{Step: 10, Ups: 2, Firsts: 2}, {Step: 500, Downs: 1}, {Step: 900, Ups: 1, Downs: 1}}
	got := FlowOf(trs)
	if len(got) != len(want) {
		t.Fatalf("FlowOf = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("FlowOf = %+v, want %+v", got, want)
		}
	}
	var one, two []Transition
	for _, tr := range trs {
		if tr.Client == 1 {
			one = append(one, tr)
		} else {
			two = append(two, tr)
		}
	}
	merged := FlowOf(one).Merge(FlowOf(two))
	for i := range want {
		if merged[i] != want[i] {
			t.Fatalf("merged flows = %+v, want %+v", merged, want)
		}
	}
	if n, last := merged.FirstConnects(); n != 2 || last != ms(11) {
		t.Fatalf("FirstConnects = %d, %s; want 2 by the end of the 10 ms step", n, last)
	}
}

// flowOfMaps is FlowOf as it was, with a map per client state and a
// sorted copy: the reference the array-based one must match.
func flowOfMaps(trs []Transition) Flow {
	sorted := slices.Clone(trs)
	slices.SortStableFunc(sorted, func(a, b Transition) int { return cmp.Compare(a.At, b.At) })
	up, seen := map[uint32]bool{}, map[uint32]bool{}
	var f Flow
	for _, tr := range sorted {
		step := int64(max(tr.At, 0) / FlowStep)
		at := func() *FlowCount {
			if n := len(f); n == 0 || f[n-1].Step != step {
				f = append(f, FlowCount{Step: step})
			}
			return &f[len(f)-1]
		}
		switch {
		case tr.Up && !up[tr.Client]:
			up[tr.Client] = true
			c := at()
			c.Ups++
			if !seen[tr.Client] {
				seen[tr.Client] = true
				c.Firsts++
			}
		case !tr.Up && up[tr.Client]:
			up[tr.Client] = false
			at().Downs++
		}
	}
	return f
}

// FlowOf counts the same with dense and sparse client IDs, in any order
// or sorted in place (read without a copy), and RecoveryPartials gives
// the same partials for a slice sorted by client as for any order.
func TestFlowOfInPlaceAndSparse(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, ids := range []struct {
		name   string
		lo, by uint32
	}{{"dense", 5000, 1}, {"sparse", 7, 1 << 20}} {
		var trs []Transition
		for range 3000 {
			trs = append(trs, Transition{
				Client: ids.lo + ids.by*uint32(rng.IntN(300)),
				Up:     rng.IntN(3) > 0,
				At:     time.Duration(rng.IntN(2000)) * 250 * time.Microsecond,
			})
		}
		want := flowOfMaps(trs)
		events := []Event{{Start: 100 * time.Millisecond, Ready: 150 * time.Millisecond}, {Start: 300 * time.Millisecond}}
		wantParts := RecoveryPartials(trs, events, 500*time.Millisecond)
		orig := slices.Clone(trs)
		if got := FlowOf(trs); !reflect.DeepEqual(got, want) || !slices.Equal(trs, orig) {
			t.Errorf("%s: FlowOf changed its input or counts %v, want %v", ids.name, got, want)
		}
		SortByTime(trs)
		if got := FlowOf(trs); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: FlowOf of a slice sorted by time: %v, want %v", ids.name, got, want)
		}
		SortByClient(trs)
		if got := RecoveryPartials(trs, events, 500*time.Millisecond); !reflect.DeepEqual(got, wantParts) {
			t.Errorf("%s: partials of a slice sorted by client: %+v, want %+v", ids.name, got, wantParts)
		}
	}
}
