// Package backoff is the one reconnect and retry policy that every part of
// stampede shares: WebSocket reconnects in the loadgen, HTTP retries, and the
// simulator. A Policy is a value; the delay before a retry is a pure function
// of the policy, the run's seed, the client and the attempt number. Nothing in
// this package sleeps or reads the clock, so a schedule can be replayed
// exactly and ten million clients can be computed without a socket.
//
// Attempts are numbered from 1: Delay(n) is the wait before the n-th retry
// after a disconnect or a failed attempt. A successful connect resets the
// count, so the next disconnect starts again at attempt 1. The policy keeps
// no state of its own: the caller's attempt counter is the only thing reset.
//
// Because a delay depends only on (seed, client, attempt), a client that
// disconnects twice waits the same schedule both times; clients still differ
// from one another, which is what spreads a fleet. A caller that wants fresh
// draws per disconnect passes a per-episode seed, e.g.
// Hash(seed, stream, client, episode).
package backoff

import (
	"fmt"
	"math"
	"time"
)

// Kind is a backoff strategy: how the nominal delay grows and how it is
// randomised.
type Kind uint8

// The strategies. Fixed and Exp take the ± Jitter band; Full, Equal and
// Decorrelated are jitter strategies of their own.
const (
	// Exp grows the delay by Multiplier each attempt: Initial*Multiplier^(n-1),
	// capped by Max, then spread by the Jitter band.
	Exp Kind = iota
	// Fixed waits Initial every time (Multiplier 1), spread by the Jitter band.
	Fixed
	// Full draws the delay uniformly from [0, d], d the capped exponential
	// delay ("full jitter").
	Full
	// Equal waits d/2 plus a uniform draw from [0, d/2] ("equal jitter").
	Equal
	// Decorrelated draws min(Max, U(Initial, 3*previous)) ("decorrelated
	// jitter"): each delay depends on the one before it.
	Decorrelated
)

var kindNames = [...]string{Exp: "exp", Fixed: "fixed", Full: "full", Equal: "equal", Decorrelated: "decorrelated"}

// String returns the kind's name as written in a policy spec.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// MarshalText writes the kind by name, so a policy in summary.json reads
// "exp" rather than a number.
func (k Kind) MarshalText() ([]byte, error) {
	if int(k) >= len(kindNames) {
		return nil, fmt.Errorf("backoff: unknown kind %d", uint8(k))
	}
	return []byte(kindNames[k]), nil
}

// UnmarshalText reads a kind by name.
func (k *Kind) UnmarshalText(b []byte) error {
	v, ok := parseKind(string(b))
	if !ok {
		return fmt.Errorf("backoff: unknown kind %q", b)
	}
	*k = v
	return nil
}

// DefaultInitial is the first delay of a policy whose Initial is zero.
const DefaultInitial = time.Second

// Policy describes one backoff policy. The zero value is exponential backoff
// from 1 s doubling without ceiling, jitter or attempt limit. A Policy is
// safe to share between goroutines: it is never mutated.
type Policy struct {
	// Kind is the strategy.
	Kind Kind `json:"kind"`
	// Initial is the first delay (attempt 1) and the base of the growth.
	// Zero means DefaultInitial. Ignored when Spread is set.
	Initial time.Duration `json:"initial"`
	// Multiplier is the growth factor per attempt: 1 keeps the delay fixed.
	// Zero means the kind's default: 1 for Fixed, 2 for the others.
	Multiplier float64 `json:"multiplier"`
	// Max is the ceiling of the nominal delay; zero means none. As in most
	// backoff libraries, the Jitter band is applied after the ceiling, so a
	// band policy may wait up to Max*(1+Jitter).
	Max time.Duration `json:"max"`
	// Jitter is the band fraction f in [0, 1] for Fixed and Exp: the delay is
	// drawn uniformly from [d(1-f), d(1+f)]. Zero means no jitter.
	Jitter float64 `json:"jitter"`
	// SpreadMin and SpreadMax, when SpreadMax > 0, give each client its own
	// base delay, drawn once per client uniformly from [SpreadMin, SpreadMax];
	// it replaces Initial.
	SpreadMin time.Duration `json:"spread_min"`
	SpreadMax time.Duration `json:"spread_max"`
	// MaxAttempts bounds the retries after one disconnect; zero means retry
	// forever.
	MaxAttempts int `json:"attempts"`
	// Library, when its Name is set, makes the policy a client library's
	// own rule (a preset: socketio, signalr, ...); every other field is
	// then zero. See Next.
	Library Library `json:"library,omitzero"`
}

