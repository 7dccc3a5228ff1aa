package summary

import (
	"testing"
	"time"

	"github.com/stampede-dev/stampede/results"
)

func TestBucketRecordRTT(t *testing.T) {
	var b results.Bucket
	for _, d := range []time.Duration{0, 1500 * time.Microsecond, 200 * time.Millisecond, 2 * time.Hour} {
		b.RecordRTT(d)
	}
	// 0 counts as 1 µs and 2 h as one hour, as RecordLatency records them.
	if want := (results.Bucket{RTTCount: 4, RTTSumMicros: 1 + 1500 + 200_000 + 3_600_000_000, RTTMaxMicros: 3_600_000_000}); b != want {
		t.Errorf("bucket %+v, want %+v", b, want)
	}
	o := results.Bucket{RTTCount: 2, RTTSumMicros: 10, RTTMaxMicros: 4_000_000_000}
	b.Add(&o)
	if b.RTTCount != 6 || b.RTTSumMicros != 3_600_201_511 || b.RTTMaxMicros != 4_000_000_000 {
		t.Errorf("after Add: %+v", b)
	}
	o.Add(&results.Bucket{RTTCount: 1, RTTSumMicros: 7, RTTMaxMicros: 7})
	if o.RTTMaxMicros != 4_000_000_000 || o.RTTCount != 3 || o.RTTSumMicros != 17 {
		t.Errorf("Add keeps the larger max: %+v", o)
	}
}

// rttTimeline is a 10 s timeline with a 1 ms round trip in each of buckets
// 0..99, and 200 ms and 300 ms round trips in buckets 40..49 (a latency
// fault from 4 s to 5 s).
func rttTimeline() results.Timeline {
	var tl results.Timeline
	for i := range 100 {
		tl.At(time.Duration(i) * results.Tick).RecordRTT(time.Millisecond)
	}
	for i := 40; i < 50; i++ {
		b := tl.At(time.Duration(i) * results.Tick)
		b.RecordRTT(200 * time.Millisecond)
		b.RecordRTT(300 * time.Millisecond)
	}
	return tl
}

func TestEventRTT(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	for _, tc := range []struct {
		name           string
		ev             results.Event
		during, before RTTStats
	}{
		{
			// Buckets 40..50: 11 of 1 ms, 10 of 200 ms, 10 of 300 ms: 5011 ms / 31.
			name:   "proxy latency 4s..5s",
			ev:     results.Event{Kind: "proxy", Start: ms(4000), End: ms(5000), Ready: ms(5000)},
			during: RTTStats{Mean: 161.645, Max: 300, Count: 31},
			before: RTTStats{Mean: 1, Max: 1, Count: 10},
		},
		{
			// No End: the window runs to Ready, bucket 41 included.
			name:   "window to ready",
			ev:     results.Event{Kind: "restart", Start: ms(4050), Ready: ms(4100)},
			during: RTTStats{Mean: 167, Max: 300, Count: 6},
			before: RTTStats{Mean: 1, Max: 1, Count: 10},
		},
		{
			// Neither End nor Ready: the bucket holding Start alone.
			name:   "instant",
			ev:     results.Event{Kind: "backlog", Start: ms(5000)},
			during: RTTStats{Mean: 1, Max: 1, Count: 1},
			before: RTTStats{Mean: 167, Max: 300, Count: 30},
		},
		{
			name:   "at the start: nothing before",
			ev:     results.Event{Kind: "stall", Start: 0, End: ms(250)},
			during: RTTStats{Mean: 1, Max: 1, Count: 3},
		},
		{
			name:   "half a second in: half a second before",
			ev:     results.Event{Kind: "stall", Start: ms(500), End: ms(500)},
			during: RTTStats{Mean: 1, Max: 1, Count: 1},
			before: RTTStats{Mean: 1, Max: 1, Count: 5},
		},
		{
			name:   "past the timeline",
			ev:     results.Event{Kind: "stall", Start: ms(9950), End: ms(12000)},
			during: RTTStats{Mean: 1, Max: 1, Count: 1},
			before: RTTStats{Mean: 1, Max: 1, Count: 10},
		},
		{
			name: "empty timeline",
			ev:   results.Event{Kind: "stall", Start: ms(9950), End: ms(12000)},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tl := rttTimeline()
			if tc.name == "empty timeline" {
				tl = nil
			}
			during, before := eventRTT(tl, tc.ev)
			if during != tc.during || before != tc.before {
				t.Errorf("eventRTT = %+v, %+v; want %+v, %+v", during, before, tc.during, tc.before)
			}
		})
	}
}

func TestSummarizeEventRTT(t *testing.T) {
	r := results.NewReport(time.Time{}, 10)
	r.Timeline = rttTimeline()
	s := Summarize(Input{Report: r, End: 10 * time.Second, Events: []results.Event{
		{Kind: "proxy", Spec: "at 4s proxy latency=200ms for 1s", Start: 4 * time.Second, End: 5 * time.Second, Ready: 5 * time.Second},
	}})
	e := s.Events[0]
	if want := (RTTStats{Mean: 161.645, Max: 300, Count: 31}); e.RTTMS != want {
		t.Errorf("rtt_ms = %+v, want %+v", e.RTTMS, want)
	}
	if want := (RTTStats{Mean: 1, Max: 1, Count: 10}); e.RTTBeforeMS != want {
		t.Errorf("rtt_before_ms = %+v, want %+v", e.RTTBeforeMS, want)
	}
}
