package summary

import (
	"math"
	"time"

	"github.com/stampede-dev/stampede/results"
)

// RTTStats summarises the message round trips of some timeline buckets in
// milliseconds.
type RTTStats struct {
	// Mean is the mean round trip in ms, to the µs.
	Mean float64 `json:"mean"`
	// Max is the largest round trip in ms.
	Max float64 `json:"max"`
	// Count is the number of round trips; 0 means Mean and Max are 0
	// because none completed, not because they were instant.
	Count uint64 `json:"count"`
}

// rttBefore is how far before an event rtt_before_ms looks.
const rttBefore = time.Second

// rttOf sums the RTT aggregates of buckets [first, last] of tl (clamped to
// the timeline) into RTTStats.
func rttOf(tl results.Timeline, first, last int) RTTStats {
	first, last = max(first, 0), min(last, len(tl)-1)
	var sum uint64
	var top uint32
	var s RTTStats
	for i := first; i <= last; i++ {
		b := &tl[i]
		s.Count += uint64(b.RTTCount)
		sum += b.RTTSumMicros
		top = max(top, b.RTTMaxMicros)
	}
	const usPerMs = 1e3
	if s.Count > 0 {
		s.Mean = math.Round(float64(sum)/float64(s.Count)) / usPerMs
		s.Max = float64(top) / usPerMs
	}
	return s
}

// eventRTT is the round trips of event e's window, from the bucket holding
// its Start to the bucket holding its End (its Ready when it has no End),
// both included, and of the second before its Start (the whole buckets
// before the one holding Start).
func eventRTT(tl results.Timeline, e results.Event) (during, before RTTStats) {
	end := e.End
	if end <= 0 {
		end = e.ClockStart()
	}
	first := eventBucket(e.Start)
	during = rttOf(tl, first, eventBucket(max(end, e.Start)))
	before = rttOf(tl, first-int(rttBefore/results.Tick), first-1)
	return during, before
}
