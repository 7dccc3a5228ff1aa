package backoff

import (
	"math"
	"testing"
	"time"
)

// The property tests draw many delays from the seeded generator and check
// each kind's range and mean. The draws are deterministic (fixed seed), so
// a bound either always holds or always fails; the bounds are still set at
// 5 standard errors so that a correct generator passes for any seed.

const draws = 200_000

// moments accumulates the mean of delays in units of d.
type moments struct {
	n   int
	sum float64
}

func (m *moments) add(x float64) { m.n++; m.sum += x }
func (m *moments) mean() float64 { return m.sum / float64(m.n) }

// checkMean fails unless the sample mean is within 5 standard errors of
// want, for a distribution of standard deviation sd (all in units of d).
func checkMean(t *testing.T, name string, m moments, want, sd float64) {
	t.Helper()
	se := sd / math.Sqrt(float64(m.n))
	if got := m.mean(); math.Abs(got-want) > 5*se {
		t.Errorf("%s: mean %.5f d over %d draws, want %.5f d ± %.5f", name, got, m.n, want, 5*se)
	}
}

// TestBandProperty: the ± band draws uniformly from [d(1-f), d(1+f)]: every
// delay in range, mean d (standard deviation d f/√3).
func TestBandProperty(t *testing.T) {
	for _, f := range []float64{0.1, 0.5, 1} {
		p := Policy{Kind: Exp, Initial: s, Max: 8 * s, Jitter: f}
		var m moments
		for i := 0; i < draws; i++ {
			attempt := 1 + i%5
			d := float64(p.Nominal(attempt, s))
			got := float64(p.Delay(3, uint64(i), attempt))
			if got < math.Floor(d*(1-f)) || got > math.Ceil(d*(1+f)) {
				t.Fatalf("jitter %v attempt %d: %v outside [%v, %v]", f, attempt, time.Duration(got), time.Duration(d*(1-f)), time.Duration(d*(1+f)))
			}
			m.add(got / d)
		}
		checkMean(t, "band", m, 1, f/math.Sqrt(3))
	}
}

// TestFullProperty: full jitter draws from [0, d], mean d/2 (sd d/√12).
func TestFullProperty(t *testing.T) {
	p := Policy{Kind: Full, Initial: s, Max: 30 * s}
	var m moments
	for i := 0; i < draws; i++ {
		attempt := 1 + i%7
		d := float64(p.Nominal(attempt, s))
		got := float64(p.Delay(4, uint64(i), attempt))
		if got < 0 || got > d {
			t.Fatalf("attempt %d: %v outside [0, %v]", attempt, time.Duration(got), time.Duration(d))
		}
		m.add(got / d)
	}
	checkMean(t, "full", m, 0.5, 1/math.Sqrt(12))
}

// TestEqualProperty: equal jitter draws from [d/2, d], mean 3d/4 (sd
// d/(2√12)).
func TestEqualProperty(t *testing.T) {
	p := Policy{Kind: Equal, Initial: 250 * ms}
	var m moments
	for i := 0; i < draws; i++ {
		attempt := 1 + i%7
		d := float64(p.Nominal(attempt, 250*ms))
		got := float64(p.Delay(5, uint64(i), attempt))
		if got < d/2 || got > d {
			t.Fatalf("attempt %d: %v outside [%v, %v]", attempt, time.Duration(got), time.Duration(d/2), time.Duration(d))
		}
		m.add(got / d)
	}
	checkMean(t, "equal", m, 0.75, 1/(2*math.Sqrt(12)))
}

// TestDecorrelatedProperty: each delay lies in [base, min(max, 3*prev)],
// with prev the previous delay (base before the first).
func TestDecorrelatedProperty(t *testing.T) {
	p := Policy{Kind: Decorrelated, Initial: 100 * ms, Max: 10 * s, SpreadMin: 50 * ms, SpreadMax: 200 * ms}
	for c := uint64(0); c < draws/20; c++ {
		base := p.ClientBase(6, c)
		prev := base
		for a, d := range p.Delays(6, c, 20) {
			hi := min(p.Max, 3*prev)
			if d < base || d > hi {
				t.Fatalf("client %d attempt %d: %v outside [%v, %v]", c, a+1, d, base, hi)
			}
			prev = d
		}
	}
}

// TestSpreadProperty: every client's base lies in [SpreadMin, SpreadMax],
// mean at the middle of the range (sd range/√12).
func TestSpreadProperty(t *testing.T) {
	p := Policy{Kind: Exp, Initial: s, SpreadMin: 100 * ms, SpreadMax: 500 * ms}
	var m moments
	for c := uint64(0); c < draws; c++ {
		b := p.ClientBase(7, c)
		if b < p.SpreadMin || b > p.SpreadMax {
			t.Fatalf("client %d: base %v outside [%v, %v]", c, b, p.SpreadMin, p.SpreadMax)
		}
		m.add(float64(b-p.SpreadMin) / float64(p.SpreadMax-p.SpreadMin))
	}
	checkMean(t, "spread", m, 0.5, 1/math.Sqrt(12))
}

// TestUProperty: U is in [0, 1) with mean 1/2, and neighbouring clients'
// draws are uncorrelated (lag-1 correlation within 5 standard errors of 0).
func TestUProperty(t *testing.T) {
	var m moments
	var prev, cross float64
	for c := uint64(0); c < draws; c++ {
		u := U(8, StreamJitter, c, 1)
		if u < 0 || u >= 1 {
			t.Fatalf("U = %v outside [0, 1)", u)
		}
		m.add(u)
		if c > 0 {
			cross += (u - 0.5) * (prev - 0.5)
		}
		prev = u
	}
	checkMean(t, "U", m, 0.5, 1/math.Sqrt(12))
	// Var(U) = 1/12; the lag-1 sample covariance has sd 1/(12√n).
	if cov := cross / float64(draws-1); math.Abs(cov) > 5/(12*math.Sqrt(draws)) {
		t.Errorf("lag-1 covariance of neighbouring clients = %v, want ~0", cov)
	}
}
