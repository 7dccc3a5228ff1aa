package connerr

import (
	"math"
	"net/http"
	"strings"
	"time"
)

// HonorsRetryAfter reports whether a non-101 upgrade answer with status
// carries a Retry-After a client honours: 429 (too many requests) and the
// load balancer's 502, 503 and 504 (docs/drill.md "What servers say when
// they restart").
func HonorsRetryAfter(status int) bool {
	switch status {
	case 429, 502, 503, 504:
		return true
	}
	return false
}

// ParseRetryAfter parses a Retry-After header value (RFC 9110 10.2.3) into a
// wait: delay-seconds ("120") or an HTTP-date in any of the three formats a
// recipient must accept (RFC 9110 5.6.7: IMF-fixdate, rfc850, asctime),
// measured from now, the time the answer arrived. A date in the past gives
// 0. When max > 0 the wait is clamped to max; a huge delay-seconds value
// saturates instead of overflowing. ok is false for an empty or malformed
// value, which a client should treat as no hint.
func ParseRetryAfter(value string, now time.Time, max time.Duration) (wait time.Duration, ok bool) {
	v := strings.TrimSpace(value)
	if v == "" {
		return 0, false
	}
	if isDigits(v) {
		wait = parseSeconds(v)
	} else {
		t, err := http.ParseTime(v)
		if err != nil {
			return 0, false
		}
		wait = t.Sub(now) // saturates at the Duration range
		if wait < 0 {
			wait = 0
		}
	}
	if max > 0 && wait > max {
		wait = max
	}
	return wait, true
}

// isDigits reports whether s is one or more ASCII digits.
func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// parseSeconds converts delay-seconds to a Duration, saturating at the
// largest Duration rather than wrapping negative.
func parseSeconds(digits string) time.Duration {
	const maxSeconds = math.MaxInt64 / int64(time.Second)
	var n int64
	for i := 0; i < len(digits); i++ {
		n = n*10 + int64(digits[i]-'0')
		if n > maxSeconds {
			return math.MaxInt64
		}
	}
	return time.Duration(n) * time.Second
}
