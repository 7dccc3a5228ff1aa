package httpretry

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// clockStart is the virtual "now" at which each test's fake clock starts: a
// whole second, so HTTP-dates (one-second resolution) are exact.
var clockStart = time.Date(2026, time.November, 29, 12, 0, 0, 0, time.UTC)

// fakeClock is an injected clock and sleeper: Sleep records the wait and
// moves the clock forward instead of sleeping, so a test of a 4 s backoff
// runs in microseconds.
type fakeClock struct {
	mu    sync.Mutex
	now   time.Time
	waits []time.Duration
}

func newFakeClock() *fakeClock { return &fakeClock{now: clockStart} }

// Now returns the virtual time.
func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Sleep records d and advances the virtual time by it, unless ctx is done.
func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waits = append(c.waits, d)
	c.now = c.now.Add(d)
	return nil
}

// Waits returns the waits slept so far.
func (c *fakeClock) Waits() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.waits...)
}

// config returns cfg wired to the fake clock.
func (c *fakeClock) config(cfg Config) Config {
	cfg.Now, cfg.Sleep = c.Now, c.Sleep
	return cfg
}

// script is a test server answering its n-th request (from 1) with
// answer(n, r); it counts requests and keeps each request's body.
type script struct {
	mu     sync.Mutex
	n      int
	bodies []string
	answer func(n int, w http.ResponseWriter, r *http.Request)
}

// newScript starts a loopback server running answer.
func newScript(t *testing.T, answer func(n int, w http.ResponseWriter, r *http.Request)) (*script, *httptest.Server) {
	t.Helper()
	s := &script{answer: answer}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := make([]byte, 0, 64)
		buf := make([]byte, 512)
		for {
			k, err := r.Body.Read(buf)
			body = append(body, buf[:k]...)
			if err != nil {
				break
			}
		}
		s.mu.Lock()
		s.n++
		n := s.n
		s.bodies = append(s.bodies, string(body))
		s.mu.Unlock()
		s.answer(n, w, r)
	}))
	t.Cleanup(srv.Close)
	return s, srv
}

// Requests returns how many requests the server saw.
func (s *script) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// Bodies returns the request bodies the server saw, in order.
func (s *script) Bodies() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.bodies...)
}

// status answers every request with code.
func status(code int) func(int, http.ResponseWriter, *http.Request) {
	return func(_ int, w http.ResponseWriter, _ *http.Request) { w.WriteHeader(code) }
}

// failThenOK answers the first fails requests with code and header
// Retry-After: retryAfter (when not empty), then 200 "ok".
func failThenOK(fails, code int, retryAfter string) func(int, http.ResponseWriter, *http.Request) {
	return func(n int, w http.ResponseWriter, _ *http.Request) {
		if n <= fails {
			if retryAfter != "" {
				w.Header().Set("Retry-After", retryAfter)
			}
			w.WriteHeader(code)
			return
		}
		_, _ = w.Write([]byte("ok"))
	}
}

// closedPort returns the address of a loopback port nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// newClient builds a Client from cfg or fails the test.
func newClient(t *testing.T, cfg Config) *Client {
	t.Helper()
	c, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

// send sends req through a Client built from cfg and returns the final
// status (body closed) or the error, and the attempts the hook saw.
func send(t *testing.T, cfg Config, req *http.Request) (status int, attempts []Attempt, err error) {
	t.Helper()
	var mu sync.Mutex
	cfg.OnAttempt = func(a Attempt) { mu.Lock(); attempts = append(attempts, a); mu.Unlock() }
	c := newClient(t, cfg)
	resp, err := c.Do(req)
	if err == nil {
		resp.Body.Close()
		status = resp.StatusCode
	}
	return status, attempts, err
}

// newRequest builds a request or fails the test.
func newRequest(t *testing.T, method, url string, body string) *http.Request {
	t.Helper()
	var req *http.Request
	var err error
	if body == "" {
		req, err = http.NewRequest(method, url, nil)
	} else {
		req, err = http.NewRequest(method, url, strings.NewReader(body))
	}
	if err != nil {
		t.Fatal(err)
	}
	return req
}
