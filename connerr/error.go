package connerr

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gobwas/ws"
)

// Error is a classified failure of one connection attempt, or the end of one
// connection. Its text is what a client keeps as its last error and reports
// when it gives up, for example
//
//	refused: dial tcp 127.0.0.1:9: connect: connection refused
//	http_503: 503 Service Unavailable (Retry-After 2s)
type Error struct {
	// Class is why the attempt failed or the connection ended.
	Class Class
	// Status is the HTTP status of a non-101 upgrade answer, 0 otherwise.
	Status int
	// RetryAfter is the server's Retry-After hint from a 429 or 503 answer,
	// already parsed and capped (see ParseRetryAfter); 0 when absent.
	RetryAfter time.Duration
	// Err is the underlying error, kept for errors.Is / errors.As.
	Err error
}

// Wrap classifies err, which happened in phase, into an *Error. It returns
// nil for nil, and the *Error itself when err already carries one. The
// status of a gobwas ws.StatusError is copied into Status.
func Wrap(err error, phase Phase) *Error {
	if err == nil {
		return nil
	}
	var ce *Error
	if errors.As(err, &ce) {
		return ce
	}
	e := &Error{Class: ClassifyPhase(err, phase), Err: err}
	var status ws.StatusError
	if errors.As(err, &status) {
		e.Status = int(status)
	}
	return e
}

// Error returns "class: detail", the detail being the status line of a
// handshake answer or the underlying error's text, followed by the
// Retry-After hint when there is one.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Class.String())
	switch {
	case e.Status != 0:
		b.WriteString(": ")
		b.WriteString(strconv.Itoa(e.Status))
		if text := http.StatusText(e.Status); text != "" {
			b.WriteByte(' ')
			b.WriteString(text)
		}
	case e.Err != nil:
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	if e.RetryAfter > 0 {
		b.WriteString(" (Retry-After ")
		b.WriteString(e.RetryAfter.String())
		b.WriteByte(')')
	}
	return b.String()
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Retryable reports whether a client should try again after this failure:
// Class.Retryable with the answer's status (only 429 among 4xx answers).
func (e *Error) Retryable() bool { return e.Class.Retryable(e.Status) }
