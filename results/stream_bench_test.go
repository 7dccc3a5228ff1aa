package results

import (
	"testing"
	"time"
)

// BenchmarkStreamRecord: a latency recorded into the total and the live
// interval, and a timeline count, as the loadgen's recorder does per
// event.
func BenchmarkStreamRecord(b *testing.B) {
	s := NewStream(NewReport(streamStart, 1))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		at := time.Duration(i) * 50 * time.Microsecond // 20,000 events a second
		s.At(at).Successes++
		s.Record(DistConnect, at, time.Duration(i%5000)*time.Microsecond)
	}
}
