package advise

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/stampede-dev/stampede/backoff"
)

// LongestWait is the longest wait a policy may ever draw between two
// attempts (a server's Retry-After aside); ok is false when its delays
// grow without bound.
func LongestWait(p backoff.Policy) (d time.Duration, ok bool) {
	hi := p.Initial
	if hi == 0 {
		hi = backoff.DefaultInitial
	}
	if p.SpreadMax > 0 {
		hi = p.SpreadMax
	}
	grows := p.Kind == backoff.Decorrelated || p.Kind != backoff.Fixed && p.Multiplier != 1
	switch {
	case p.Max > 0 && (grows || hi > p.Max):
		d = p.Max
	case !grows:
		d = hi
	case p.MaxAttempts > 0 && p.Kind != backoff.Decorrelated:
		d = p.Nominal(p.MaxAttempts, hi)
	case p.MaxAttempts > 0: // decorrelated: at most ×3 a step
		f := float64(hi) * math.Pow(3, float64(p.MaxAttempts-1))
		if f > float64(math.MaxInt64) {
			return 0, false
		}
		d = time.Duration(f)
	default:
		return 0, false
	}
	if p.Kind == backoff.Fixed || p.Kind == backoff.Exp {
		d = time.Duration(float64(d) * (1 + p.Jitter))
	}
	return max(d, backoff.MinDelay), true
}

// fit returns p with its ceiling lowered so that no wait exceeds limit
// (0: no limit), and a spread or first delay above the ceiling clipped to
// it, with or without a limit: a base delay above Max waits Max, so a
// policy written with one says what it does not do (spread=2900ms-6730ms
// under max=3060ms).
func fit(p backoff.Policy, limit time.Duration) backoff.Policy {
	if limit > 0 {
		band := 1.0
		if p.Kind == backoff.Fixed || p.Kind == backoff.Exp {
			band += p.Jitter
		}
		ceil := time.Duration(float64(limit) / band).Truncate(time.Millisecond)
		if p.Max == 0 || p.Max > ceil {
			p.Max = ceil
		}
	}
	if p.Max <= 0 {
		return p
	}
	if p.SpreadMax > p.Max {
		p.SpreadMax = p.Max
		p.SpreadMin = min(p.SpreadMin, p.SpreadMax)
	}
	if p.Initial > p.Max {
		p.Initial = p.Max
	}
	return p
}

// space is the set of policies a search draws from, sized to the herd:
// the outage (event to ready) and the physical bound (clients over the
// accept rate) give the spreads and ceilings that let a fleet arrive at
// about the accept rate from the moment the server is ready.
type space struct {
	initials    []time.Duration
	multipliers []float64
	maxes       []time.Duration
	jitters     []float64
	spreads     [][2]time.Duration // {0, 0}: none
	limit       time.Duration      // MaxDelay
}

// newSpace returns the space for an outage and a bound.
func newSpace(outage, bound, limit time.Duration) space {
	r := func(d time.Duration) time.Duration { return max(d.Round(10*time.Millisecond), 10*time.Millisecond) }
	o, b := r(outage), r(max(bound, 100*time.Millisecond))
	return space{
		initials:    []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second, o, r(o + b/2)},
		multipliers: []float64{1.5, 2, 3},
		maxes:       []time.Duration{b, 2 * b, 10 * time.Second, 30 * time.Second, 60 * time.Second},
		jitters:     []float64{0, 0.2, 0.5, 1},
		spreads: [][2]time.Duration{{}, {}, {100 * time.Millisecond, 500 * time.Millisecond},
			{o, o + b}, {r(o / 2), o + b}, {0, o + b}, {o, r(o + 6*b/5)}, {r(o + b/10), r(o + 11*b/10)}},
		limit: limit,
	}
}

// anchors are the policies every search tries first: the herd's own
// physics (a spread that lands the fleet over the bound after ready) in
// a few forms, fitted under the limit.
func (s space) anchors(outage, bound time.Duration) []backoff.Policy {
	o, b := outage.Round(10*time.Millisecond), bound.Round(10*time.Millisecond)
	ps := []backoff.Policy{
		{Kind: backoff.Exp, SpreadMin: o, SpreadMax: o + b, Max: 2 * b},
		{Kind: backoff.Exp, SpreadMin: o, SpreadMax: o + b, Max: 2 * b, Jitter: 0.2},
		{Kind: backoff.Exp, SpreadMin: o / 2, SpreadMax: o + b, Max: 60 * time.Second, Jitter: 0.5},
		{Kind: backoff.Full, Initial: max(o+b, backoff.MinDelay), Max: 2 * (o + b)},
		{Kind: backoff.Equal, Initial: max(o+b, backoff.MinDelay), Max: 2 * (o + b)},
	}
	for i := range ps {
		ps[i] = fit(ps[i], s.limit)
	}
	return ps
}

var kinds = []backoff.Kind{backoff.Exp, backoff.Exp, backoff.Fixed, backoff.Full, backoff.Equal, backoff.Decorrelated}

// draw returns one policy of the space, fitted under the limit.
func (s space) draw(rng *rand.Rand) backoff.Policy {
	pick := func(n int) int { return rng.IntN(n) }
	p := backoff.Policy{Kind: kinds[pick(len(kinds))], Initial: s.initials[pick(len(s.initials))]}
	if p.Kind == backoff.Exp || p.Kind == backoff.Full || p.Kind == backoff.Equal {
		p.Multiplier = s.multipliers[pick(len(s.multipliers))]
	}
	if p.Kind != backoff.Fixed {
		p.Max = s.maxes[pick(len(s.maxes))]
	}
	if p.Kind == backoff.Exp || p.Kind == backoff.Fixed {
		p.Jitter = s.jitters[pick(len(s.jitters))]
	}
	if sp := s.spreads[pick(len(s.spreads))]; sp[1] > 0 {
		p.Initial, p.SpreadMin, p.SpreadMax = 0, sp[0], sp[1]
	}
	return fit(p, s.limit)
}

// neighbours returns policies near p: each duration scaled by 0.8 and
// 1.25, the band moved by 0.2, fitted under the limit.
func (s space) neighbours(p backoff.Policy) []backoff.Policy {
	scale := func(d time.Duration, f float64) time.Duration {
		return time.Duration(float64(d) * f).Round(10 * time.Millisecond)
	}
	var out []backoff.Policy
	for _, f := range []float64{0.8, 1.25} {
		q := p
		if q.SpreadMax > 0 {
			q.SpreadMin, q.SpreadMax = scale(q.SpreadMin, f), max(scale(q.SpreadMax, f), backoff.MinDelay)
		} else if q.Initial > 0 {
			q.Initial = max(scale(q.Initial, f), backoff.MinDelay)
		}
		out = append(out, q)
		if p.Max > 0 {
			q = p
			q.Max = scale(q.Max, f)
			out = append(out, q)
		}
		if p.SpreadMax > 0 { // the window's high end alone
			q = p
			q.SpreadMax = max(scale(q.SpreadMax, f), q.SpreadMin, backoff.MinDelay)
			out = append(out, q)
		}
	}
	if p.Kind == backoff.Exp || p.Kind == backoff.Fixed {
		for _, dj := range []float64{-0.2, 0.2} {
			q := p
			q.Jitter = math.Round(min(max(q.Jitter+dj, 0), 1)*10) / 10
			out = append(out, q)
		}
	}
	for i := range out {
		out[i] = fit(out[i], s.limit)
	}
	return out
}
