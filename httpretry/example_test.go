package httpretry_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"github.com/stampede-dev/stampede/httpretry"
)

// A server that is briefly unavailable: it answers 503 with Retry-After: 2
// once, then 200. The client waits at least the 2 s asked, spread upward
// by the seeded draw, and succeeds on the second attempt.
func Example() {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, "ok")
	}))
	defer srv.Close()

	client, err := httpretry.New(httpretry.Config{
		Seed: 42,
		OnAttempt: func(a httpretry.Attempt) {
			if a.Retried() {
				fmt.Printf("attempt %d: %d, Retry-After %s, wait %s (%s)\n", a.N, a.Status, a.RetryAfter, a.Wait.Round(time.Millisecond), a.Why)
				return
			}
			fmt.Printf("attempt %d: %d\n", a.N, a.Status)
		},
		// Record the wait instead of sleeping, to keep the example fast.
		Sleep: func(context.Context, time.Duration) error { return nil },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	req, _ := http.NewRequest("GET", srv.URL, nil)
	resp, err := client.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println(resp.Status)
	// Output:
	// attempt 1: 503, Retry-After 2s, wait 2.101s (retry-after)
	// attempt 2: 200
	// 200 OK
}

// A status that retrying cannot fix ends the request after one attempt; the
// error says why and errors.Is tells the causes apart.
func ExampleRetryError() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer srv.Close()

	client, _ := httpretry.New(httpretry.Config{})
	req, _ := http.NewRequest("GET", srv.URL, nil)
	_, err := client.Do(req)
	var re *httpretry.RetryError
	if errors.As(err, &re) {
		fmt.Println("attempts:", len(re.Attempts), "last status:", re.LastStatus)
		fmt.Println("not retryable:", errors.Is(err, httpretry.ErrNotRetryable))
		fmt.Println("retries exhausted:", errors.Is(err, httpretry.ErrRetriesExhausted))
	}
	// Output:
	// attempts: 1 last status: 401
	// not retryable: true
	// retries exhausted: false
}
