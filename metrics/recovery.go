package metrics

import (
	"time"

	"github.com/stampede-dev/stampede/results"
)

// maxHistory bounds the connected-count history: when it is full the older
// half is dropped (recoveries already known are cached, so only an event
// still recovering after 50,000 changes of the count could lose its start).
const maxHistory = 100_000

// shares are the fleet recovery shares in percent: R50, R90, R99, R100.
var shares = [4]int64{50, 90, 99, 100}

// history is the connected count over the run, one entry per change (the
// count stays at an entry's value until the next), and the recoveries
// already estimated.
type history struct {
	at        []time.Duration
	connected []int64
	known     map[eventKey][4]time.Duration
}

// eventKey names an event independently of its index, which can shift
// while overlapping events finish.
type eventKey struct {
	start time.Duration
	spec  string
}

// estimate is one event's live recovery: r[i] is the time from Ready until
// shares[i] percent of the clients connected before the event were
// connected again, or -1 while not yet known.
type estimate struct {
	event int
	spec  string
	r     [4]time.Duration
}

// add records the connected count at offset at.
func (h *history) add(at time.Duration, connected int64) {
	if n := len(h.connected); n > 0 && h.connected[n-1] == connected {
		return
	}
	if len(h.at) == maxHistory {
		half := maxHistory / 2
		h.at = append(h.at[:0], h.at[half:]...)
		h.connected = append(h.connected[:0], h.connected[half:]...)
	}
	h.at = append(h.at, at)
	h.connected = append(h.connected, connected)
}

// valueAt returns the connected count at offset t: the last entry at or
// before t (before reports whether strictly before t is meant).
func (h *history) valueAt(t time.Duration, strictly bool) int64 {
	var v int64
	for i, at := range h.at {
		if at > t || (strictly && at == t) {
			break
		}
		v = h.connected[i]
	}
	return v
}

// recovery estimates the recovery of each finished event from the
// connected count, as summary.Recovery defines it but counted on the whole
// fleet rather than per client, and to the resolution of the progress
// updates. The cutoff is the next event's start, or now.
func (h *history) recovery(events []results.Event, now time.Duration) []estimate {
	out := make([]estimate, 0, len(events))
	for i, ev := range events {
		key := eventKey{ev.Start, ev.Spec}
		if r, ok := h.known[key]; ok {
			out = append(out, estimate{i, ev.Spec, r})
			continue
		}
		cutoff := now + 1 // counts seen by now are in, those at the next start are not
		if i+1 < len(events) && events[i+1].Start < cutoff {
			cutoff = events[i+1].Start
		}
		est := estimate{event: i, spec: ev.Spec, r: [4]time.Duration{-1, -1, -1, -1}}
		before := h.valueAt(ev.Start, true)
		done := true
		for j, pct := range shares {
			need := results.ClientsFor(pct, before)
			est.r[j] = h.reached(need, ev.Ready, cutoff)
			done = done && est.r[j] >= 0
		}
		if done {
			if h.known == nil {
				h.known = map[eventKey][4]time.Duration{}
			}
			h.known[key] = est.r
		}
		out = append(out, est)
	}
	return out
}

// reached returns how long after ready the connected count first reached
// need, 0 if it already had at ready, or -1 if it had not before cutoff.
func (h *history) reached(need int64, ready, cutoff time.Duration) time.Duration {
	if need <= 0 || h.valueAt(ready, false) >= need {
		return 0
	}
	for i, at := range h.at {
		if at <= ready {
			continue
		}
		if at >= cutoff {
			break
		}
		if h.connected[i] >= need {
			return at - ready
		}
	}
	return -1
}
