package advise

import (
	"math"
	"slices"
	"testing"
)

// A figure a run never reached (nil) orders the mitigation last, and a
// prediction that is not a number is recorded as never reached.
func TestFiguresOrderNeverReachedIsWorst(t *testing.T) {
	v := func(f float64) *float64 { return &f }
	got := figuresOrder([]MitigationFigures{
		{Mitigation: "a", Wasted: nil, R99S: v(1)},  // never recovered: wasted unknown
		{Mitigation: "b", Wasted: v(2), R99S: v(3)}, // the best
		{Mitigation: "c", Wasted: v(2), R99S: nil},  // as wasteful as b, no R99
	})
	if want := []string{"b", "c", "a"}; !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
	for _, x := range []float64{math.NaN(), math.Inf(1)} {
		if p := finite(x); p != nil {
			t.Errorf("finite(%v) = %v, want nil", x, *p)
		}
	}
	if p := finite(2.5); p == nil || *p != 2.5 {
		t.Errorf("finite(2.5) = %v", p)
	}
}
