package httpretry

import (
	"time"

	"github.com/stampede-dev/stampede/connerr"
)

// Why a wait was chosen: Attempt.Why.
const (
	// WhyRetryAfter: the wait is the server's Retry-After hint, spread upward.
	WhyRetryAfter = "retry-after"
	// WhyBackoff: the wait comes from the backoff Policy.
	WhyBackoff = "backoff"
)

// Attempt records one try of a request: what came back, and what the client
// decided to do next.
type Attempt struct {
	// N numbers the attempts from 1; attempt N+1 is retry number N.
	N int `json:"n"`
	// Start is when the attempt was sent (Config.Now).
	Start time.Time `json:"start"`
	// Took is how long it took until the response headers or the error.
	Took time.Duration `json:"took"`
	// Status is the response status, zero when no response came back.
	Status int `json:"status,omitempty"`
	// Class is the connection-level failure of an attempt without a
	// response (connerr.Classify of Err); None when a response came back.
	Class connerr.Class `json:"class"`
	// Err is the error of an attempt without a response.
	Err error `json:"-"`
	// Wait is the pause before the next attempt; zero when there is none
	// (or when a Retry-After hint said "now").
	Wait time.Duration `json:"wait"`
	// Why says where Wait came from: WhyRetryAfter, WhyBackoff, or "" when
	// no retry follows this attempt.
	Why string `json:"why,omitempty"`
	// RetryAfter is the server's parsed Retry-After hint, when the response
	// carried a valid one (recorded even when it is ignored or too long).
	RetryAfter time.Duration `json:"retry_after,omitempty"`
	// BadRetryAfter is the raw Retry-After value when it could not be
	// parsed; the wait then comes from the Policy.
	BadRetryAfter string `json:"bad_retry_after,omitempty"`
	// GiveUp is set on the last attempt of a failed request: the error the
	// request ends with (a *RetryError's Cause: matched by errors.Is against
	// ErrNotRetryable, ErrRetriesExhausted, ErrRetryAfterTooLong). Nil while
	// retrying and on success.
	GiveUp error `json:"-"`
}

// Retried reports whether another attempt follows this one.
func (a Attempt) Retried() bool { return a.Why != "" }
