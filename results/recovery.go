package results

import (
	"cmp"
	"slices"
	"time"

	"github.com/stampede-dev/stampede/results/herd"
)

// Recovery is how the fleet came back from one event: summary.json
// "recovery", as docs/metrics.md defines it.
//
//	   Start            Ready                          last return
//	─────┼────────────────┼──────────────────────────────────┼──────── cutoff
//	     │ outage attempts│  herd window (100 ms buckets):    │
//	     │                │  herd peak, wasted attempts,      │
//	     │                │  R50..R100 measured from Ready    │
//
// The cutoff is the next event's Start, or the run's end: a client counts
// as recovered only if it is back before it.
type Recovery struct {
	// Event indexes Summary.Events.
	Event int `json:"event"`
	// ConnectedBefore is the number of clients up just before the event's
	// Start (transitions strictly before Start are applied).
	ConnectedBefore int `json:"connected_before"`
	// Recovered is how many of them were up again before the cutoff: each
	// at its first Up after a Down at or after Start, or at Start if it
	// never went down.
	Recovered int `json:"recovered"`
	// R50S, R90S, R99S and R100S are the seconds from Ready until
	// ceil(p * ConnectedBefore) of those clients were up again, clamped
	// at 0 (a client that never went down, or came back before Ready,
	// counts as back at Ready). They are null when fewer than that many
	// recovered before the cutoff: "never", which no number can stand
	// for. They are 0 when ConnectedBefore is 0.
	R50S  *float64 `json:"r50_s"`
	R90S  *float64 `json:"r90_s"`
	R99S  *float64 `json:"r99_s"`
	R100S *float64 `json:"r100_s"`
	// HerdPeakPer100ms is the most connection attempts in one 100 ms
	// timeline bucket of the herd window; HerdPeakToMean its ratio to the
	// mean over the window, empty buckets included (see herd.Peak).
	HerdPeakPer100ms uint32  `json:"herd_peak_per_100ms"`
	HerdPeakToMean   float64 `json:"herd_peak_to_mean"`
	// WastedAttemptsPerClient is the failed attempts in the herd window
	// divided by ConnectedBefore: the herd's harm, after the target was
	// ready again.
	WastedAttemptsPerClient float64 `json:"wasted_attempts_per_client"`
	// OutageAttemptsPerClient is the failed attempts from Start to the herd
	// window divided by ConnectedBefore: refusals nobody can avoid.
	OutageAttemptsPerClient float64 `json:"outage_attempts_per_client"`
	// WastedAttempts and OutageAttempts are the same failed attempts,
	// counted, not divided.
	WastedAttempts uint64 `json:"wasted_attempts"`
	OutageAttempts uint64 `json:"outage_attempts"`
	// OutageS is Ready minus Start in seconds (docs/metrics.md "Outage").
	OutageS float64 `json:"outage_s"`
	// WindowStartS and WindowEndS bound the herd window in seconds from
	// the run's start: whole 100 ms buckets, end exclusive.
	WindowStartS float64 `json:"window_start_s"`
	WindowEndS   float64 `json:"window_end_s"`
}

// readyOf is when the recovery clock of e starts: its Ready, or its Start
// when Ready is unknown (zero, or before Start).
func readyOf(e Event) time.Duration {
	return max(e.Ready, e.Start)
}

// runEnd is end, or, when end is not positive, the end of the timeline or
// just after the last transition, whichever is later.
func runEnd(r *Report, end time.Duration) time.Duration {
	if end > 0 {
		return end
	}
	end = time.Duration(len(r.Timeline)) * Tick
	for _, tr := range r.Transitions {
		end = max(end, tr.At+1)
	}
	return end
}

// sortedTransitions returns r's transitions in time order. The sort is
// stable: one client's transitions at the same instant keep the order its
// process recorded them in.
func sortedTransitions(r *Report) []Transition {
	trs := slices.Clone(r.Transitions)
	slices.SortStableFunc(trs, func(a, b Transition) int { return cmp.Compare(a.At, b.At) })
	return trs
}

