package backoff

import (
	"time"
)

// Spread is how a fleet's first retries after a common disconnect fall in
// time: the herd the policy would send at a server that came back at once.
// It is what `stampede policy --clients N` shows.
type Spread struct {
	// Policy is the policy the fleet shares.
	Policy Policy
	// Seed is the run's seed.
	Seed uint64
	// Clients is the fleet size; client IDs are 0..Clients-1.
	Clients int
	// Window is the width of one window: HerdWindow (100 ms).
	Window time.Duration
	// Windows counts first retries per window: Windows[i] covers
	// [i*Window, (i+1)*Window) after the disconnect, from 0 to the window of
	// the last arrival, empty windows included.
	Windows []uint32
	// First and Last are the earliest and latest first-retry delays.
	First, Last time.Duration
	// Peak is the most first retries in one window.
	Peak uint32
	// Mean is the mean first retries per window over Windows.
	Mean float64
	// PeakToMean is Peak/Mean, computed by HerdPeak as for a run.
	PeakToMean float64
}

// FirstRetrySpread bins every client's first-retry delay, p.Delay(seed, id,
// 1) for id 0..clients-1, into HerdWindow windows from the disconnect to
// the last arrival, and computes the herd metric over them. It is O(clients)
// in time and O(windows) in memory; the window count is bounded
// because a valid policy's first delay is at most 3*MaxInitial (decorrelated)
// or 2*MaxInitial (a band). clients <= 0 gives an empty Spread. Counts are
// uint32, so clients must stay below 1<<32.
func FirstRetrySpread(p Policy, seed uint64, clients int) Spread {
	s := Spread{Policy: p, Seed: seed, Window: HerdWindow}
	if clients <= 0 {
		return s
	}
	s.Clients = clients
	s.First = p.Delay(seed, 0, 1)
	for id := 0; id < clients; id++ {
		d := p.Delay(seed, uint64(id), 1)
		s.First = min(s.First, d)
		s.Last = max(s.Last, d)
		w := int(d / HerdWindow)
		if w >= len(s.Windows) {
			// Grow to the new last window; append's growth keeps this
			// amortised O(1).
			s.Windows = append(s.Windows, make([]uint32, w+1-len(s.Windows))...)
		}
		s.Windows[w]++
	}
	s.Peak, s.PeakToMean = HerdPeak(s.Windows)
	s.Mean = float64(clients) / float64(len(s.Windows))
	return s
}
