package httpretry

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"time"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/internal/clock"
)

// Defaults of a zero Config.
const (
	// DefaultMaxRetries is the number of retries after the first attempt:
	// with DefaultPolicy the waits are 500 ms, 1 s, 2 s, 4 s.
	DefaultMaxRetries = 4
	// DefaultMaxRetryAfter is the longest Retry-After hint honoured; a server
	// asking for more makes the client give up at once.
	DefaultMaxRetryAfter = 30 * time.Second
)

// DefaultPolicy is the HTTP retry policy of docs/policy.md: 500 ms, 1 s,
// 2 s, 4 s..., capped at 30 s, without jitter (set Policy.Jitter, or use a
// jitter kind, for a fleet).
var DefaultPolicy = backoff.Policy{Kind: backoff.Exp, Initial: 500 * time.Millisecond, Multiplier: 2, Max: 30 * time.Second}

// DefaultStatusCodes are the statuses retried by default: a server's ways of
// saying "not now" (too many requests, bad gateway, unavailable, gateway
// timeout, and StatusOverloaded). 500 is not among them: it usually means a
// bug, not overload.
var DefaultStatusCodes = []int{http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout, StatusOverloaded}

// StatusOverloaded is 529, the non-standard "overloaded" status some large
// APIs answer with (often with a Retry-After hint). net/http has no name
// for it.
const StatusOverloaded = 529

// Config describes how requests are retried. The zero value is the default
// of every field; it serialises to JSON (hooks excluded) so a run can record
// it.
type Config struct {
	// MaxRetries is the number of retries after the first attempt. Zero means
	// DefaultMaxRetries; a negative value means none (one attempt only). A
	// Policy with MaxAttempts set stops the retries too: the lower limit wins.
	MaxRetries int `json:"max_retries"`
	// Policy chooses the wait before each retry that has no Retry-After
	// hint. nil means DefaultPolicy. (A pointer, because the zero Policy is
	// a real one: exp from 1 s.)
	Policy *backoff.Policy `json:"policy,omitempty"`
	// Seed and Client select this client's random draws (jitter and hint
	// spread) from the run's seed: the same pair gives the same waits.
	Seed   uint64 `json:"seed"`
	Client uint64 `json:"client"`
	// StatusCodes are the response statuses that are retried, each within
	// 400-599. nil means DefaultStatusCodes. Any other status ends the
	// request at once.
	StatusCodes []int `json:"status_codes,omitempty"`
	// IgnoreRetryAfter makes the client wait by Policy even when a retried
	// response carries a Retry-After hint. The zero value honours the hint.
	IgnoreRetryAfter bool `json:"ignore_retry_after"`
	// MaxRetryAfter is the longest Retry-After hint honoured: a longer one
	// makes the client give up at once with a *RetryAfterTooLongError. Zero
	// means DefaultMaxRetryAfter.
	MaxRetryAfter time.Duration `json:"max_retry_after"`
	// RetryAfterSpread is the upward spread fraction s of a Retry-After wait:
	// hint*(1 + s*u), u a seeded draw in [0, 1), so the wait is never
	// shorter than asked and a fleet given one hint does not return in one
	// instant. The wait is clamped to MaxRetryAfter but never below the
	// hint. Zero means backoff.HintSpread; a negative value means no spread.
	RetryAfterSpread float64 `json:"retry_after_spread"`
	// RetryPOST retries non-idempotent methods (POST, PATCH, CONNECT, any
	// unknown method) even without an Idempotency-Key header. Off by
	// default: a retried POST may be applied twice.
	RetryPOST bool `json:"retry_post"`
	// AttemptTimeout bounds each attempt, from sending the request to
	// closing the response body. A timed-out attempt is retried as a
	// timeout. Zero means no per-attempt limit (the request's context
	// still applies).
	AttemptTimeout time.Duration `json:"attempt_timeout"`

	// Base sends each attempt. nil means http.DefaultTransport.
	Base http.RoundTripper `json:"-"`
	// Sleep waits d or until ctx is done, returning ctx.Err() then. nil
	// means a real timer. Tests inject a recorder.
	Sleep func(ctx context.Context, d time.Duration) error `json:"-"`
	// Now reads the clock for Attempt.Start and Retry-After dates. nil means
	// time.Now.
	Now func() time.Time `json:"-"`
	// OnAttempt, when set, is called after each attempt with its record,
	// before any wait, on the goroutine of the request.
	OnAttempt func(Attempt) `json:"-"`
}

// Validate reports the first unusable field, naming it.
func (c Config) Validate() error {
	if c.Policy != nil {
		if err := c.Policy.Validate(); err != nil {
			return fmt.Errorf("httpretry: policy: %w", err)
		}
	}
	for _, s := range c.StatusCodes {
		if s < 400 || s > 599 {
			return fmt.Errorf("httpretry: status code %d cannot be retried: only 400-599 are failures", s)
		}
	}
	switch {
	case c.MaxRetryAfter < 0:
		return fmt.Errorf("httpretry: max retry-after must not be negative, got %s", c.MaxRetryAfter)
	case math.IsNaN(c.RetryAfterSpread) || math.IsInf(c.RetryAfterSpread, 0):
		return fmt.Errorf("httpretry: retry-after spread must be a finite number, got %v", c.RetryAfterSpread)
	case c.AttemptTimeout < 0:
		return fmt.Errorf("httpretry: attempt timeout must not be negative, got %s", c.AttemptTimeout)
	}
	return nil
}

// settings is a validated Config with every default filled in.
type settings struct {
	Config
	policy  backoff.Policy
	retries int
	spread  float64
}

// resolve validates c and fills its defaults.
func (c Config) resolve() (settings, error) {
	if err := c.Validate(); err != nil {
		return settings{}, err
	}
	s := settings{Config: c, retries: c.MaxRetries, spread: c.RetryAfterSpread}
	switch {
	case s.retries == 0:
		s.retries = DefaultMaxRetries
	case s.retries < 0:
		s.retries = 0
	}
	switch {
	case s.spread == 0:
		s.spread = backoff.HintSpread
	case s.spread < 0:
		s.spread = 0
	}
	s.policy = DefaultPolicy
	if c.Policy != nil {
		s.policy = *c.Policy
	}
	if s.StatusCodes == nil {
		s.StatusCodes = DefaultStatusCodes
	}
	s.StatusCodes = slices.Clone(s.StatusCodes)
	if s.MaxRetryAfter == 0 {
		s.MaxRetryAfter = DefaultMaxRetryAfter
	}
	if s.Base == nil {
		s.Base = http.DefaultTransport
	}
	if s.Sleep == nil {
		s.Sleep = clock.Sleep
	}
	if s.Now == nil {
		s.Now = time.Now
	}
	return s, nil
}

// retryStatus reports whether a response status is one to retry.
func (s *settings) retryStatus(code int) bool { return slices.Contains(s.StatusCodes, code) }

// mayRetry reports whether retry number n (1-based) is allowed.
func (s *settings) mayRetry(n int) bool { return n <= s.retries && s.policy.Retry(n) }
