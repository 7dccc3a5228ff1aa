package summary

import (
	"fmt"
	"time"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/results"
)

// Recovery is how the fleet came back from one event: summary.json
// "recovery", following docs/results.md "Recovery".
//
//	   Start            Ready                          last return
//	─────┼────────────────┼──────────────────────────────────┼──────── run end
//	     │ outage attempts│  herd window (100 ms buckets):    │
//	     │                │  herd peak, wasted attempts,      │
//	     │                │  R50..R100 measured from Ready    │
//
// Its clients are those connected just before Start. One of them went
// down in the event if it disconnected at or after Start and before the
// next event started (or before Ready, if later); it is back at its first
// reconnect after that, however many other events started meanwhile, up
// to the run's end. Figures that were not measured are null: every figure
// after Recovered when nobody went down ("nobody to recover"), and every
// figure that runs from Ready when the target was never ready again.
type Recovery struct {
	// Event indexes Summary.Events.
	Event int `json:"event"`
	// ConnectedBefore is the number of clients up just before the event's
	// Start (transitions strictly before Start are applied).
	ConnectedBefore int `json:"connected_before"`
	// Disconnected is how many of them went down in the event. Zero means
	// nobody to recover: the figures below Recovered are null.
	Disconnected int `json:"disconnected"`
	// Recovered is how many of the ConnectedBefore clients were up again
	// before the run ended: those that came back, and those that never
	// went down.
	Recovered int `json:"recovered"`
	// NeverDown is how many of the ConnectedBefore clients never went down
	// in the event (ConnectedBefore minus Disconnected): counted in
	// Recovered, and reported apart because a client whose connection
	// died silently (a blackhole) stays "up" until a keepalive ping finds
	// it dead (docs/results.md "Recovery").
	NeverDown int `json:"never_down"`
	// AttemptsExhausted is how many clients gave up because their policy
	// ran out of attempts (signalr after 4 retries, attempts=N) from the
	// event's start to the next event's (or the run's end): gone for good,
	// where the others not back may still come.
	AttemptsExhausted int `json:"attempts_exhausted"`
	// StillRetrying is how many of the ConnectedBefore clients were neither
	// up again nor out of attempts when the run ended: ConnectedBefore
	// minus Recovered minus AttemptsExhausted, at least 0.
	StillRetrying int `json:"still_retrying"`
	// R50S, R90S, R99S and R100S are the seconds from Ready until
	// ceil(p * ConnectedBefore) of those clients were up again, clamped
	// at 0 (a client that never went down, or came back before Ready,
	// counts as back at Ready), exact to 1 ms (RecoveryPartial). Null
	// when fewer than that many were back before the run ended ("never",
	// which no number can stand for), when the target was never ready
	// again, and when nobody went down.
	R50S  *float64 `json:"r50_s"`
	R90S  *float64 `json:"r90_s"`
	R99S  *float64 `json:"r99_s"`
	R100S *float64 `json:"r100_s"`
	// HerdPeakPer100ms is the most connection attempts in one 100 ms
	// timeline bucket of the herd window; HerdPeakToMean its ratio to the
	// mean over the window, empty buckets included (see backoff.HerdPeak). Null
	// with no herd window (never ready, or nobody went down).
	HerdPeakPer100ms *uint32  `json:"herd_peak_per_100ms"`
	HerdPeakToMean   *float64 `json:"herd_peak_to_mean"`
	// WastedAttemptsPerClient is the failed attempts in the herd window
	// divided by ConnectedBefore: the herd's harm, after the target was
	// ready again. Null with no herd window.
	WastedAttemptsPerClient *float64 `json:"wasted_attempts_per_client"`
	// OutageAttemptsPerClient is the failed attempts from Start to the herd
	// window (to the run's end when the target was never ready again)
	// divided by ConnectedBefore: refusals nobody can avoid. Null when
	// nobody went down.
	OutageAttemptsPerClient *float64 `json:"outage_attempts_per_client"`
	// WastedAttempts and OutageAttempts are the same failed attempts,
	// counted, not divided, and null alike.
	WastedAttempts *uint64 `json:"wasted_attempts"`
	OutageAttempts *uint64 `json:"outage_attempts"`
	// OutageS is Ready minus Start in seconds (docs/results.md "Recovery");
	// null when the target was never ready again.
	OutageS *float64 `json:"outage_s"`
	// WindowStartS and WindowEndS bound the herd window in seconds from
	// the run's start: whole 100 ms buckets, end exclusive. Null with no
	// herd window.
	WindowStartS *float64 `json:"window_start_s"`
	WindowEndS   *float64 `json:"window_end_s"`
	// MeasuredFrom names the instant R50S..R100S and the herd window
	// count from (docs/summary-json.md "Recovery"): MeasuredReady,
	// MeasuredLastReady, MeasuredEnd, MeasuredStart, or MeasuredNone.
	MeasuredFrom string `json:"measured_from"`
	// Note says, in one line, what figures that read as perfect (every R
	// 0: all back by the instant they count from; or R50 0: half back by
	// it, as in a rolling restart) or as failure (never:
	// not all back by the run's end, or never ready) were measured from;
	// empty otherwise.
	Note string `json:"note,omitempty"`
	// Resubscribed is the same recovery measured to re-subscribed, for a
	// fleet that speaks a session protocol; absent otherwise.
	Resubscribed *Resubscribed `json:"resubscribed,omitempty"`
}

