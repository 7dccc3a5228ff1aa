package advise

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/backoff"
)

// TestLongestWait: the longest wait of each kind, exactly.
func TestLongestWait(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want time.Duration // 0: unbounded
	}{
		{"fixed:initial=1s", time.Second},
		{"fixed:initial=1s,jitter=0.5", 1500 * time.Millisecond},            // the band above
		{"fixed:initial=2s,max=1s", time.Second},                            // the ceiling caps the base
		{"fixed:spread=2s-7s", 7 * time.Second},                             // the spread's high end
		{"exp:initial=1s", 0},                                               // doubling without a ceiling
		{"exp:initial=1s,max=60s,jitter=0.5", 90 * time.Second},             // ceiling, then the band
		{"exp:initial=1s,multiplier=1,jitter=0.2", 1200 * time.Millisecond}, // no growth
		{"exp:initial=1s,attempts=3", 4 * time.Second},                      // 1, 2, 4
		{"full:initial=1s,max=10s", 10 * time.Second},
		{"equal:initial=1s", 0},
		{"decorrelated:initial=1s,max=5s", 5 * time.Second},
		{"decorrelated:initial=1s", 0},
		{"decorrelated:initial=1s,attempts=3", 9 * time.Second}, // ×3 a step at most
	} {
		d, ok := LongestWait(backoff.MustParse(tc.spec))
		if tc.want == 0 {
			if ok {
				t.Errorf("%s: longest wait %s, want unbounded", tc.spec, d)
			}
			continue
		}
		if !ok || d != tc.want {
			t.Errorf("%s: longest wait %s (bounded %v), want %s", tc.spec, d, ok, tc.want)
		}
	}
}

// TestFitUnderLimit: every policy the space draws, and its neighbours,
// fitted under a limit never wait longer than it, draw by draw.
func TestFitUnderLimit(t *testing.T) {
	limit := 3 * time.Second
	sp := newSpace(2500*time.Millisecond, 5*time.Second, limit)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 300 {
		p := sp.draw(rng)
		for _, q := range append([]backoff.Policy{p}, sp.neighbours(p)...) {
			if err := q.Validate(); err != nil {
				continue // draws leaves these out
			}
			d, ok := LongestWait(q)
			if !ok || d > limit {
				t.Fatalf("draw %d: %s may wait %s (bounded %v), over %s", i, q, d, ok, limit)
			}
			for c := range uint64(20) {
				for a, w := range q.Delays(7, c, 12) {
					if w > limit {
						t.Fatalf("draw %d: %s: client %d waits %s before retry %d, over %s", i, q, c, w, a+1, limit)
					}
				}
			}
		}
	}
}

// TestNoSpreadAboveMax: no policy the search draws, anchors or steps to
// has a spread or a first delay above its ceiling, with or without a
// --max-delay, over many draws and herd shapes. A policy like
// full:max=3060ms,spread=2900ms-6730ms was recommended before.
func TestNoSpreadAboveMax(t *testing.T) {
	check := func(where string, p backoff.Policy) {
		t.Helper()
		if p.Max > 0 && (p.SpreadMax > p.Max || p.Initial > p.Max || p.SpreadMin > p.SpreadMax) {
			t.Fatalf("%s: %s has a spread or first delay above its max", where, p)
		}
	}
	for _, shape := range []struct{ outage, bound, limit time.Duration }{
		{2 * time.Second, 5 * time.Second, 0},
		{2900 * time.Millisecond, 1530 * time.Millisecond, 0},
		{10 * time.Second, 500 * time.Millisecond, 0},
		{time.Second, 20 * time.Second, 5 * time.Second},
	} {
		sp := newSpace(shape.outage, shape.bound, shape.limit)
		for _, p := range sp.anchors(shape.outage, shape.bound) {
			check("anchor", p)
		}
		for seed := range uint64(1000) {
			rng := rand.New(rand.NewPCG(seed, 0))
			p := sp.draw(rng)
			check("draw", p)
			for _, q := range sp.neighbours(p) {
				check("neighbour of "+p.String(), q)
			}
		}
	}
}
