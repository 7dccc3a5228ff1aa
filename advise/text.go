package advise

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/stampede-dev/stampede/results/summary"
)

// WriteText prints the search for a person: the server's capacity and
// the physical bound, the current policy and the best candidates side by
// side, and the recommendation with its reason.
func (r *Result) WriteText(w io.Writer) error {
	a := r.Advice()
	fmt.Fprintf(w, "server: accept rate %.0f/s, backlog %d: %.0f attempts per 100 ms (%s)\n",
		a.Capacity.AcceptRate, a.Capacity.Backlog, a.Capacity.Per100ms, a.Capacity.Source)
	fmt.Fprintf(w, "physical bound: %d clients / %.0f per s = %.2fs after ready; outage %.2fs (simulated)\n",
		r.Config.Sim.Clients, a.Capacity.AcceptRate, a.PhysicalBoundS, r.Outage.Seconds())
	limit := "none"
	if a.MaxDelayS != nil {
		limit = r.Config.MaxDelay.String()
	}
	fmt.Fprintf(w, "search: objective %s, longest wait %s, %d simulations over seeds %v\n\n", a.Objective, limit, a.Simulations, a.Seeds)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\tpolicy\tR50\tR99\tR100\therd peak/100ms\tof capacity\twasted/client\tlongest wait\t")
	row := func(label string, c summary.AdviceCandidate) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%.0f\t%.2f\t%.2f\t%s\t\n", label, c.Policy, sec(c.R50S), sec(c.R99S), sec(c.R100S),
			c.HerdPeakPer100ms, c.HerdPeakPer100ms/a.Capacity.Per100ms, c.WastedAttemptsPerClient, sec(c.LongestWaitS))
	}
	row("current", a.Current)
	for i, c := range a.Candidates {
		label := strconv.Itoa(i + 1)
		if i == a.Recommended {
			label += " *"
		}
		row(label, c)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if _, err := fmt.Fprintf(w, "\nrecommended: %s\n  because %s\n", a.Candidates[a.Recommended].Policy, a.Reason); err != nil {
		return err
	}
	if len(a.Mitigations) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\nwhat the server can do for the current policy (a fleet already in the field), restarts graceful:\n")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "mitigation\tR50\tR99\tR100\therd peak/100ms\tof capacity\twasted/client\t")
	for _, m := range a.Mitigations {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.0f\t%.2f\t%.2f\t\n", m.Mitigation, sec(m.R50S), sec(m.R99S), sec(m.R100S),
			m.HerdPeakPer100ms, m.HerdPeakPer100ms/a.Capacity.Per100ms, m.WastedAttemptsPerClient)
	}
	return tw.Flush()
}

// sec writes seconds, or "never" / "unbounded" for null.
func sec(v *float64) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatFloat(*v, 'f', 2, 64) + "s"
}

// WriteVerify prints a verification: each policy's figures predicted
// against measured with the relative error, then the verdict lines; held
// is Verdict's.
func WriteVerify(w io.Writer, vs []summary.AdviceVerify, capacity, tolerance float64) (held bool, err error) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\tpolicy\tfigure\tpredicted\tmeasured\terror\t")
	for _, v := range vs {
		for _, f := range v.Figures {
			e := "-"
			if f.RelError != nil {
				e = fmt.Sprintf("%+.0f %%", *f.RelError*100)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t\n", v.Role, v.Policy, f.Name, num(f.Predicted), num(f.Measured), e)
		}
	}
	if err := tw.Flush(); err != nil {
		return false, err
	}
	lines, held := Verdict(vs, capacity, tolerance)
	for _, l := range lines {
		if _, err := fmt.Fprintln(w, l); err != nil {
			return false, err
		}
	}
	return held, nil
}

func num(v *float64) string {
	if v == nil {
		return "never"
	}
	return strconv.FormatFloat(*v, 'f', 2, 64)
}
