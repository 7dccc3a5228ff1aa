package results

import (
	"testing"
	"time"
)

// TestMergeScheduledRTT: Merge merges the scheduled-send round trips as it
// does the others, and a report without them (an older worker's) adds
// nothing.
func TestMergeScheduledRTT(t *testing.T) {
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	a, b := NewReport(start, 2), NewReport(start, 3)
	RecordLatency(a.RTT, 2*time.Millisecond)
	RecordLatency(a.RTTScheduled, 5*time.Millisecond)
	RecordLatency(b.RTT, 3*time.Millisecond)
	RecordLatency(b.RTTScheduled, 3*time.Millisecond)
	RecordLatency(b.RTTScheduled, 40*time.Millisecond)
	if err := a.Merge(b); err != nil {
		t.Fatal(err)
	}
	old := NewReport(start, 1)
	old.RTTScheduled = nil
	if err := a.Merge(old); err != nil {
		t.Fatal(err)
	}
	if got := a.RTTScheduled.TotalCount(); got != 3 {
		t.Errorf("scheduled count %d, want 3", got)
	}
	if got := a.RTTScheduled.Max(); !a.RTTScheduled.ValuesAreEquivalent(got, 40000) {
		t.Errorf("scheduled max %d µs, want 40000", got)
	}
	if got := a.RTT.TotalCount(); got != 2 {
		t.Errorf("rtt count %d, want 2", got)
	}
}

// TestMergeIntervals: an empty report takes the intervals' length of the
// first report merged into it; one of another length is then refused
// rather than mixed.
func TestMergeIntervals(t *testing.T) {
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	worker := func(length time.Duration) *Report {
		r := NewReport(start, 1)
		r.Intervals = NewIntervals(length)
		s := NewStream(r)
		s.Record(DistConnect, 700*time.Millisecond, time.Millisecond)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		return r
	}
	merged := NewReport(start, 0)
	for range 2 {
		if err := merged.Merge(worker(500 * time.Millisecond)); err != nil {
			t.Fatal(err)
		}
	}
	p, err := merged.Intervals.Packed(DistConnect, 1)
	if merged.Intervals.Length != 500*time.Millisecond || err != nil || p == nil || p.TotalCount() != 2 {
		t.Errorf("merged intervals of %s: interval 1 %v (%v)", merged.Intervals.Length, p, err)
	}
	if err := merged.Merge(worker(time.Second)); err == nil {
		t.Error("merged intervals of 1s into 500ms ones")
	}
}