// MinDelay is the floor of every delay: Step never returns less, and
// Validate refuses an Initial, or a spread's high end, below it. Without a
// floor, "fixed:initial=1ns" made ten clients attempt 82,000 times a
// second, a loop against the server rather than a backoff; a full jitter
// draw near 0 is raised to it too.
const MinDelay = time.Millisecond

// MaxInitial is the longest first delay a policy may have (Initial and
// either end of Spread): a base of more than a day is a typo, and bounding it
// bounds the first-retry histogram of a fleet (FirstRetrySpread).
const MaxInitial = 24 * time.Hour

// InvalidError says which field makes a Policy unusable, by the spec key the
// field is written with ("initial", "multiplier", "max", "jitter", "spread",
// "attempts", or "kind").
type InvalidError struct {
	// Key is the spec key of the offending field.
	Key string
	// Reason says what is wrong with it, without the key.
	Reason string
}

// Error returns "backoff: KEY: REASON".
func (e *InvalidError) Error() string { return "backoff: " + e.Key + ": " + e.Reason }

func invalid(key, format string, a ...any) error {
	return &InvalidError{Key: key, Reason: fmt.Sprintf(format, a...)}
}

// Validate reports the first field that makes the policy unusable as an
// *InvalidError naming the spec key it comes from.
func (p Policy) Validate() error {
	if p.Library.Name != "" {
		if lookup(p.Library.Name) == nil {
			return invalid("kind", "unknown library preset %q", p.Library.Name)
		}
		if p != (Policy{Library: p.Library}) {
			return invalid("kind", "a library preset takes its library's options, not stampede's keys")
		}
		return nil
	}
	switch {
	case int(p.Kind) >= len(kindNames):
		return invalid("kind", "unknown kind %d", p.Kind)
	case p.Initial < 0:
		return invalid("initial", "must not be negative, got %s", p.Initial)
	case p.Initial > 0 && p.Initial < MinDelay:
		return invalid("initial", "must be at least %s (the floor of every delay), got %s", MinDelay, p.Initial)
	case p.Initial > MaxInitial:
		return invalid("initial", "must be at most %s, got %s", MaxInitial, p.Initial)
	case p.Multiplier < 0 || math.IsNaN(p.Multiplier) || math.IsInf(p.Multiplier, 0):
		return invalid("multiplier", "must be a finite number >= 1, got %v", p.Multiplier)
	case p.Multiplier != 0 && p.Multiplier < 1:
		return invalid("multiplier", "must be >= 1 (delays never shrink), got %v", p.Multiplier)
	case p.Kind == Fixed && p.Multiplier != 0 && p.Multiplier != 1:
		return invalid("multiplier", "must be 1 for fixed, got %v (use exp)", p.Multiplier)
	case p.Kind == Decorrelated && p.Multiplier != 0:
		return invalid("multiplier", "does not apply to decorrelated, which grows by up to x3 per attempt by definition")
	case p.Max < 0:
		return invalid("max", "must not be negative, got %s", p.Max)
	case p.Jitter < 0 || p.Jitter > 1 || math.IsNaN(p.Jitter):
		return invalid("jitter", "must be within [0, 1], got %v", p.Jitter)
	case p.Jitter != 0 && p.Kind != Fixed && p.Kind != Exp:
		return invalid("jitter", "is a band for fixed and exp only; %s is a jitter strategy of its own", p.Kind)
	case p.SpreadMin < 0 || p.SpreadMax < 0:
		return invalid("spread", "must not be negative, got %s-%s", p.SpreadMin, p.SpreadMax)
	case p.SpreadMin > 0 && p.SpreadMax == 0:
		return invalid("spread", "low end %s set without a high end", p.SpreadMin)
	case p.SpreadMin > p.SpreadMax:
		return invalid("spread", "%s-%s: the low end is above the high end", p.SpreadMin, p.SpreadMax)
	case p.SpreadMax > 0 && p.SpreadMax < MinDelay:
		return invalid("spread", "the high end must be at least %s (the floor of every delay), got %s-%s", MinDelay, p.SpreadMin, p.SpreadMax)
	case p.SpreadMax > MaxInitial:
		return invalid("spread", "must be at most %s, got %s-%s", MaxInitial, p.SpreadMin, p.SpreadMax)
	case p.MaxAttempts < 0:
		return invalid("attempts", "must not be negative, got %d", p.MaxAttempts)
	}
	return nil
}

