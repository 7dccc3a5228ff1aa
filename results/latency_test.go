package results

import (
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

func TestPercentiles(t *testing.T) {
	// hist records the given microsecond values. Below 2048 µs, three
	// significant digits store every value exactly, so figures are exact.
	hist := func(us ...int64) *hdrhistogram.Histogram {
		h := NewHistogram()
		for _, v := range us {
			RecordLatency(h, time.Duration(v)*time.Microsecond)
		}
		return h
	}
	hundred := make([]int64, 100) // 10, 20, ..., 1000 µs
	for i := range hundred {
		hundred[i] = int64(i+1) * 10
	}
	for _, tc := range []struct {
		name string
		h    *hdrhistogram.Histogram
		want Latency
	}{
		{"nil", nil, Latency{}},
		{"empty", NewHistogram(), Latency{}},
		{"one value", hist(1500), Latency{P50: 1.5, P90: 1.5, P99: 1.5, Max: 1.5, Count: 1, Mean: 1.5}},
		// 100 values 10..1000 µs: the 50th is 500 µs, the 90th 900, the
		// 99th 990; mean (10+1000)/2 = 505 µs.
		{"hundred", hist(hundred...), Latency{P50: 0.5, P90: 0.9, P99: 0.99, Max: 1, Count: 100, Mean: 0.505}},
		// Sub-microsecond latencies are clamped up to 1 µs, not dropped.
		{"clamped", hist(0, 0), Latency{P50: 0.001, P90: 0.001, P99: 0.001, Max: 0.001, Count: 2, Mean: 0.001}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Percentiles(tc.h); got != tc.want {
				t.Errorf("Percentiles = %+v, want %+v", got, tc.want)
			}
		})
	}
}
