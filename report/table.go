package report

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"text/tabwriter"

	"github.com/stampede-dev/stampede/results/summary"
)

// WriteComparison prints the bench comparison table, one row per policy,
// columns aligned: the worst event of each run (WorstRecovery), its
// clients recovered of those connected before, R99 and R100 in seconds
// ("never" when not reached, "-" when not measured: see RText), the herd
// peak per 100 ms and its peak-to-mean, failed attempts per client after
// the target was ready (wasted) and during the outage, and the run's
// ListenOverflows delta. Rows that are all HTTP fleets' runs get their own
// columns instead: goodput, amplification, early retries, abandoned, p99.
func WriteComparison(w io.Writer, rows []summary.Row) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if allHTTP(rows) {
		// HTTP fleets have no events to recover from: their own figures.
		fmt.Fprintln(tw, "run	policy	goodput/s	amplification	early retries	abandoned	p99")
		for _, row := range rows {
			h := row.Summary.HTTP
			fmt.Fprintf(tw, "%s	%s	%.4g	%.3g	%d	%d	%.1fms\n", row.Policy, h.Policy, h.GoodputPerS, h.Amplification, h.EarlyRetries, h.Abandoned, h.LatencyMS.P99)
		}
		return tw.Flush()
	}
	mitigations := slices.ContainsFunc(rows, func(r summary.Row) bool { return r.Mitigation != "" })
	if mitigations {
		fmt.Fprint(tw, "mitigation\t")
	}
	fmt.Fprintln(tw, "policy\tevent\trecovered\tR99 s\tR100 s\tpeak/100ms\tpeak:mean\twasted/client\toutage/client\tListenOverflows")
	for _, row := range rows {
		if mitigations {
			fmt.Fprintf(tw, "%s\t", row.Mitigation)
		}
		var rec summary.Recovery
		ok := row.Summary != nil
		if ok {
			rec, ok = row.Summary.WorstRecovery()
		}
		if !ok {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t-\t-\t-\t-\t-\n", row.Policy)
			continue
		}
		ev := "-"
		if rec.Event < len(row.Summary.Events) {
			ev = strconv.Itoa(rec.Event) + ":" + row.Summary.Events[rec.Event].Kind
		}
		fmt.Fprintf(tw, "%s\t%s\t%d/%d\t%s\t%s\t%s\t%s\t%s\t%s\t%d\n",
			row.Policy, ev, rec.Recovered, rec.ConnectedBefore, RText(rec, rec.R99S), RText(rec, rec.R100S),
			CountText(rec.HerdPeakPer100ms), FloatText(rec.HerdPeakToMean, 1), FloatText(rec.WastedAttemptsPerClient, 2),
			FloatText(rec.OutageAttemptsPerClient, 2), row.Summary.Kernel.ListenOverflows)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return writeBusy(w, rows)
}

// writeBusy says, under a comparison, which runs were taken on a busy
// machine (MachineLoad.Busy): their figures may not compare with the
// others'.
func writeBusy(w io.Writer, rows []summary.Row) error {
	for _, row := range rows {
		if s := row.Summary; s != nil && s.Machine != nil && s.Machine.Busy {
			if _, err := fmt.Fprintf(w, "busy machine: %s: %s; its figures may differ on a quiet machine\n", row.Policy, s.Machine.BusyReason); err != nil {
				return err
			}
		}
	}
	return nil
}

// allHTTP reports whether every row is an HTTP fleet's run.
func allHTTP(rows []summary.Row) bool {
	for _, r := range rows {
		if r.Summary == nil || r.Summary.HTTP == nil {
			return false
		}
	}
	return len(rows) > 0
}

// SideFigure is one line of a side-by-side comparison of two runs
// (SideBySide): the figure's name, its text in each run, and b's error
// relative to a ("-" when either has no value or a's is 0).
type SideFigure struct {
	Name, A, B, Error string
}

// SideBySide sets the key figures of two runs' worst events beside each
// other, with b's error relative to a: how `stampede report` sets a
// simulated run beside the real one it models (a is the real run). R
// figures read as in the tables (RText), counts as integers. Nil when
// either run has no event.
func SideBySide(a, b summary.Row) []SideFigure {
	ra, oka := a.Summary.WorstRecovery()
	rb, okb := b.Summary.WorstRecovery()
	if !oka || !okb {
		return nil
	}
	count := func(v float64) *float64 { return &v }
	peak := func(p *uint32) *float64 {
		if p == nil {
			return nil
		}
		return count(float64(*p))
	}
	var out []SideFigure
	for _, f := range []struct {
		name   string
		x, y   *float64
		digits int // -1: an R figure, as RText
	}{
		{"R50 s", ra.R50S, rb.R50S, -1}, {"R90 s", ra.R90S, rb.R90S, -1}, {"R99 s", ra.R99S, rb.R99S, -1}, {"R100 s", ra.R100S, rb.R100S, -1},
		{"herd peak/100ms", peak(ra.HerdPeakPer100ms), peak(rb.HerdPeakPer100ms), 0},
		{"wasted/client", ra.WastedAttemptsPerClient, rb.WastedAttemptsPerClient, 2},
		{"ListenOverflows", count(float64(a.Summary.Kernel.ListenOverflows)), count(float64(b.Summary.Kernel.ListenOverflows)), 0},
	} {
		sf := SideFigure{Name: f.name, A: RText(ra, f.x), B: RText(rb, f.y), Error: "-"}
		if f.digits >= 0 {
			sf.A, sf.B = FloatText(f.x, f.digits), FloatText(f.y, f.digits)
		}
		if f.x != nil && f.y != nil && *f.x != 0 {
			sf.Error = fmt.Sprintf("%+.0f %%", 100*(*f.y-*f.x)/(*f.x))
		}
		out = append(out, sf)
	}
	return out
}

// WriteSideBySide writes SideBySide(a, b) as an aligned table.
func WriteSideBySide(w io.Writer, a, b summary.Row) error {
	figs := SideBySide(a, b)
	if figs == nil {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "figure\t%s\t%s\terror\n", a.Policy, b.Policy)
	for _, f := range figs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", f.Name, f.A, f.B, f.Error)
	}
	return tw.Flush()
}

// RText formats one of r's R figures in seconds to 2 decimals for a
// table: "never" when r had clients to recover but the figure has no value
// (not enough came back before the run ended, or the target was never
// ready again), "-" when nothing was measured (nobody went down).
func RText(r summary.Recovery, p *float64) string {
	switch {
	case p != nil:
		return strconv.FormatFloat(*p, 'f', 2, 64)
	case r.Disconnected > 0:
		return "never"
	}
	return "-"
}

// FloatText formats a nullable figure to digits decimals; null is "-".
func FloatText(p *float64, digits int) string {
	if p == nil {
		return "-"
	}
	return strconv.FormatFloat(*p, 'f', digits, 64)
}

// CountText formats a nullable count; null is "-".
func CountText(p *uint32) string {
	if p == nil {
		return "-"
	}
	return strconv.FormatUint(uint64(*p), 10)
}
