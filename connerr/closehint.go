package connerr

import (
	"strings"
	"time"
)

// closeHintPrefix starts the reason of a close frame that carries a
// delay: "retry after 3.25s" (a Go duration, to the millisecond).
const closeHintPrefix = "retry after "

// CloseHintReason is the reason of a close frame (1012 or 1013) that tells
// the client to come back after d: "retry after 3.25s". It fits a close
// frame's 123 bytes of reason.
func CloseHintReason(d time.Duration) string {
	return closeHintPrefix + d.Round(time.Millisecond).String()
}

// ParseCloseHint reads the delay of a close reason written by
// CloseHintReason; ok is false for any other reason or a delay that is not
// positive. When max > 0 the delay is clamped to it, as a Retry-After is.
func ParseCloseHint(reason string, max time.Duration) (d time.Duration, ok bool) {
	v, found := strings.CutPrefix(reason, closeHintPrefix)
	if !found {
		return 0, false
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, false
	}
	if max > 0 && d > max {
		d = max
	}
	return d, true
}

// CloseHint is the delay a connection ended with class c and close
// reason may carry: ParseCloseHint's, for a close 1012 (service restart)
// or 1013 (try again later), 0 for any other close or reason.
func CloseHint(c Class, reason string, max time.Duration) time.Duration {
	if !hintedClose(c) {
		return 0
	}
	d, _ := ParseCloseHint(reason, max)
	return d
}

// hintedClose reports whether a close of class c may carry a delay.
func hintedClose(c Class) bool { return c == Closed1012 || c == Closed1013 }

// HonorsHint reports whether a failure of class c (with HTTP status, 0
// for none) carries a server hint a client honours: a Retry-After of
// HonorsRetryAfter's statuses, or the delay of a close frame 1012
// (service restart) or 1013 (try again later).
func HonorsHint(c Class, status int) bool {
	return HonorsRetryAfter(status) || hintedClose(c)
}
