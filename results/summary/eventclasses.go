package summary

import (
	"time"

	"github.com/stampede-dev/stampede/connerr"
	"github.com/stampede-dev/stampede/results"
)

// eventClasses counts failed attempts and ended connections by class in
// the timeline buckets of event i: from the bucket holding its Start up to
// the bucket holding the next later event's Start (or end), so each bucket
// belongs to one event. events must be in Start order. Every class is
// present in both maps.
func eventClasses(tl results.Timeline, events []results.Event, i int, end time.Duration) (failures, disconnects map[string]uint64) {
	first, last := eventBuckets(tl, events, i, end)
	var fail, disc [connerr.NumClasses]uint64
	for b := first; b < last; b++ {
		for k := range tl[b].Failures {
			fail[k] += uint64(tl[b].Failures[k])
			disc[k] += uint64(tl[b].Disconnects[k])
		}
	}
	failures, disconnects = map[string]uint64{}, map[string]uint64{}
	for _, cl := range connerr.Classes() {
		failures[cl.String()] = fail[cl]
		disconnects[cl.String()] = disc[cl]
	}
	return failures, disconnects
}

// NonZero keeps the classes of a count map (Failures, Disconnects, which
// hold every class) that counted anything: what a reader of the map
// wants to see. The result is never nil, so it encodes as {} when empty.
func NonZero(m map[string]uint64) map[string]uint64 {
	out := map[string]uint64{}
	for k, v := range m {
		if v > 0 {
			out[k] = v
		}
	}
	return out
}

// eventBuckets are the timeline buckets of event i, [first, last): from
// the bucket holding its Start up to the bucket holding the next later
// event's Start (or end, its partial bucket included), so each bucket
// belongs to one event. events must be in Start order.
func eventBuckets(tl results.Timeline, events []results.Event, i int, end time.Duration) (first, last int) {
	ev := events[i]
	cutoff := end
	for _, o := range events[i+1:] {
		if o.Start > ev.Start {
			cutoff = o.Start
			break
		}
	}
	first, last = eventBucket(ev.Start), eventBucket(cutoff)
	if cutoff == end {
		last = int((end + results.Tick - 1) / results.Tick) // the run's last, partial bucket too
	}
	return first, min(last, len(tl))
}

// eventTLS counts the wss:// successes by TLS handshake from the bucket
// holding event i's Start up to the one holding the Start of the next
// event that begins after i has ended (its End or Ready, whichever is
// later; the run's end when none does): the reconnects the event brought,
// full or resumed. An event that begins within i's span (a drill's
// detected outage within its deploy) does not cut it short. events must
// be in Start order.
func eventTLS(tl results.Timeline, events []results.Event, i int, end time.Duration) (full, resumed uint64) {
	ev := events[i]
	over := max(ev.Start, ev.End, ev.Ready)
	first, last := eventBucket(ev.Start), int((end+results.Tick-1)/results.Tick)
	for _, o := range events[i+1:] {
		if o.Start > over {
			last = eventBucket(o.Start)
			break
		}
	}
	for b := first; b < min(last, len(tl)); b++ {
		full += uint64(tl[b].TLSFull)
		resumed += uint64(tl[b].TLSResumed)
	}
	return full, resumed
}

// eventBucket is the index of the timeline bucket holding offset d (0 for a
// negative d).
func eventBucket(d time.Duration) int {
	if d <= 0 {
		return 0
	}
	return int(d / results.Tick)
}
