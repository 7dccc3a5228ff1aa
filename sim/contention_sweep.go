package sim

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/stampede-dev/stampede/spec"
)

// ContentionSweep runs the contention model over a range of fleet sizes,
// every policy of ContentionPolicies at each: `stampede contention`.
type ContentionSweep struct {
	// From, To and Step are the fleet sizes: From, From+Step, ... up to
	// To.
	From, To, Step int
	// Trials is how many runs each figure is the mean of (the study's
	// 100).
	Trials int
	// Seed seeds every run.
	Seed uint64
}

// Validate reports the first invalid field as a *spec.FieldError.
func (s ContentionSweep) Validate() error {
	switch {
	case s.From <= 0:
		return spec.Errorf("Contention.From", "must be positive, got %d", s.From)
	case s.To < s.From:
		return spec.Errorf("Contention.To", "must be at least {Contention.From} (%d), got %d", s.From, s.To)
	case s.Step <= 0:
		return spec.Errorf("Contention.Step", "must be positive, got %d", s.Step)
	case s.Trials <= 0:
		return spec.Errorf("Contention.Trials", "must be positive, got %d", s.Trials)
	}
	return nil
}

// WriteTable runs the sweep and writes its table to w: per fleet size,
// each policy's mean calls and time until the last client succeeded (ms),
// and under the row of 100 clients the study's figures
// (ContentionReference).
func (s ContentionSweep) WriteTable(w io.Writer) error {
	if err := s.Validate(); err != nil {
		return err
	}
	pols := ContentionPolicies()
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "clients\t")
	for _, p := range pols {
		fmt.Fprintf(tw, "%s calls\t%s ms\t", p.Name, p.Name)
	}
	fmt.Fprintln(tw)
	for n := s.From; n <= s.To; n += s.Step {
		fmt.Fprintf(tw, "%d\t", n)
		for _, p := range pols {
			r, err := Contention(p, n, s.Trials, s.Seed)
			if err != nil {
				return err
			}
			fmt.Fprintf(tw, "%.0f\t%.0f\t", r.Calls, r.TimeMS)
		}
		fmt.Fprintln(tw)
		if n == 100 {
			fmt.Fprint(tw, "study\t")
			for _, p := range pols {
				ref := ContentionReference[p.Name]
				fmt.Fprintf(tw, "%.0f\t%.0f\t", ref[0], ref[1])
			}
			fmt.Fprintln(tw)
		}
	}
	return tw.Flush()
}
