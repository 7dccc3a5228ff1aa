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
