package httpretry

import (
	"errors"
	"net/http"
	"testing"
)

// TestDefaultRetries529 checks that 529 ("overloaded") is retried by a
// zero Config, honouring its Retry-After like a 429.
func TestDefaultRetries529(t *testing.T) {
	s, srv := newScript(t, failThenOK(1, StatusOverloaded, "2"))
	clk := newFakeClock()
	code, attempts, err := send(t, clk.config(Config{}), newRequest(t, "GET", srv.URL, ""))
	if err != nil || code != 200 || s.Requests() != 2 {
		t.Fatalf("got status %d, err %v, %d requests; want 200 after 2", code, err, s.Requests())
	}
	if a := attempts[0]; a.Why != WhyRetryAfter || a.Wait < a.RetryAfter || a.RetryAfter == 0 {
		t.Errorf("attempt 1 waited %s (%s) for a hint of %s; want at least the hint", a.Wait, a.Why, a.RetryAfter)
	}
}

// TestUnsafeMethodCause checks that a POST without an Idempotency-Key that
// got a retryable status ends with a cause matching both ErrNotRetryable
// and ErrUnsafeMethod, and that a non-retryable status does not match
// ErrUnsafeMethod.
func TestUnsafeMethodCause(t *testing.T) {
	for _, tc := range []struct {
		name   string
		code   int
		unsafe bool
	}{
		{"retryable status", http.StatusServiceUnavailable, true},
		{"client error", http.StatusBadRequest, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, srv := newScript(t, status(tc.code))
			clk := newFakeClock()
			_, _, err := send(t, clk.config(Config{}), newRequest(t, "POST", srv.URL, "x"))
			if !errors.Is(err, ErrNotRetryable) {
				t.Fatalf("err %v does not match ErrNotRetryable", err)
			}
			if got := errors.Is(err, ErrUnsafeMethod); got != tc.unsafe {
				t.Errorf("errors.Is(%v, ErrUnsafeMethod) = %v, want %v", err, got, tc.unsafe)
			}
		})
	}
}