// The instants a Recovery's figures count from (Recovery.MeasuredFrom).
const (
	// MeasuredReady: the target ready again after a restart.
	MeasuredReady = "ready"
	// MeasuredLastReady: the last process of a restart that went one
	// process at a time (procs=one, rolling) ready again; clients back
	// before it count as back at it.
	MeasuredLastReady = "last_process_ready"
	// MeasuredEnd: the fault lifted (a stall, reject, setting or proxy
	// fault), or a detected outage's first reconnect.
	MeasuredEnd = "fault_end"
	// MeasuredStart: the event's start; when it was ready is unknown.
	MeasuredStart = "start"
	// MeasuredNone: no figure counts from an instant: nobody went down,
	// or the target was not ready again before the run ended.
	MeasuredNone = "none"
)

// measuredFrom names the instant the figures of ev count from, and in
// words.
func measuredFrom(ev results.Event) (string, string) {
	switch {
	case ev.NeverReady:
		return MeasuredNone, ""
	case ev.Ready <= ev.Start:
		return MeasuredStart, fmt.Sprintf("the event's start at %.2fs (when it was ready is unknown)", ev.Start.Seconds())
	case len(ev.Steps) > 0:
		return MeasuredLastReady, fmt.Sprintf("the last restarted process ready at %.2fs (%d processes one at a time from %.2fs)", ev.Ready.Seconds(), len(ev.Steps), ev.Start.Seconds())
	case ev.Kind == "restart":
		return MeasuredReady, fmt.Sprintf("the target ready again at %.2fs", ev.Ready.Seconds())
	}
	return MeasuredEnd, fmt.Sprintf("the fault's end at %.2fs", ev.Ready.Seconds())
}

// explain sets what r's figures were measured from (MeasuredFrom), and
// for figures that read as perfect or as failure a Note that says so. end
// is the run's end.
func (r *Recovery) explain(ev results.Event, end time.Duration) {
	var from string
	r.MeasuredFrom, from = measuredFrom(ev)
	switch {
	case r.Disconnected == 0:
		r.MeasuredFrom = MeasuredNone
	case ev.NeverReady:
		r.Note = fmt.Sprintf("not ready again before the run's end at %.2fs: %d of %d back by then, no R figure", end.Seconds(), r.Recovered, r.ConnectedBefore)
	case r.R100S == nil:
		r.Note = fmt.Sprintf("%d of %d back by the run's end at %.2fs, counted from %s", r.Recovered, r.ConnectedBefore, end.Seconds(), from)
	case *r.R100S == 0:
		r.Note = fmt.Sprintf("every client was back by %s: R50-R100 count from then, not from the event's start", from)
	case r.R50S != nil && *r.R50S == 0:
		// A rolling restart: the clients of the processes restarted first
		// are back on the others before the last one is ready.
		r.Note = fmt.Sprintf("half the clients or more were back by %s: R figures count from then, not from the event's start", from)
	}
}

// NeverReady reports whether the target was never ready again after the
// event: its clients had somebody to recover, and no R figure could start.
func (r Recovery) NeverReady() bool { return r.Disconnected > 0 && r.OutageS == nil }

// runEnd is end, or, when end is not positive, the end of the timeline or
// just after the last transition, whichever is later.
func runEnd(r *results.Report, end time.Duration) time.Duration {
	if end > 0 {
		return end
	}
	end = time.Duration(len(r.Timeline)) * results.Tick
	for _, tr := range r.Transitions {
		end = max(end, tr.At+1)
	}
	return end
}

// Recoveries computes one Recovery per event from r's transitions and
// timeline, in two stages: RecoveryPartials over the clients, then
// FinishRecoveries over the merged partials and the timeline. events must
// be in Start order (Summarize orders them); end is the run's end (see
// runEnd for a zero end).
func Recoveries(r *results.Report, events []results.Event, end time.Duration) []Recovery {
	end = runEnd(r, end)
	return FinishRecoveries(results.RecoveryPartials(r.Transitions, events, end), r.Timeline, events, end)
}

