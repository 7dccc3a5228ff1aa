package backoff

// The herd metric of docs/metrics.md, shared by `stampede policy` (Fleet)
// and the run results (package results, which imports it from here, so
// that backoff depends on nothing of the results).

import "time"

// HerdWindow is the width of one herd window, and of one results timeline
// bucket: 100 ms.
const HerdWindow = 100 * time.Millisecond

// HerdPeak computes the herd metric (docs/metrics.md "Herd peak and
// peak-to-mean") from the
// number of connection attempts in each Tick (100 ms) window of a recovery
// window, in time order, empty windows included: the recovery window runs
// from the event (or the target being ready, for real runs) to the window
// of the last client's return.
//
// peak is the most attempts in one window; peakToMean is peak divided by the
// mean attempts per window over all the windows given. Empty windows count
// towards the mean on purpose: a fleet of N that all retries at exactly 1 s
// fills windows 0..10 as [0 0 0 0 0 0 0 0 0 0 N], so the peak is N and the
// peak-to-mean is 11 (about 10, as docs/metrics.md says), not 1. A perfectly even
// arrival gives 1; larger means a sharper herd.
//
// It returns (0, 0) for no windows or no attempts. The same function serves
// `stampede policy` (a fleet's first-retry spread) and the run results, so
// the two report the same number for the same arrivals.
func HerdPeak(windows []uint32) (peak uint32, peakToMean float64) {
	var sum uint64
	for _, n := range windows {
		sum += uint64(n)
		if n > peak {
			peak = n
		}
	}
	if sum == 0 {
		return 0, 0
	}
	// peak / (sum / len) without the rounding of an intermediate mean.
	return peak, float64(peak) * float64(len(windows)) / float64(sum)
}
