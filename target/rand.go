package target

import (
	"math/rand/v2"
	"sync"
	"time"
)

// lockedRand is the server's one source of randomness (a shed request's
// Retry-After, the order and hints of a spread shutdown), seeded from
// Config.Seed so a test draws the same values every run.
type lockedRand struct {
	mu sync.Mutex
	r  *rand.Rand
}

// init seeds the source: seed, or the time when seed is 0.
func (l *lockedRand) init(seed uint64) {
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	l.r = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// int64N is uniform in [0, n).
func (l *lockedRand) int64N(n int64) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r.Int64N(n)
}

// float64 is uniform in [0, 1).
func (l *lockedRand) float64() float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r.Float64()
}

// shuffle puts n elements in a random order, swap exchanging two.
func (l *lockedRand) shuffle(n int, swap func(i, j int)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.r.Shuffle(n, swap)
}
