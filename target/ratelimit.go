package target

import (
	"math"
	"time"

	"github.com/stampede-dev/stampede/spec"
)

// The accept rates a server paces, besides 0 (unlimited): the server
// spec's (spec.MinAcceptRate, spec.MaxAcceptRate).
const (
	MinAcceptRate = spec.MinAcceptRate
	MaxAcceptRate = spec.MaxAcceptRate
)

// bucket is the token bucket that paces accepts: it holds at most burst
// tokens, gains rate tokens per second, and one accept takes one token. A
// zero rate means unlimited. It is a pure function of the times it is given,
// so tests step it with exact values.
type bucket struct {
	rate   float64 // tokens per second; 0 = unlimited
	burst  float64 // capacity in tokens, at least 1
	tokens float64 // may go below zero when an accept was already under way
	last   time.Time
}

// reset sets a new rate and burst at now and fills the bucket.
func (b *bucket) reset(now time.Time, rate float64, burst int) {
	b.rate, b.burst, b.tokens, b.last = rate, float64(burst), float64(burst), now
}

// refill adds the tokens earned since the last call.
func (b *bucket) refill(now time.Time) {
	if dt := now.Sub(b.last); dt > 0 {
		b.tokens = math.Min(b.burst, b.tokens+dt.Seconds()*b.rate)
		b.last = now
	}
}

// wait returns how long until a token is available at now: 0 if one is.
func (b *bucket) wait(now time.Time) time.Duration {
	if b.rate == 0 {
		return 0
	}
	b.refill(now)
	if b.tokens >= 1 {
		return 0
	}
	ns := math.Ceil((1 - b.tokens) / b.rate * float64(time.Second))
	if ns >= math.MaxInt64 {
		return math.MaxInt64 // a Duration conversion would wrap
	}
	return time.Duration(ns)
}

// take spends one token at now.
func (b *bucket) take(now time.Time) {
	if b.rate == 0 {
		return
	}
	b.refill(now)
	b.tokens--
}

// defaultBurst is the burst used when Config.AcceptBurst is 0: 10 ms worth
// of accepts, at least one, so a pacing timer does not have to fire for
// every single accept at high rates.
func defaultBurst(rate float64) int {
	return max(1, int(rate/100))
}
