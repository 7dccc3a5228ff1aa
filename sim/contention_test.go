package sim

import (
	"errors"
	"io"
	"math"
	"testing"

	"github.com/stampede-dev/stampede/spec"
)

// TestContentionReference is the acceptance of the published reference:
// at 100 clients, 100 trials, the policies rank on calls and on completion
// time as in the study, and full, equal and decorrelated are within 15 %
// of its figures on both.
func TestContentionReference(t *testing.T) {
	got := map[string]ContentionResult{}
	for _, p := range ContentionPolicies() {
		r, err := Contention(p, 100, 100, 1)
		if err != nil {
			t.Fatal(err)
		}
		got[p.Name] = r
		ref := ContentionReference[p.Name]
		t.Logf("%-12s calls %7.0f (study %5.0f)  time %7.0f ms (study %5.0f)", p.Name, r.Calls, ref[0], r.TimeMS, ref[1])
	}
	for _, name := range []string{"full", "equal", "decorrelated"} {
		ref := ContentionReference[name]
		if e := math.Abs(got[name].Calls/ref[0] - 1); e > 0.15 {
			t.Errorf("%s: %.0f calls, study %.0f: %.0f %% off", name, got[name].Calls, ref[0], 100*e)
		}
		if e := math.Abs(got[name].TimeMS/ref[1] - 1); e > 0.15 {
			t.Errorf("%s: %.0f ms, study %.0f: %.0f %% off", name, got[name].TimeMS, ref[1], 100*e)
		}
	}
	rank := func(f func(ContentionResult) float64, g func([2]float64) float64) {
		for a := range ContentionReference {
			for b := range ContentionReference {
				ra, rb := ContentionReference[a], ContentionReference[b]
				if (g(ra) < g(rb)) != (f(got[a]) < f(got[b])) {
					t.Errorf("%s vs %s rank differently from the study", a, b)
				}
			}
		}
	}
	rank(func(r ContentionResult) float64 { return r.Calls }, func(r [2]float64) float64 { return r[0] })
	rank(func(r ContentionResult) float64 { return r.TimeMS }, func(r [2]float64) float64 { return r[1] })
}

// A sweep's bad field is named, each a *spec.FieldError on its field, and
// nothing is run.
func TestContentionSweepValidate(t *testing.T) {
	ok := ContentionSweep{From: 10, To: 20, Step: 10, Trials: 1}
	for _, tc := range []struct {
		field string
		edit  func(*ContentionSweep)
	}{
		{"Contention.From", func(s *ContentionSweep) { s.From = 0 }},
		{"Contention.To", func(s *ContentionSweep) { s.To = 5 }},
		{"Contention.Step", func(s *ContentionSweep) { s.Step = 0 }},
		{"Contention.Trials", func(s *ContentionSweep) { s.Trials = -1 }},
	} {
		s := ok
		tc.edit(&s)
		var fe *spec.FieldError
		if err := s.WriteTable(io.Discard); !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("%s: WriteTable = %v, want a *spec.FieldError on it", tc.field, err)
		}
	}
	if err := ok.Validate(); err != nil {
		t.Fatalf("a valid sweep: %v", err)
	}
}
