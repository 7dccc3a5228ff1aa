package backoff

import "testing"

// TestPeak pins the herd metric on arrival curves whose answer is known.
func TestHerdPeak(t *testing.T) {
	const n = 10_000
	for _, tc := range []struct {
		name    string
		windows []uint32
		peak    uint32
		ratio   float64
	}{
		{
			// docs/metrics.md: a fleet that all retries at exactly 1 s, counted from the
			// event: windows 0..10, all in window 10: peak-to-mean 11 ("about
			// 10"), not 1.
			name:    "all at 1 s",
			windows: []uint32{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, n},
			peak:    n, ratio: 11,
		},
		{
			// The same arrivals counted without the empty windows would say
			// 1: the empty windows are what make the herd visible.
			name:    "one window only",
			windows: []uint32{n},
			peak:    n, ratio: 1,
		},
		{
			name:    "perfectly even",
			windows: []uint32{250, 250, 250, 250},
			peak:    250, ratio: 1,
		},
		{
			// Two waves of equal size in 20 windows: mean 1, peak 10.
			name:    "two waves",
			windows: []uint32{10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 10, 0, 0, 0, 0, 0, 0, 0, 0, 0},
			peak:    10, ratio: 10,
		},
		{
			// 1+2+3+4 = 10 over 4 windows: mean 2.5, peak 4.
			name:    "ramp",
			windows: []uint32{1, 2, 3, 4},
			peak:    4, ratio: 1.6,
		},
		{
			// Sums beyond uint32 do not overflow.
			name:    "huge counts",
			windows: []uint32{1<<32 - 1, 1<<32 - 1, 0},
			peak:    1<<32 - 1, ratio: 1.5,
		},
		{name: "no windows", windows: nil, peak: 0, ratio: 0},
		{name: "no attempts", windows: []uint32{0, 0, 0}, peak: 0, ratio: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			peak, ratio := HerdPeak(tc.windows)
			if peak != tc.peak || ratio != tc.ratio {
				t.Errorf("Peak = %d, %v; want %d, %v", peak, ratio, tc.peak, tc.ratio)
			}
		})
	}
}
