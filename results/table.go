package results

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
)

// Row is one line of the bench comparison table: one run (one policy).
type Row struct {
	// Policy names the run's backoff policy as written on the command line.
	Policy string
	// Summary is the run's summary; nil prints a row of dashes.
	Summary *Summary
}

// WorstRecovery returns the event of s that recovered worst, the one a
// comparison should show: among events with clients connected before, the
// lowest share recovered, then the longest R100 (never is longest), then
// the most wasted attempts per client; the first event when none had
// clients connected; false when there are no events. For a bench run with
// one restart, that restart; a harmless event (a backlog change that
// dropped nobody) never hides a restart.
func (s *Summary) WorstRecovery() (Recovery, bool) {
	if len(s.Recovery) == 0 {
		return Recovery{}, false
	}
	best := -1
	for i, r := range s.Recovery {
		if r.ConnectedBefore == 0 {
			continue
		}
		if best < 0 || worse(r, s.Recovery[best]) {
			best = i
		}
	}
	if best < 0 {
		best = 0
	}
	return s.Recovery[best], true
}

// worse reports whether a recovered worse than b; both have clients.
func worse(a, b Recovery) bool {
	// a.Recovered/a.N < b.Recovered/b.N, without division.
	l, r := a.Recovered*b.ConnectedBefore, b.Recovered*a.ConnectedBefore
	if l != r {
		return l < r
	}
	switch {
	case a.R100S == nil && b.R100S != nil:
		return true
	case a.R100S != nil && b.R100S == nil:
		return false
	case a.R100S != nil && *a.R100S != *b.R100S:
		return *a.R100S > *b.R100S
	}
	return a.WastedAttemptsPerClient > b.WastedAttemptsPerClient
}

// WriteComparison prints the bench comparison table, one row per policy,
// columns aligned: the worst event of each run (WorstRecovery), its
// clients recovered of those connected before, R99 and R100 in seconds
// ("never" when not reached), the herd peak per 100 ms and its
// peak-to-mean, failed attempts per client after the target was ready
// (wasted) and during the outage, and the run's ListenOverflows delta.
func WriteComparison(w io.Writer, rows []Row) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "policy\tevent\trecovered\tR99 s\tR100 s\tpeak/100ms\tpeak:mean\twasted/client\toutage/client\tListenOverflows")
	for _, row := range rows {
		var rec Recovery
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
		fmt.Fprintf(tw, "%s\t%s\t%d/%d\t%s\t%s\t%d\t%.1f\t%.2f\t%.2f\t%d\n",
			row.Policy, ev, rec.Recovered, rec.ConnectedBefore, seconds(rec.R99S), seconds(rec.R100S),
			rec.HerdPeakPer100ms, rec.HerdPeakToMean, rec.WastedAttemptsPerClient,
			rec.OutageAttemptsPerClient, row.Summary.Kernel.ListenOverflows)
	}
	return tw.Flush()
}

// seconds formats a nullable R figure.
func seconds(s *float64) string {
	if s == nil {
		return "never"
	}
	return strconv.FormatFloat(*s, 'f', 2, 64)
}
