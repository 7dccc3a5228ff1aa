package httpretry

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/connerr"
)

// TestCancelStopsWait cancels the request's context while the client waits
// an hour before its retry: the real sleeper returns at once with the
// context's error, and no second attempt is made. (Were the wait not
// interrupted, the test would hang until its deadline.)
func TestCancelStopsWait(t *testing.T) {
	srv, ts := newScript(t, status(http.StatusServiceUnavailable))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := Config{
		Policy:    &backoff.Policy{Kind: backoff.Fixed, Initial: time.Hour},
		OnAttempt: func(Attempt) { cancel() },
	}
	c := newClient(t, cfg)
	req := newRequest(t, "GET", ts.URL, "")
	resp, err := c.Do(req.WithContext(ctx))
	var re *RetryError
	if resp != nil || !errors.Is(err, context.Canceled) || !errors.As(err, &re) || len(re.Attempts) != 1 || re.LastStatus != 503 {
		t.Fatalf("resp %v, err %v; want context.Canceled after one attempt", resp, err)
	}
	if srv.Requests() != 1 {
		t.Fatalf("requests = %d; want 1", srv.Requests())
	}
}

// TestCancelStopsAttempt cancels the context while an attempt is in flight:
// the client stops at once instead of counting it as a retryable timeout.
func TestCancelStopsAttempt(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, ts := newScript(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		cancel()
		<-r.Context().Done() // the client went away
	})
	clock := newFakeClock()
	_, attempts, err := send(t, clock.config(Config{}), newRequest(t, "GET", ts.URL, "").WithContext(ctx))
	if !errors.Is(err, context.Canceled) || len(attempts) != 1 || len(clock.Waits()) != 0 {
		t.Fatalf("err %v, attempts %d, waits %v; want context.Canceled after one attempt", err, len(attempts), clock.Waits())
	}
	if !errors.Is(attempts[0].GiveUp, context.Canceled) || srv.Requests() != 1 {
		t.Fatalf("attempt %+v, requests %d", attempts[0], srv.Requests())
	}
}

// TestAttemptTimeout: an attempt that outlives AttemptTimeout is classed a
// timeout and retried; the next one succeeds.
func TestAttemptTimeout(t *testing.T) {
	_, ts := newScript(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			select { // hang until the client gives up on the attempt
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	clock := newFakeClock()
	st, attempts, err := send(t, clock.config(Config{AttemptTimeout: 50 * time.Millisecond}), newRequest(t, "GET", ts.URL, ""))
	if err != nil || st != 204 || len(attempts) != 2 {
		t.Fatalf("status %d err %v attempts %d; want 204 on the 2nd attempt", st, err, len(attempts))
	}
	if a := attempts[0]; a.Class != connerr.Timeout || a.Why != WhyBackoff || !errors.Is(a.Err, context.DeadlineExceeded) {
		t.Fatalf("attempt 1 = %+v; want a timeout, retried", a)
	}
}
