package target

import (
	"math"
	"time"

	"github.com/stampede-dev/stampede/spec"
)

// bucket is the token bucket that paces accepts: it holds at most burst
// tokens, gains rate tokens per second, and one accept takes one token. A
// zero rate means unlimited. Under an admission ramp the rate it gains
// rises from the ramp's floor to rate (see ramp). It is a pure function of
// the times it is given, so tests step it with exact values.
type bucket struct {
	rate   float64 // tokens per second the ramp rises to; 0 = unlimited
	ramp   ramp    // zero: rate from the start
	fixed  int     // the burst asked for; 0 = defaultBurst of the rate now
	burst  float64 // capacity in tokens now, at least 1
	tokens float64 // may go below zero when an accept was already under way
	last   time.Time
}

// reset sets a new rate and burst at now and fills the bucket; the ramp,
// if any, is kept.
func (b *bucket) reset(now time.Time, rate float64, burst int) {
	b.rate, b.fixed, b.last = rate, burst, now
	b.burst = b.burstAt(now)
	b.tokens = b.burst
}

// rateAt is the rate the bucket gains tokens at, at t.
func (b *bucket) rateAt(t time.Time) float64 { return b.ramp.rateAt(t, b.rate) }

// burstAt is the capacity at t: the fixed burst, or 10 ms of the rate
// then.
func (b *bucket) burstAt(t time.Time) float64 {
	if b.fixed > 0 {
		return float64(b.fixed)
	}
	return float64(defaultBurst(b.rateAt(t)))
}

// refill adds the tokens earned since the last call.
func (b *bucket) refill(now time.Time) {
	if dt := now.Sub(b.last); dt > 0 {
		b.burst = b.burstAt(now)
		b.tokens = math.Min(b.burst, b.tokens+b.ramp.tokens(b.last, now, b.rate))
		b.last = now
	}
}

// wait returns how long until a token is available at now: 0 if one is.
// While a ramp rises the wait is reckoned at the rate of now, so it is an
// upper bound; the gate looks again before it ends (rampRecheck).
func (b *bucket) wait(now time.Time) time.Duration {
	if b.rate == 0 {
		return 0
	}
	b.refill(now)
	if b.tokens >= 1 {
		return 0
	}
	ns := math.Ceil((1 - b.tokens) / b.rateAt(now) * float64(time.Second))
	if ns >= math.MaxInt64 {
		return math.MaxInt64 // a Duration conversion would wrap
	}
	w := time.Duration(ns)
	if b.ramp.rising(now) {
		w = min(w, rampRecheck)
	}
	return w
}

// take spends one token at now.
func (b *bucket) take(now time.Time) {
	if b.rate == 0 {
		return
	}
	b.refill(now)
	b.tokens--
}

// rampRecheck bounds a wait computed while a ramp rises, so a rate that
// grew meanwhile is used soon.
const rampRecheck = 50 * time.Millisecond

// ramp is an admission ramp (spec.Server.AdmitRamp): from start for d the
// rate rises linearly from floor to the bucket's rate, and is floor before
// start. The zero ramp is no ramp.
type ramp struct {
	start time.Time
	d     time.Duration
	floor float64
}

// newRamp is the ramp of srv (with its defaults) for a process that began
// accepting at start.
func newRamp(srv spec.Server, start time.Time) ramp {
	if srv.AdmitRamp <= 0 || srv.AcceptRate <= 0 {
		return ramp{}
	}
	return ramp{start: start, d: srv.AdmitRamp, floor: srv.AdmitFloor}
}

// rateAt is the rate at t of a ramp rising to rate: spec.Server.AdmitRate,
// with a floor above a rate (lowered since) taken as the rate.
func (r ramp) rateAt(t time.Time, rate float64) float64 {
	if r.d <= 0 || rate <= 0 {
		return rate
	}
	srv := spec.Server{AcceptRate: rate, AdmitRamp: r.d, AdmitFloor: min(r.floor, rate)}
	return srv.AdmitRate(t.Sub(r.start))
}

// rising reports whether the rate still rises after t.
func (r ramp) rising(t time.Time) bool {
	return r.d > 0 && t.Before(r.start.Add(r.d))
}

// tokens is the integral of the rate over [a, b]: exact, since the rate
// is linear between the ramp's start and end and constant outside.
func (r ramp) tokens(a, b time.Time, rate float64) float64 {
	if r.d <= 0 || rate <= 0 {
		return b.Sub(a).Seconds() * rate
	}
	cuts := []time.Time{a}
	for _, t := range []time.Time{r.start, r.start.Add(r.d)} {
		if t.After(a) && t.Before(b) {
			cuts = append(cuts, t)
		}
	}
	cuts = append(cuts, b)
	sum := 0.0
	for i := 1; i < len(cuts); i++ {
		x, y := cuts[i-1], cuts[i]
		sum += y.Sub(x).Seconds() * (r.rateAt(x, rate) + r.rateAt(y, rate)) / 2
	}
	return sum
}

// defaultBurst is the burst used when Config.AcceptBurst is 0: 10 ms worth
// of accepts, at least one, so a pacing timer does not have to fire for
// every single accept at high rates.
func defaultBurst(rate float64) int {
	return max(1, int(rate/100))
}
