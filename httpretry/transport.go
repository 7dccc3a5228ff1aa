package httpretry

import (
	"context"
	"fmt"
	"net/http"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/connerr"
	"github.com/stampede-dev/stampede/internal/redact"
)

// Transport is an http.RoundTripper that retries each request on top of a
// base RoundTripper (Config.Base). It is safe for concurrent use. Following
// the RoundTripper contract, RoundTrip returns the last response whatever its
// status, and an error (a *RetryError) only when no response came back; use
// Client.Do for an error on every failed request.
type Transport struct {
	s settings
}

// NewTransport validates cfg and returns a Transport using it.
func NewTransport(cfg Config) (*Transport, error) {
	s, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	return &Transport{s: s}, nil
}

// RoundTrip sends req, retrying as configured. The response it returns is
// the last attempt's; its body must be closed by the caller, which also ends
// the attempt's AttemptTimeout.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.do(req)
	if resp != nil {
		return resp, nil
	}
	return nil, err
}

// retryClasses are the connection-level failures worth another attempt:
// the server was not reachable or did not answer in time. TLS failures,
// local resource or address errors and malformed answers are not.
var retryClasses = [connerr.NumClasses]bool{
	connerr.DNS:              true,
	connerr.Refused:          true,
	connerr.Timeout:          true,
	connerr.Reset:            true,
	connerr.HandshakeTimeout: true,
}

// idempotent are the methods RFC 9110 9.2.2 defines as idempotent: repeating
// them has the effect of sending them once.
var idempotent = map[string]bool{
	"": true, http.MethodGet: true, http.MethodHead: true, http.MethodOptions: true,
	http.MethodTrace: true, http.MethodPut: true, http.MethodDelete: true,
}

// repeatable reports whether req may be sent more than once: an idempotent
// method, a request carrying an Idempotency-Key (or X-Idempotency-Key)
// header, which lets the server deduplicate it, or RetryPOST.
func (s *settings) repeatable(req *http.Request) bool {
	if s.RetryPOST || idempotent[req.Method] {
		return true
	}
	_, key := req.Header["Idempotency-Key"]
	_, xkey := req.Header["X-Idempotency-Key"]
	return key || xkey
}

// do is the retry loop. It returns the last response when there is one
// (even with an error: Client.Do closes it, RoundTrip returns it) and a
// *RetryError for every request that did not succeed.
func (t *Transport) do(req *http.Request) (*http.Response, error) {
	s := &t.s
	ctx := req.Context()
	var attempts []Attempt
	record := func(a Attempt) {
		attempts = append(attempts, a)
		if s.OnAttempt != nil {
			s.OnAttempt(a)
		}
	}
	// stop ends the request with cause; the last recorded attempt says what
	// it saw.
	stop := func(resp *http.Response, cause error) (*http.Response, error) {
		e := &RetryError{Method: method(req), URL: redact.URL(req.URL.String()), Attempts: attempts, Cause: cause}
		last := attempts[len(attempts)-1]
		e.LastStatus, e.LastErr = last.Status, last.Err
		return resp, e
	}
	fail := func(a Attempt, resp *http.Response, cause error) (*http.Response, error) {
		a.GiveUp = cause
		record(a)
		return stop(resp, cause)
	}
	body, err := bodySource(req, s.repeatable(req) && s.retries > 0)
	if err != nil {
		return fail(Attempt{N: 1, Start: s.Now(), Err: err, Class: connerr.Local}, nil,
			notRetryable("reading the request body: %v", err))
	}
	for n := 1; ; n++ {
		resp, a := t.attempt(req, n, body)
		if a.Err != nil {
			if err := ctx.Err(); err != nil {
				return fail(a, nil, err) // the caller gave up: stop at once
			}
			if !retryClasses[a.Class] {
				return fail(a, nil, notRetryable("%s error", a.Class))
			}
		} else if !s.retryStatus(a.Status) {
			if a.Status >= 400 {
				return fail(a, resp, ErrNotRetryable)
			}
			record(a)
			return resp, nil
		}
		// A retryable failure: may it be repeated, and how long to wait?
		if !s.repeatable(req) {
			return fail(a, resp, fmt.Errorf("%w: %w", ErrNotRetryable, &unsafeMethodError{method(req)}))
		}
		if !s.mayRetry(n) {
			return fail(a, resp, ErrRetriesExhausted)
		}
		if err := s.chooseWait(&a, resp); err != nil {
			return fail(a, resp, err)
		}
		// A retry that cannot start before the caller's deadline is not
		// made: give up now rather than sleep into the deadline. The
		// deadline is read on Config.Now's clock.
		if dl, ok := ctx.Deadline(); ok {
			if left := dl.Sub(s.Now()); a.Wait >= left {
				return fail(a, resp, &pastDeadlineError{wait: a.Wait, left: left})
			}
		}
		record(a)
		if resp != nil {
			drain(resp.Body)
		}
		if err := s.Sleep(ctx, a.Wait); err != nil {
			return stop(nil, err) // cancelled while waiting: no attempt n+1
		}
	}
}

// attempt sends attempt number n of req once and records it. Without a
// response, a.Err and a.Class say why.
func (t *Transport) attempt(req *http.Request, n int, body bodyFunc) (*http.Response, Attempt) {
	s := &t.s
	a := Attempt{N: n, Start: s.Now()}
	actx, cancel := context.WithCancel(req.Context())
	if s.AttemptTimeout > 0 {
		actx, cancel = context.WithTimeout(req.Context(), s.AttemptTimeout)
	}
	r := req.Clone(actx)
	if body.get != nil {
		rc, err := body.get()
		if err != nil {
			cancel()
			a.Err, a.Class = err, connerr.Local
			return nil, a
		}
		r.Body = rc
		if body.replay {
			r.GetBody = body.get
		}
	}
	resp, err := s.Base.RoundTrip(r)
	a.Took = s.Now().Sub(a.Start)
	if err != nil {
		cancel()
		a.Err, a.Class = err, connerr.Classify(err)
		return nil, a
	}
	resp.Body = &cancelBody{ReadCloser: resp.Body, cancel: cancel}
	a.Status = resp.StatusCode
	if v := resp.Header.Get("Retry-After"); v != "" {
		if hint, err := ParseRetryAfter(v, s.Now()); err == nil {
			a.RetryAfter = hint
		} else {
			a.BadRetryAfter = v
		}
	}
	return resp, a
}

// chooseWait sets a.Wait and a.Why for the retry after attempt a: the
// server's Retry-After hint when there is one and it is honoured, spread
// upward and never shorter than asked; otherwise the Policy's delay. A hint
// above MaxRetryAfter is an error: the client gives up rather than waiting
// less than asked.
func (s *settings) chooseWait(a *Attempt, resp *http.Response) error {
	n := uint64(a.N)
	hinted := resp != nil && a.BadRetryAfter == "" && resp.Header.Get("Retry-After") != ""
	if hinted && !s.IgnoreRetryAfter {
		if _, err := CapRetryAfter(a.RetryAfter, s.MaxRetryAfter); err != nil {
			return err
		}
		w := backoff.Hinted(a.RetryAfter, s.spread, backoff.U(s.Seed, backoff.StreamHint, s.Client, n))
		// The spread stays within the cap, which the hint itself does.
		a.Wait, a.Why = min(w, s.MaxRetryAfter), WhyRetryAfter
		return nil
	}
	a.Wait, a.Why = s.policy.Delay(s.Seed, s.Client, a.N), WhyBackoff
	return nil
}

// method returns req's method, GET when empty.
func method(req *http.Request) string {
	if req.Method == "" {
		return http.MethodGet
	}
	return req.Method
}
