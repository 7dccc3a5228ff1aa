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

// TestTransportInHTTPClient: inside an http.Client the Transport follows the
// RoundTripper contract: an exhausted 503 is a response, not an error, and
// a refused connection is a *RetryError inside the *url.Error.
func TestTransportInHTTPClient(t *testing.T) {
	clock := newFakeClock()
	srv, ts := newScript(t, status(http.StatusServiceUnavailable))
	tr, err := NewTransport(clock.config(Config{MaxRetries: 2}))
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: tr}
	resp, err := hc.Get(ts.URL)
	if err != nil || resp.StatusCode != 503 || srv.Requests() != 3 {
		t.Fatalf("resp %v err %v requests %d; want the 3rd 503 as a response", resp, err, srv.Requests())
	}
	resp.Body.Close()

	_, err = hc.Get("http://" + closedPort(t) + "/")
	var re *RetryError
	if !errors.As(err, &re) || !errors.Is(err, ErrRetriesExhausted) || len(re.Attempts) != 3 {
		t.Fatalf("err = %v; want a RetryError after 3 attempts", err)
	}
}

// TestValidate names the faulty field of each bad Config.
func TestValidate(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		want string // "" = valid
	}{
		{name: "zero value", cfg: Config{}},
		{name: "bad policy", cfg: Config{Policy: &backoff.Policy{Jitter: 2}}, want: "httpretry: policy: " + backoff.Policy{Jitter: 2}.Validate().Error()},
		{name: "2xx status", cfg: Config{StatusCodes: []int{200}}, want: "httpretry: status code 200 cannot be retried: only 400-599 are failures"},
		{name: "negative cap", cfg: Config{MaxRetryAfter: -time.Second}, want: "httpretry: max retry-after must not be negative, got -1s"},
		{name: "NaN spread", cfg: Config{RetryAfterSpread: nan()}, want: "httpretry: retry-after spread must be a finite number, got NaN"},
		{name: "negative timeout", cfg: Config{AttemptTimeout: -1}, want: "httpretry: attempt timeout must not be negative, got -1ns"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if got := errString(err); got != tc.want {
				t.Fatalf("Validate() = %q; want %q", got, tc.want)
			}
			if _, err := New(tc.cfg); errString(err) != tc.want {
				t.Fatalf("New() = %v; want %q", err, tc.want)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func nan() float64 { z := 0.0; return z / z }