// Recoveries computes one Recovery per event from r's transitions and
// timeline. events must be in Start order (Summarize orders them); end is
// the run's end (see runEnd for a zero end).
//
// The herd window runs in timeline buckets from the first that starts at or
// after Ready (the
// target ready again, which a supervisor knows, and a detected outage
// estimates by the first successful reconnect; Start when Ready is
// unknown) through the one holding the last client's return, empty buckets
// included. When not every client came back before the cutoff, the window
// runs to the cutoff instead: the stragglers kept retrying all along, and
// their failures are the herd's harm. Attempts are counted per bucket, so
// the window starts at the bucket boundary after Ready: a refusal a few ms
// before Ready is never counted as wasted (a fixed 1 s policy with a 1 s
// downtime retries exactly then), at the price of counting the attempts of
// the few ms after Ready as outage attempts.
func Recoveries(r *Report, events []Event, end time.Duration) []Recovery {
	end = runEnd(r, end)
	trs := sortedTransitions(r)
	up := map[uint32]bool{}
	next := 0 // first transition not yet applied to up
	out := make([]Recovery, 0, len(events))
	for i, ev := range events {
		for next < len(trs) && trs[next].At < ev.Start {
			up[trs[next].Client] = trs[next].Up
			next++
		}
		cutoff := end
		for _, o := range events[i+1:] {
			if o.Start > ev.Start {
				cutoff = o.Start
				break
			}
		}
		cutoff = max(cutoff, ev.Start)
		out = append(out, recoverOne(r.Timeline, trs[next:], up, i, ev, cutoff))
	}
	return out
}

// client is one connected-before client's progress through an event.
type client struct {
	down bool          // seen going down at or after Start
	back bool          // seen up again after that
	at   time.Duration // when it came back
}

// recoverOne computes event i's Recovery. trs holds the transitions from
// ev.Start on, in time order; up is the state just before ev.Start.
func recoverOne(tl Timeline, trs []Transition, up map[uint32]bool, i int, ev Event, cutoff time.Duration) Recovery {
	ready := readyOf(ev)
	clients := make(map[uint32]client, len(up))
	for c, u := range up {
		if u {
			clients[c] = client{}
		}
	}
	for _, tr := range trs {
		if tr.At >= cutoff {
			break
		}
		c, ok := clients[tr.Client]
		switch {
		case !ok || c.back:
			continue
		case !tr.Up:
			c.down = true
		case c.down:
			c.back, c.at = true, tr.At
		}
		clients[tr.Client] = c
	}
	backAt := make([]time.Duration, 0, len(clients))
	for _, c := range clients {
		switch {
		case !c.down:
			backAt = append(backAt, ev.Start)
		case c.back:
			backAt = append(backAt, c.at)
		}
	}
	slices.Sort(backAt)

	n := len(clients)
	rec := Recovery{
		Event:           i,
		ConnectedBefore: n,
		Recovered:       len(backAt),
		OutageS:         (ready - ev.Start).Seconds(),
	}
	share := func(pct int) *float64 {
		k := (pct*n + 99) / 100 // ceil(pct% of n) without float rounding
		s := 0.0
		if k > 0 {
			if k > len(backAt) {
				return nil
			}
			s = max(0, backAt[k-1]-ready).Seconds()
		}
		return &s
	}
	rec.R50S, rec.R90S, rec.R99S, rec.R100S = share(50), share(90), share(99), share(100)

	first := int((ready + Tick - 1) / Tick)
	last := first
	if len(backAt) == n {
		if n > 0 {
			last = max(first, int(backAt[n-1]/Tick))
		}
	} else if cutoff > ready {
		last = int((cutoff - 1) / Tick)
	}
	windows := make([]uint32, last-first+1)
	for b := first; b <= last && b < len(tl); b++ {
		windows[b-first] = tl[b].Attempts
		rec.WastedAttempts += uint64(tl[b].FailureCount())
	}
	for b := int(ev.Start / Tick); b < first && b < len(tl); b++ {
		rec.OutageAttempts += uint64(tl[b].FailureCount())
	}
	rec.HerdPeakPer100ms, rec.HerdPeakToMean = herd.Peak(windows)
	rec.WindowStartS = (time.Duration(first) * Tick).Seconds()
	rec.WindowEndS = (time.Duration(last+1) * Tick).Seconds()
	if n > 0 {
		rec.WastedAttemptsPerClient = float64(rec.WastedAttempts) / float64(n)
		rec.OutageAttemptsPerClient = float64(rec.OutageAttempts) / float64(n)
	}
	return rec
}
