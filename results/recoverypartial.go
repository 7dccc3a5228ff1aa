package results

import (
	"cmp"
	"slices"
	"sort"
	"time"
)

// RecoveryPartial is one event's recovery as a share of the fleet's
// clients saw it: the first stage of Recoveries. A loadgen process can
// compute it from its own clients' transitions; partials of disjoint
// shares Merge exactly into the fleet's, and FinishRecoveries turns the
// merged partials into the R figures. Its size is bounded by the run's
// length in milliseconds, not by the number of clients.
type RecoveryPartial struct {
	// ConnectedBefore counts the clients up just before the event's Start.
	ConnectedBefore int `json:"connected_before"`
	// Disconnected counts those that went down in the event.
	Disconnected int `json:"disconnected"`
	// Returns counts those that came back before the run's end, by the
	// millisecond of the run's time axis they came back in: sorted by Ms,
	// one entry per millisecond. An R figure is therefore exact to 1 ms
	// (a client back at 1234.9 ms counts at 1234 ms).
	Returns []ReturnCount `json:"returns,omitempty"`
}

// ClientsFor is the clients that make pct % of n, rounded up, in integers
// (no float rounding): the count an R figure waits for (R99: ClientsFor(99,
// n)), in summary.json and in the live metrics alike.
func ClientsFor[N ~int | ~int64](pct, n N) N { return (pct*n + 99) / 100 }

// ReturnCount is N clients back in the millisecond [Ms, Ms+1) from the
// run's start.
type ReturnCount struct {
	Ms int64 `json:"ms"`
	N  int   `json:"n"`
}

// Merge adds o, a partial of the same event over other clients, into p.
func (p *RecoveryPartial) Merge(o RecoveryPartial) {
	p.ConnectedBefore += o.ConnectedBefore
	p.Disconnected += o.Disconnected
	if len(o.Returns) == 0 {
		return
	}
	merged := make([]ReturnCount, 0, len(p.Returns)+len(o.Returns))
	a, b := p.Returns, o.Returns
	for len(a) > 0 || len(b) > 0 {
		switch {
		case len(b) == 0 || len(a) > 0 && a[0].Ms < b[0].Ms:
			merged, a = append(merged, a[0]), a[1:]
		case len(a) == 0 || b[0].Ms < a[0].Ms:
			merged, b = append(merged, b[0]), b[1:]
		default:
			merged = append(merged, ReturnCount{Ms: a[0].Ms, N: a[0].N + b[0].N})
			a, b = a[1:], b[1:]
		}
	}
	p.Returns = merged
}

// MergeRecoveryPartials merges o into dst event by event (dst[i] and o[i]
// belong to the same event) and returns dst, grown to o's length if
// shorter.
func MergeRecoveryPartials(dst, o []RecoveryPartial) []RecoveryPartial {
	for len(dst) < len(o) {
		dst = append(dst, RecoveryPartial{})
	}
	for i := range o {
		dst[i].Merge(o[i])
	}
	return dst
}

// RecoveryPartials is the first stage of Recoveries: from some clients'
// transitions (any order, read as is when SortByClient sorted them; a
// client's transitions must all be in trs), one
// partial per event. events must be in Start order; end is the run's end,
// from which on nothing counts.
//
// For each event, a client counts if it was up just before Start (its
// last transition before Start was up). It went down in the event if its
// first down at or after Start comes before the next event's Start or,
// if later, before the event's Ready: a down after that is the next
// event's doing, not this one's, so a harmless event (a backlog change)
// is not charged with a later restart. It is back at its first up after
// that down, before the run's end, whatever other events started
// meanwhile.
func RecoveryPartials(trs []Transition, events []Event, end time.Duration) []RecoveryPartial {
	// downBy[i]: a down at or after this instant is not event i's.
	downBy := make([]time.Duration, len(events))
	for i, ev := range events {
		next := end
		for _, o := range events[i+1:] {
			if o.Start > ev.Start {
				next = o.Start
				break
			}
		}
		if ready, ok := ev.ReadyAt(); ok {
			next = max(next, ready)
		}
		downBy[i] = min(next, end)
	}
	// One client's transitions together, in time order; the sort is
	// stable, so a client's transitions at one instant keep the order its
	// process recorded them in.
	sorted := trs
	if !slices.IsSortedFunc(trs, byClient) { // SortByClient: read as is
		sorted = slices.Clone(trs)
		SortByClient(sorted)
	}
	returns := make([]map[int64]int, len(events))
	out := make([]RecoveryPartial, len(events))
	for len(sorted) > 0 {
		n := 1
		for n < len(sorted) && sorted[n].Client == sorted[0].Client {
			n++
		}
		own := sorted[:n]
		sorted = sorted[n:]
		for i, ev := range events {
			k := sort.Search(len(own), func(j int) bool { return own[j].At >= ev.Start })
			if k == 0 || !own[k-1].Up {
				continue // not up just before Start
			}
			p := &out[i]
			p.ConnectedBefore++
			for ; k < len(own) && own[k].At < downBy[i] && own[k].Up; k++ {
			}
			if k == len(own) || own[k].At >= downBy[i] {
				continue // stayed up through the event
			}
			p.Disconnected++
			for ; k < len(own) && own[k].At < end && !own[k].Up; k++ {
			}
			if k == len(own) || own[k].At >= end {
				continue // never back
			}
			if returns[i] == nil {
				returns[i] = map[int64]int{}
			}
			returns[i][int64(own[k].At/time.Millisecond)]++
		}
	}
	for i, m := range returns {
		for ms, c := range m {
			out[i].Returns = append(out[i].Returns, ReturnCount{Ms: ms, N: c})
		}
		slices.SortFunc(out[i].Returns, func(a, b ReturnCount) int { return cmp.Compare(a.Ms, b.Ms) })
	}
	return out
}

// SplitPartials cuts one process's partials into chunks of at most
// maxReturns return counts each, for messages of bounded size: every chunk
// holds one partial per event, the first chunk the counts, and the
// returns are shared out in order. The chunks merged
// (MergeRecoveryPartials) are parts again.
func SplitPartials(parts []RecoveryPartial, maxReturns int) [][]RecoveryPartial {
	maxReturns = max(1, maxReturns)
	chunk := make([]RecoveryPartial, len(parts))
	for i, p := range parts {
		chunk[i] = RecoveryPartial{ConnectedBefore: p.ConnectedBefore, Disconnected: p.Disconnected}
	}
	var out [][]RecoveryPartial
	room := maxReturns
	for i, p := range parts {
		rest := p.Returns
		for len(rest) > 0 {
			if room == 0 {
				out = append(out, chunk)
				chunk, room = make([]RecoveryPartial, len(parts)), maxReturns
			}
			n := min(room, len(rest))
			chunk[i].Returns = rest[:n:n]
			rest, room = rest[n:], room-n
		}
	}
	return append(out, chunk)
}