// multiplier returns the effective growth factor.
func (p Policy) multiplier() float64 {
	switch {
	case p.Kind == Fixed:
		return 1
	case p.Multiplier == 0:
		return 2
	}
	return p.Multiplier
}

// initial returns the effective Initial.
func (p Policy) initial() time.Duration {
	if p.Initial == 0 {
		return DefaultInitial
	}
	return p.Initial
}

// Base returns a client's base delay given its one spread draw u in [0, 1):
// Initial without Spread, else a point of [SpreadMin, SpreadMax].
func (p Policy) Base(u float64) time.Duration {
	if p.SpreadMax <= 0 {
		return p.initial()
	}
	return p.SpreadMin + time.Duration(u*float64(p.SpreadMax-p.SpreadMin))
}

// Retry reports whether the policy allows the given retry (1-based) after one
// disconnect.
func (p Policy) Retry(attempt int) bool {
	lim := p.Limit()
	return attempt >= 1 && lim >= 0 && (lim == 0 || attempt <= lim)
}

// Nominal returns the delay before retry number attempt with no
// randomisation: base*Multiplier^(attempt-1) capped by Max. It saturates
// instead of overflowing, so attempt 10,000 of an uncapped policy is the
// longest representable duration, never negative.
func (p Policy) Nominal(attempt int, base time.Duration) time.Duration {
	if attempt < 1 {
		attempt = 1
	}
	d := float64(base) * math.Pow(p.multiplier(), float64(attempt-1))
	if p.Max > 0 && d > float64(p.Max) {
		return p.Max
	}
	return saturate(d)
}

// Step is the pure core of the policy: the delay before retry number attempt
// for a client whose base delay is base, whose previous delay was prev (zero
// on the first retry; used by Decorrelated only), given one uniform draw u in
// [0, 1). Everything else in the package is built on it. It never returns
// less than MinDelay.
func (p Policy) Step(attempt int, base, prev time.Duration, u float64) time.Duration {
	return max(p.step(attempt, base, prev, u), MinDelay)
}

// step is Step without the floor.
func (p Policy) step(attempt int, base, prev time.Duration, u float64) time.Duration {
	switch p.Kind {
	case Full:
		return saturate(u * float64(p.Nominal(attempt, base)))
	case Equal:
		d := float64(p.Nominal(attempt, base))
		return saturate(d/2 + u*d/2)
	case Decorrelated:
		if prev < base {
			prev = base
		}
		hi := 3 * float64(prev)
		d := float64(base) + u*(hi-float64(base))
		if p.Max > 0 && d > float64(p.Max) {
			return p.Max
		}
		return saturate(d)
	default: // Fixed, Exp: the ± band
		d := float64(p.Nominal(attempt, base))
		if p.Jitter == 0 {
			return saturate(d)
		}
		return saturate(d * (1 - p.Jitter + 2*p.Jitter*u))
	}
}

