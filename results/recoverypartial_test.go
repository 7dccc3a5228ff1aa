package results

import (
	"encoding/json"
	"reflect"
	"testing"
)

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
