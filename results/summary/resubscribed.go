package summary

import (
	"time"

	"github.com/stampede-dev/stampede/results"
)

// Resubscribed is how the fleet of a session protocol came back to its
// subscriptions after one event: summary.json recovery[i].resubscribed,
// beside the figures to back (docs/protocols.md "Back and re-subscribed").
// Its clients are those re-subscribed just before the event's Start; the
// figures count, as Recovery's do, from the event's Ready to each share of
// them being re-subscribed again (every subscription acknowledged), from
// Report.Resubscribed.
type Resubscribed struct {
	// SubscribedBefore is the number of clients re-subscribed just before
	// the event's Start.
	SubscribedBefore int `json:"subscribed_before"`
	// Recovered is how many of them were re-subscribed again before the
	// run ended, or never lost their session.
	Recovered int `json:"recovered"`
	// R50S, R90S, R99S and R100S are seconds from Ready, null as
	// Recovery's are (not that many back before the run ended, never
	// ready, nobody lost).
	R50S  *float64 `json:"r50_s"`
	R90S  *float64 `json:"r90_s"`
	R99S  *float64 `json:"r99_s"`
	R100S *float64 `json:"r100_s"`
}

// addResubscribed sets each recovery's figures to re-subscribed, from the
// merged partials of the re-subscribed transitions (parts), or from the
// report's own when parts is nil; a report without any leaves them nil.
func addResubscribed(out []Recovery, r *results.Report, parts []results.RecoveryPartial, events []results.Event, end time.Duration) {
	if parts == nil {
		if len(r.Resubscribed) == 0 {
			return
		}
		parts = results.RecoveryPartials(r.Resubscribed, events, end)
	}
	rs := FinishRecoveries(parts, r.Timeline, events, end)
	for i := range out {
		if i >= len(rs) {
			break
		}
		x := rs[i]
		out[i].Resubscribed = &Resubscribed{SubscribedBefore: x.ConnectedBefore, Recovered: x.Recovered,
			R50S: x.R50S, R90S: x.R90S, R99S: x.R99S, R100S: x.R100S}
	}
}