// ClientBase returns the base delay of one client of a seeded run.
func (p Policy) ClientBase(seed, client uint64) time.Duration {
	if p.SpreadMax <= 0 {
		return p.initial()
	}
	return p.Base(U(seed, StreamSpread, client, 0))
}

// Delay returns the delay before retry number attempt (1-based) of one client
// in a run with the given seed. It is a pure function of its arguments: the
// same inputs give the same delay in any call order, on any goroutine.
// Decorrelated depends on the previous delays, so it costs O(attempt); every
// other kind is O(1).
//
// For a library preset it is the delay under the preview's connection
// (previewConn): after the abrupt drop of a long connection, each later
// attempt refused at once; a caller that knows its connection calls Next.
func (p Policy) Delay(seed, client uint64, attempt int) time.Duration {
	if attempt < 1 {
		attempt = 1
	}
	if p.Library.Name != "" {
		var since time.Duration
		for a := 1; ; a++ {
			dec := p.Next(seed, client, a, previewConn(a, since))
			if a == attempt {
				return dec.Delay
			}
			since += dec.Delay
		}
	}
	base := p.ClientBase(seed, client)
	if p.Kind != Decorrelated {
		return p.Step(attempt, base, 0, U(seed, StreamJitter, client, uint64(attempt)))
	}
	var prev time.Duration
	for n := 1; n <= attempt; n++ {
		prev = p.Step(n, base, prev, U(seed, StreamJitter, client, uint64(n)))
	}
	return prev
}

// Delays returns the delays before retries 1..n of one client: what
// `stampede policy --attempts n` prints. It ignores MaxAttempts (check Retry)
// and returns nil for n <= 0.
func (p Policy) Delays(seed, client uint64, n int) []time.Duration {
	if n <= 0 {
		return nil
	}
	if p.Library.Name != "" {
		return p.libraryDelays(seed, client, n)
	}
	out := make([]time.Duration, 0, n)
	base := p.ClientBase(seed, client)
	var prev time.Duration
	for a := 1; a <= n; a++ {
		prev = p.Step(a, base, prev, U(seed, StreamJitter, client, uint64(a)))
		out = append(out, prev)
	}
	return out
}

// Wait is the wait before retry number attempt (1-based) of one client of a
// seeded run: the policy's Delay, or, when the server gave a hint (a
// Retry-After the client honours; zero for none) and it is longer, the hint
// spread upwards with a draw of StreamHint (Hinted): the policy's delay is
// the floor. It is the one decision the loadgen's clients and the
// simulator's (package sim) both call, so the same seed gives a client the
// same waits in a real run and in a simulation.
func (p Policy) Wait(seed, client uint64, attempt int, hint time.Duration) time.Duration {
	d := p.Delay(seed, client, attempt)
	if hint > 0 {
		d = max(d, Hinted(hint, HintSpread, U(seed, StreamHint, client, uint64(attempt))))
	}
	return d
}

// HintSpread is the default upward spread applied to a server's Retry-After
// hint: a fleet told "5" comes back over [5 s, 6 s], never sooner.
const HintSpread = 0.2

// Hinted returns the wait for a server hint (Retry-After) given one uniform
// draw u in [0, 1): hint*(1 + spread*u). It is never shorter than the hint, so
// the server's request is honoured, and it spreads a fleet that was given the
// same hint so it does not return in one instant.
func Hinted(hint time.Duration, spread, u float64) time.Duration {
	if hint <= 0 {
		return 0
	}
	if spread < 0 {
		spread = 0
	}
	return saturate(float64(hint) * (1 + spread*u))
}

// saturate converts a float nanosecond count to a Duration without
// overflowing into negative values.
func saturate(d float64) time.Duration {
	switch {
	case d >= math.MaxInt64 || math.IsInf(d, 1) || math.IsNaN(d):
		return math.MaxInt64
	case d <= 0:
		return 0
	}
	return time.Duration(d)
}
