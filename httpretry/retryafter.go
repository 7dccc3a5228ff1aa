package httpretry

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/stampede-dev/stampede/connerr"
)

// ErrBadRetryAfter is the cause of every ParseRetryAfter failure.
var ErrBadRetryAfter = errors.New("httpretry: Retry-After is neither delay-seconds nor an HTTP-date")

// ParseRetryAfter returns how long a server asked a client to wait, from the
// value of a Retry-After header (RFC 9110 10.2.3):
//
//	Retry-After = HTTP-date / delay-seconds
//
// delay-seconds (one or more ASCII digits) is tried first. A value too large
// for a time.Duration saturates at the longest one, never wrapping negative
// (go-retryablehttp's multiplication does). Then the three HTTP-date forms of
// RFC 9110 5.6.7 that a recipient must accept, via http.ParseTime:
// IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT"), rfc850 ("Sunday, 06-Nov-94
// 08:49:37 GMT") and asctime ("Sun Nov  6 08:49:37 1994"). A date is turned
// into a wait relative to now; a date not after now means 0.
//
// Leading and trailing spaces and tabs are ignored (they are not part of a
// field value). Anything else, such as a sign, a fraction or an empty value,
// is an error wrapping ErrBadRetryAfter. The result is never negative and is
// not capped: see CapRetryAfter.
func ParseRetryAfter(v string, now time.Time) (time.Duration, error) {
	// One parser serves the HTTP client and the WebSocket upgrade; this
	// wrapper only turns "no hint" into an error for callers that say why.
	d, ok := connerr.ParseRetryAfter(v, now, 0)
	if !ok {
		return 0, fmt.Errorf("%w: %q", ErrBadRetryAfter, strings.Trim(v, " \t"))
	}
	return d, nil
}

// ErrRetryAfterTooLong is the cause matched by errors.Is when a server asked
// for a longer wait than the client's cap allows, and the client gave up.
var ErrRetryAfterTooLong = errors.New("httpretry: Retry-After above the cap")

// RetryAfterTooLongError says what the server asked for and what the cap was.
// It matches ErrRetryAfterTooLong under errors.Is.
type RetryAfterTooLongError struct {
	// Hint is the wait the server asked for.
	Hint time.Duration
	// Cap is the longest wait the client accepts (Config.MaxRetryAfter).
	Cap time.Duration
}

// Error names the hint and the cap, e.g. "server asked to retry after
// 1h0m0s, above the 30s cap".
func (e *RetryAfterTooLongError) Error() string {
	return fmt.Sprintf("server asked to retry after %s, above the %s cap", e.Hint, e.Cap)
}

// Is makes errors.Is(err, ErrRetryAfterTooLong) true.
func (e *RetryAfterTooLongError) Is(target error) bool { return target == ErrRetryAfterTooLong }

// CapRetryAfter is the separate cap step after ParseRetryAfter: it returns
// hint unchanged when it is within limit, and a *RetryAfterTooLongError (and
// 0) when it is above it. A client that is asked to wait longer than it is
// willing to gives up at once and says why, rather than silently waiting
// less than asked (which a rate-limiting server would answer with another
// 429) or hanging for an hour. limit <= 0 means no cap.
func CapRetryAfter(hint, limit time.Duration) (time.Duration, error) {
	if limit > 0 && hint > limit {
		return 0, &RetryAfterTooLongError{Hint: hint, Cap: limit}
	}
	return hint, nil
}
