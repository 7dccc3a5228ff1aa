package results

import (
	"bytes"
	"testing"
	"time"
)

// FuzzReadHistogramLog feeds the histogram log reader (what report and
// compare read back from a results folder, which may come from anywhere)
// any text. It must return a histogram or an error, never panic; a
// histogram it returns writes out and reads back equal.
func FuzzReadHistogramLog(f *testing.F) {
	h := NewHistogram()
	for i := range 200 {
		RecordLatency(h, time.Duration(100+i*i)*time.Microsecond)
	}
	var log bytes.Buffer
	start := time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)
	if err := WriteHistogramLog(&log, "connect", h, start, 30*time.Second); err != nil {
		f.Fatal(err)
	}
	f.Add(log.String())
	var empty bytes.Buffer
	if err := WriteHistogramLog(&empty, "resume", NewHistogram(), start, time.Second); err != nil {
		f.Fatal(err)
	}
	f.Add(empty.String())
	f.Add("#[StartTime: 0]\n\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n0.000,1.000,1.0,HISTFAAAAA==\n")
	f.Add("0.000,1.000,1.0,!!!\n")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		b := []byte(s)
		if len(b) > 64<<10 {
			return // a log's lines, not its length, are what is tried
		}
		got, err := ReadHistogramLog(bytes.NewReader(b))
		if err != nil {
			return
		}
		var out bytes.Buffer
		if err := WriteHistogramLog(&out, "fuzz", got, start, time.Second); err != nil {
			t.Fatalf("writing a histogram read back: %v", err)
		}
		again, err := ReadHistogramLog(&out)
		if err != nil {
			t.Fatalf("reading back what was written: %v", err)
		}
		if !again.Equals(got) {
			t.Fatalf("round trip changed the histogram: %d values, then %d", got.TotalCount(), again.TotalCount())
		}
	})
}