// FinishRecoveries computes one Recovery per event from its merged
// partial (parts[i] belongs to events[i]) and the fleet's timeline. end is
// the run's end; events are in Start order.
//
// The herd window runs in timeline buckets from the first that starts at
// or after Ready (the target ready again, which a supervisor knows, and a
// detected outage estimates by the first successful reconnect; Start when
// Ready is unknown) through the one holding the last client's return,
// empty buckets included. When not every client came back before the run
// ended, the window runs to the end instead: the stragglers kept retrying
// all along, and their failures are the herd's harm. Attempts are counted
// per bucket, so the window starts at the bucket boundary after Ready: a
// refusal a few ms before Ready is never counted as wasted (a fixed 1 s
// policy with a 1 s downtime retries exactly then), at the price of
// counting the attempts of the few ms after Ready as outage attempts. The
// timeline is the whole fleet's: when events overlap, so do their windows.
func FinishRecoveries(parts []results.RecoveryPartial, tl results.Timeline, events []results.Event, end time.Duration) []Recovery {
	out := make([]Recovery, len(events))
	for i, ev := range events {
		var p results.RecoveryPartial
		if i < len(parts) {
			p = parts[i]
		}
		out[i] = finishOne(p, tl, i, ev, end)
		until := end
		if i+1 < len(events) {
			until = events[i+1].Start
		}
		out[i].countExhausted(tl, ev.Start, until)
	}
	return out
}

// countExhausted sets AttemptsExhausted from the timeline's buckets from
// from's to until's (exclusive), and StillRetrying from it.
func (r *Recovery) countExhausted(tl results.Timeline, from, until time.Duration) {
	for b := max(int(from/results.Tick), 0); b < len(tl) && time.Duration(b)*results.Tick < until; b++ {
		r.AttemptsExhausted += int(tl[b].Exhausted)
	}
	r.StillRetrying = max(0, r.ConnectedBefore-r.Recovered-r.AttemptsExhausted)
}

// finishOne computes event i's Recovery from its merged partial.
func finishOne(p results.RecoveryPartial, tl results.Timeline, i int, ev results.Event, end time.Duration) Recovery {
	n, stayed := p.ConnectedBefore, p.ConnectedBefore-p.Disconnected
	returned := 0
	for _, rc := range p.Returns {
		returned += rc.N
	}
	rec := Recovery{Event: i, ConnectedBefore: n, Disconnected: p.Disconnected, Recovered: stayed + returned, NeverDown: stayed}
	ready, ok := ev.ReadyAt()
	if ok {
		rec.OutageS = ptrTo((ready - ev.Start).Seconds())
	}
	if p.Disconnected == 0 {
		return rec // nobody to recover: nothing measured
	}
	failures := func(from, to int) uint64 { // buckets from..to, both included
		var f uint64
		for b := max(from, 0); b <= to && b < len(tl); b++ {
			f += uint64(tl[b].FailureCount())
		}
		return f
	}
	startB := int(ev.Start / results.Tick)
	if !ok {
		// Never ready: every failure to the run's end was the outage's.
		o := failures(startB, int((end-1)/results.Tick))
		rec.OutageAttempts = &o
		rec.OutageAttemptsPerClient = ptrTo(float64(o) / float64(n))
		return rec
	}

	share := func(pct int) *float64 {
		k := results.ClientsFor(pct, n)
		if k <= stayed {
			return ptrTo(0.0)
		}
		need := k - stayed
		for _, rc := range p.Returns {
			if need -= rc.N; need <= 0 {
				return ptrTo(max(0, time.Duration(rc.Ms)*time.Millisecond-ready).Seconds())
			}
		}
		return nil
	}
	rec.R50S, rec.R90S, rec.R99S, rec.R100S = share(50), share(90), share(99), share(100)

	first := int((ready + results.Tick - 1) / results.Tick)
	last := first - 1 // an empty window: the run ended at Ready
	switch {
	case returned == p.Disconnected:
		lastBack := time.Duration(p.Returns[len(p.Returns)-1].Ms) * time.Millisecond
		last = max(first, int(lastBack/results.Tick))
	case end > ready:
		last = max(first, int((end-1)/results.Tick))
	}
	windows := make([]uint32, max(0, last-first+1))
	for b := first; b <= last && b < len(tl); b++ {
		windows[b-first] = tl[b].Attempts
	}
	wasted, outage := failures(first, last), failures(startB, first-1)
	peak, ratio := backoff.HerdPeak(windows)
	rec.HerdPeakPer100ms, rec.HerdPeakToMean = &peak, &ratio
	rec.WastedAttempts, rec.OutageAttempts = &wasted, &outage
	rec.WastedAttemptsPerClient = ptrTo(float64(wasted) / float64(n))
	rec.OutageAttemptsPerClient = ptrTo(float64(outage) / float64(n))
	rec.WindowStartS = ptrTo((time.Duration(first) * results.Tick).Seconds())
	rec.WindowEndS = ptrTo((time.Duration(last+1) * results.Tick).Seconds())
	return rec
}

func ptrTo[T any](v T) *T { return &v }
