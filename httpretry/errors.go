package httpretry

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Sentinel causes of a failed request, matched by errors.Is on a *RetryError.
// ErrRetryAfterTooLong (retryafter.go) and ErrPastDeadline are the others.
var (
	// ErrRetriesExhausted: every allowed attempt failed with a retryable
	// status or connection error.
	ErrRetriesExhausted = errors.New("retries exhausted")
	// ErrNotRetryable: the failure cannot be fixed by retrying (a status not
	// in StatusCodes, a TLS or protocol error), or the method is not safe to
	// repeat.
	ErrNotRetryable = errors.New("not retryable")
)

// RetryError is the error of a request that did not end in success. It
// unwraps to both Cause and LastErr, so errors.Is matches a sentinel cause
// (ErrRetriesExhausted, ErrNotRetryable, ErrRetryAfterTooLong,
// context.Canceled, context.DeadlineExceeded) as well as the last
// connection error (e.g. syscall.ECONNREFUSED).
type RetryError struct {
	// Method and URL name the request.
	Method, URL string
	// Attempts records every attempt, in order.
	Attempts []Attempt
	// LastStatus is the status of the last response, zero when the last
	// attempt got none.
	LastStatus int
	// LastErr is the error of the last attempt without a response, nil when
	// it got one.
	LastErr error
	// Cause says why the client stopped.
	Cause error
}

// Error says in one line why the request failed and what the last attempt
// saw, e.g. "GET http://h/: retries exhausted after 5 attempts: last status
// 503 Service Unavailable".
func (e *RetryError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s: %v", e.Method, e.URL, e.Cause)
	n := len(e.Attempts)
	if n == 1 {
		b.WriteString(" (1 attempt)")
	} else {
		fmt.Fprintf(&b, " (%d attempts)", n)
	}
	switch {
	case e.LastStatus != 0:
		fmt.Fprintf(&b, ": last status %d %s", e.LastStatus, http.StatusText(e.LastStatus))
	case e.LastErr != nil:
		fmt.Fprintf(&b, ": last error: %v", e.LastErr)
		if n > 0 {
			fmt.Fprintf(&b, " (%s)", e.Attempts[n-1].Class)
		}
	}
	return b.String()
}

// Unwrap returns the cause and the last error, for errors.Is and errors.As.
func (e *RetryError) Unwrap() []error {
	out := make([]error, 0, 2)
	if e.Cause != nil {
		out = append(out, e.Cause)
	}
	if e.LastErr != nil {
		out = append(out, e.LastErr)
	}
	return out
}

// notRetryable wraps ErrNotRetryable with the reason.
func notRetryable(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrNotRetryable}, args...)...)
}

// ErrUnsafeMethod is matched by errors.Is on a *RetryError whose request
// failed with a retryable status or connection error but was not retried
// because its method is not idempotent and it carried no Idempotency-Key
// (docs/policy.md). It is always found together with ErrNotRetryable.
var ErrUnsafeMethod = errors.New("unsafe method not retried")

// unsafeMethodError names the method; it matches ErrUnsafeMethod.
type unsafeMethodError struct{ method string }

func (e *unsafeMethodError) Error() string {
	return e.method + " without an Idempotency-Key header"
}

func (e *unsafeMethodError) Is(target error) bool { return target == ErrUnsafeMethod }

// ErrPastDeadline is matched by errors.Is on a *RetryError whose request
// was given up before a retry because the wait (the server's Retry-After or
// the policy's delay) would end at or after the request context's deadline:
// the retry could not happen in time, so the caller learns now rather than
// when the deadline passes.
var ErrPastDeadline = errors.New("the wait before the next attempt would outlast the deadline")

// pastDeadlineError names the wait and the time left; it matches
// ErrPastDeadline.
type pastDeadlineError struct{ wait, left time.Duration }

func (e *pastDeadlineError) Error() string {
	return fmt.Sprintf("%v: wait %s, %s left", ErrPastDeadline, e.wait, max(e.left, 0))
}

func (e *pastDeadlineError) Is(target error) bool { return target == ErrPastDeadline }
