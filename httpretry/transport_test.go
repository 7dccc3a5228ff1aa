package httpretry

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/connerr"
)

// TestBackoffWaits checks the default HTTP policy against a server that is
// always unavailable: 1 + 4 attempts, waits 500 ms, 1 s, 2 s, 4 s exactly
// (docs/policy.md), then ErrRetriesExhausted naming the last status.
func TestBackoffWaits(t *testing.T) {
	clock := newFakeClock()
	srv, ts := newScript(t, status(http.StatusServiceUnavailable))
	_, attempts, err := send(t, clock.config(Config{}), newRequest(t, "GET", ts.URL, ""))

	want := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second}
	if got := clock.Waits(); !slices.Equal(got, want) {
		t.Fatalf("waits = %v; want %v", got, want)
	}
	if srv.Requests() != 5 || len(attempts) != 5 {
		t.Fatalf("requests = %d, attempts = %d; want 5", srv.Requests(), len(attempts))
	}
	for i, a := range attempts[:4] {
		if a.N != i+1 || a.Status != 503 || a.Why != WhyBackoff || a.Wait != want[i] || a.GiveUp != nil {
			t.Errorf("attempt %d = %+v", i+1, a)
		}
	}
	// The virtual clock shows each attempt starting after the waits before it.
	if got := attempts[4].Start.Sub(clockStart); got != 7500*time.Millisecond {
		t.Errorf("attempt 5 started at +%v; want +7.5s", got)
	}
	last := attempts[4]
	if last.Why != "" || last.Wait != 0 || !errors.Is(last.GiveUp, ErrRetriesExhausted) {
		t.Errorf("last attempt = %+v", last)
	}
	var re *RetryError
	if !errors.As(err, &re) || !errors.Is(err, ErrRetriesExhausted) || re.LastStatus != 503 || len(re.Attempts) != 5 {
		t.Fatalf("err = %v; want a RetryError, retries exhausted, last status 503", err)
	}
	const msg = "GET " + "%s: retries exhausted (5 attempts): last status 503 Service Unavailable"
	if got := err.Error(); got != strings.Replace(msg, "%s", ts.URL, 1) {
		t.Errorf("message = %q", got)
	}
}

// TestRetryAfterHonoured answers 503 with a Retry-After in each of its forms,
// then 200. The wait must be the hint spread upward: never shorter, at most
// hint*(1+HintSpread), and exactly the seeded draw.
func TestRetryAfterHonoured(t *testing.T) {
	at := clockStart.Add(2 * time.Second) // what the dates say: 2 s ahead
	cases := []struct {
		name  string
		value string
		hint  time.Duration
	}{
		{name: "delay-seconds", value: "2", hint: 2 * time.Second},
		{name: "IMF-fixdate", value: at.Format(http.TimeFormat), hint: 2 * time.Second},
		{name: "rfc850", value: at.Format("Monday, 02-Jan-06 15:04:05") + " GMT", hint: 2 * time.Second},
		{name: "asctime", value: at.Format(time.ANSIC), hint: 2 * time.Second},
		// A date already past: retry now, and say it was the server's word.
		{name: "past date", value: clockStart.Add(-time.Hour).Format(http.TimeFormat), hint: 0},
		{name: "zero seconds", value: "0", hint: 0},
		// Exactly at the 30 s default cap: still honoured; the spread is
		// clamped to the cap, which is still not shorter than asked.
		{name: "at the cap", value: "30", hint: 30 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clock := newFakeClock()
			srv, ts := newScript(t, failThenOK(1, http.StatusServiceUnavailable, tc.value))
			st, attempts, err := send(t, clock.config(Config{Seed: 7, Client: 3}), newRequest(t, "GET", ts.URL, ""))
			if err != nil || st != 200 || srv.Requests() != 2 {
				t.Fatalf("status %d, err %v, requests %d; want 200 on the 2nd", st, err, srv.Requests())
			}
			a := attempts[0]
			if a.RetryAfter != tc.hint || a.Why != WhyRetryAfter {
				t.Fatalf("attempt 1: hint %v why %q; want %v %q", a.RetryAfter, a.Why, tc.hint, WhyRetryAfter)
			}
			upper := time.Duration(float64(tc.hint) * (1 + backoff.HintSpread))
			want := min(backoff.Hinted(tc.hint, backoff.HintSpread, backoff.U(7, backoff.StreamHint, 3, 1)), DefaultMaxRetryAfter)
			if a.Wait < tc.hint || a.Wait > upper || a.Wait != want {
				t.Fatalf("wait %v; want %v, within [%v, %v]", a.Wait, want, tc.hint, upper)
			}
			if w := clock.Waits(); len(w) != 1 || w[0] != a.Wait {
				t.Fatalf("slept %v; want [%v]", w, a.Wait)
			}
		})
	}
}

// TestRetryAfterSpreadsAFleet: clients of one seed told the same hint wait
// different times, all within [hint, hint*1.2]: no synchronized return.
func TestRetryAfterSpreadsAFleet(t *testing.T) {
	_, ts := newScript(t, failThenOK(1<<30, http.StatusTooManyRequests, "5"))
	seen := map[time.Duration]bool{}
	for client := range uint64(20) {
		cfg := newFakeClock().config(Config{Seed: 1, Client: client, MaxRetries: 1})
		_, attempts, _ := send(t, cfg, newRequest(t, "GET", ts.URL, ""))
		w := attempts[0].Wait
		if w < 5*time.Second || w > 6*time.Second {
			t.Fatalf("client %d waits %v; want within [5s, 6s]", client, w)
		}
		seen[w] = true
	}
	if len(seen) < 19 {
		t.Fatalf("20 clients drew only %d distinct waits", len(seen))
	}
}

// TestRetryAfterTooLong: a hint above MaxRetryAfter ends the request at
// once, without sleeping, with an error naming the hint and the cap.
func TestRetryAfterTooLong(t *testing.T) {
	cases := []struct {
		name  string
		value string
		cap   time.Duration
		msg   string
	}{
		{name: "default cap", value: "3600", msg: "server asked to retry after 1h0m0s, above the 30s cap"},
		{name: "explicit cap", value: "11", cap: 10 * time.Second, msg: "server asked to retry after 11s, above the 10s cap"},
		// The overflow go-retryablehttp turns negative is a give-up here.
		{name: "saturated", value: "99999999999999999999", msg: "server asked to retry after 2562047h47m16.854775807s, above the 30s cap"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clock := newFakeClock()
			srv, ts := newScript(t, failThenOK(1, http.StatusServiceUnavailable, tc.value))
			_, attempts, err := send(t, clock.config(Config{MaxRetryAfter: tc.cap}), newRequest(t, "GET", ts.URL, ""))
			var te *RetryAfterTooLongError
			if !errors.Is(err, ErrRetryAfterTooLong) || !errors.As(err, &te) || te.Error() != tc.msg {
				t.Fatalf("err = %v; want %q", err, tc.msg)
			}
			if srv.Requests() != 1 || len(clock.Waits()) != 0 || len(attempts) != 1 || attempts[0].Why != "" {
				t.Fatalf("requests %d, waits %v, attempts %+v; want one attempt, no wait", srv.Requests(), clock.Waits(), attempts)
			}
		})
	}
}

// TestRetryAfterNotUsed: an ignored or malformed hint falls back to the
// policy's wait, and the attempt records why.
func TestRetryAfterNotUsed(t *testing.T) {
	cases := []struct {
		name     string
		cfg      Config
		value    string
		wantHint time.Duration
		wantBad  string
	}{
		// --retry-after=false: the hint is recorded but the policy decides,
		// so neither the wait nor the cap follows it.
		{name: "ignored", cfg: Config{IgnoreRetryAfter: true}, value: "3600", wantHint: time.Hour},
		{name: "malformed", value: "soon", wantBad: "soon"},
		{name: "negative", value: "-5", wantBad: "-5"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clock := newFakeClock()
			_, ts := newScript(t, failThenOK(1, http.StatusServiceUnavailable, tc.value))
			st, attempts, err := send(t, clock.config(tc.cfg), newRequest(t, "GET", ts.URL, ""))
			if err != nil || st != 200 {
				t.Fatalf("status %d, err %v", st, err)
			}
			a := attempts[0]
			if a.Wait != 500*time.Millisecond || a.Why != WhyBackoff || a.RetryAfter != tc.wantHint || a.BadRetryAfter != tc.wantBad {
				t.Fatalf("attempt 1 = %+v", a)
			}
		})
	}
}

// TestStatusOutcomes: which statuses end a request after exactly one
// attempt, and whether that is a success or an ErrNotRetryable.
func TestStatusOutcomes(t *testing.T) {
	cases := []struct {
		name   string
		code   int
		cfg    Config
		failed bool
	}{
		{name: "200 succeeds", code: 200},
		{name: "204 succeeds", code: 204},
		// Redirects are answers, not failures; Client does not follow them.
		{name: "302 is returned", code: 302},
		{name: "400 bad request", code: 400, failed: true},
		{name: "401 unauthorized", code: 401, failed: true},
		{name: "403 forbidden", code: 403, failed: true},
		{name: "404 not found", code: 404, failed: true},
		// 500 usually means a bug, not overload: not in the default list.
		{name: "500 not retried by default", code: 500, failed: true},
		// ...unless the caller lists it, and then 503 is not retried either.
		{name: "503 not in a custom list", code: 503, cfg: Config{StatusCodes: []int{500}}, failed: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clock := newFakeClock()
			srv, ts := newScript(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Location", "/elsewhere")
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(tc.code)
			})
			st, attempts, err := send(t, clock.config(tc.cfg), newRequest(t, "GET", ts.URL, ""))
			if srv.Requests() != 1 || len(attempts) != 1 || len(clock.Waits()) != 0 {
				t.Fatalf("requests %d, attempts %d, waits %v; want exactly one attempt", srv.Requests(), len(attempts), clock.Waits())
			}
			var re *RetryError
			if tc.failed {
				if !errors.Is(err, ErrNotRetryable) || !errors.As(err, &re) || re.LastStatus != tc.code || st != 0 {
					t.Fatalf("status %d, err %v; want ErrNotRetryable with last status %d", st, err, tc.code)
				}
				return
			}
			if err != nil || st != tc.code || attempts[0].GiveUp != nil {
				t.Fatalf("status %d, err %v; want %d", st, err, tc.code)
			}
		})
	}
}

// TestRetryLimits: MaxRetries and the policy's attempts both bound the
// retries of an always-503 server; the lower one wins.
func TestRetryLimits(t *testing.T) {
	cases := []struct {
		name     string
		cfg      Config
		requests int
	}{
		{name: "default 4 retries", cfg: Config{}, requests: 5},
		{name: "2 retries", cfg: Config{MaxRetries: 2}, requests: 3},
		{name: "negative means none", cfg: Config{MaxRetries: -1}, requests: 1},
		{name: "policy attempts lower", cfg: Config{MaxRetries: 5, Policy: &backoff.Policy{Kind: backoff.Fixed, Initial: time.Millisecond, MaxAttempts: 1}}, requests: 2},
		{name: "policy attempts higher", cfg: Config{MaxRetries: 2, Policy: &backoff.Policy{Kind: backoff.Fixed, Initial: time.Millisecond, MaxAttempts: 9}}, requests: 3},
		{name: "each listed status", cfg: Config{MaxRetries: 3, StatusCodes: []int{429, 502, 503, 504}}, requests: 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			codes := []int{429, 502, 503, 504, 503, 503}
			srv, ts := newScript(t, func(n int, w http.ResponseWriter, _ *http.Request) { w.WriteHeader(codes[(n-1)%len(codes)]) })
			_, attempts, err := send(t, newFakeClock().config(tc.cfg), newRequest(t, "GET", ts.URL, ""))
			if srv.Requests() != tc.requests || len(attempts) != tc.requests || !errors.Is(err, ErrRetriesExhausted) {
				t.Fatalf("requests %d, attempts %d, err %v; want %d, retries exhausted", srv.Requests(), len(attempts), err, tc.requests)
			}
		})
	}
}

// TestClosedPort: a connection refused is retried, each attempt classed
// refused, and the final error says so and matches ECONNREFUSED.
func TestClosedPort(t *testing.T) {
	clock := newFakeClock()
	url := "http://" + closedPort(t) + "/"
	_, attempts, err := send(t, clock.config(Config{MaxRetries: 3}), newRequest(t, "GET", url, ""))
	if len(attempts) != 4 {
		t.Fatalf("attempts = %d; want 4", len(attempts))
	}
	for _, a := range attempts {
		if a.Class != connerr.Refused || a.Status != 0 || a.Err == nil {
			t.Errorf("attempt %d: class %v status %d err %v; want refused", a.N, a.Class, a.Status, a.Err)
		}
	}
	var re *RetryError
	if !errors.As(err, &re) || !errors.Is(err, ErrRetriesExhausted) || !errors.Is(err, syscall.ECONNREFUSED) || re.LastStatus != 0 {
		t.Fatalf("err = %v; want retries exhausted, ECONNREFUSED", err)
	}
	if !strings.Contains(err.Error(), "(refused)") {
		t.Errorf("message %q does not name the class", err.Error())
	}
}

// TestBodyReplayed: the server checks that every attempt carries the whole
// body, whether the request can rebuild it (GetBody) or it must be buffered.
func TestBodyReplayed(t *testing.T) {
	const body = `{"id":"m-1","text":"hello, stampede"}`
	cases := []struct {
		name   string
		method string
		body   func() io.Reader
	}{
		// http.NewRequest sets GetBody for a *strings.Reader.
		{name: "PUT with GetBody", method: "PUT", body: func() io.Reader { return strings.NewReader(body) }},
		// A plain io.Reader has no GetBody: the client buffers it once.
		{name: "PUT buffered", method: "PUT", body: func() io.Reader { return io.MultiReader(strings.NewReader(body[:9]), strings.NewReader(body[9:])) }},
		{name: "POST with a key, buffered", method: "POST", body: func() io.Reader { return io.LimitReader(strings.NewReader(body), 1<<20) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, ts := newScript(t, failThenOK(2, http.StatusBadGateway, ""))
			req, err := http.NewRequest(tc.method, ts.URL, tc.body())
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Idempotency-Key", "k-1")
			st, _, err := send(t, newFakeClock().config(Config{}), req)
			if err != nil || st != 200 {
				t.Fatalf("status %d err %v", st, err)
			}
			if got := srv.Bodies(); !slices.Equal(got, []string{body, body, body}) {
				t.Fatalf("server saw bodies %q; want the body 3 times", got)
			}
		})
	}
}

// TestNonIdempotent: POST and PATCH are repeated only with an
// Idempotency-Key or with RetryPOST.
func TestNonIdempotent(t *testing.T) {
	cases := []struct {
		name     string
		method   string
		header   string
		cfg      Config
		requests int
	}{
		{name: "POST without key: one attempt", method: "POST", requests: 1},
		{name: "PATCH without key: one attempt", method: "PATCH", requests: 1},
		{name: "POST with Idempotency-Key", method: "POST", header: "Idempotency-Key", requests: 3},
		{name: "POST with X-Idempotency-Key", method: "POST", header: "X-Idempotency-Key", requests: 3},
		{name: "POST with RetryPOST", method: "POST", cfg: Config{RetryPOST: true}, requests: 3},
		{name: "DELETE is idempotent", method: "DELETE", requests: 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, ts := newScript(t, failThenOK(2, http.StatusServiceUnavailable, ""))
			req := newRequest(t, tc.method, ts.URL, "payload")
			if tc.header != "" {
				req.Header.Set(tc.header, "order-42")
			}
			st, _, err := send(t, newFakeClock().config(tc.cfg), req)
			if srv.Requests() != tc.requests {
				t.Fatalf("requests = %d; want %d (err %v)", srv.Requests(), tc.requests, err)
			}
			if tc.requests == 1 {
				if !errors.Is(err, ErrNotRetryable) || !strings.Contains(err.Error(), tc.method+" without an Idempotency-Key header") {
					t.Fatalf("err = %v; want not retryable, naming the missing key", err)
				}
			} else if err != nil || st != 200 {
				t.Fatalf("status %d err %v; want 200", st, err)
			}
		})
	}
}

// TestPolicyWaits: the waits between attempts against an always-503 server
// come from the configured policy, exactly (no jitter).
func TestPolicyWaits(t *testing.T) {
	ms := time.Millisecond
	cases := []struct {
		name   string
		policy *backoff.Policy
		want   []time.Duration
	}{
		{name: "nil is the HTTP default", want: []time.Duration{500 * ms, 1000 * ms, 2000 * ms, 4000 * ms}},
		// The zero Policy is exp from 1 s, not "the default".
		{name: "zero policy", policy: &backoff.Policy{}, want: []time.Duration{1000 * ms, 2000 * ms, 4000 * ms, 8000 * ms}},
		{name: "fixed 10ms", policy: &backoff.Policy{Kind: backoff.Fixed, Initial: 10 * ms}, want: []time.Duration{10 * ms, 10 * ms, 10 * ms, 10 * ms}},
		{name: "capped by max", policy: &backoff.Policy{Initial: 500 * ms, Max: time.Second}, want: []time.Duration{500 * ms, 1000 * ms, 1000 * ms, 1000 * ms}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clock := newFakeClock()
			_, ts := newScript(t, status(http.StatusGatewayTimeout))
			_, _, err := send(t, clock.config(Config{Policy: tc.policy}), newRequest(t, "GET", ts.URL, ""))
			if got := clock.Waits(); !slices.Equal(got, tc.want) || !errors.Is(err, ErrRetriesExhausted) {
				t.Fatalf("waits %v, err %v; want %v, retries exhausted", got, err, tc.want)
			}
		})
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

// closeTracker is a request body that records being closed.
type closeTracker struct {
	io.Reader
	closed atomic.Bool
}

func (c *closeTracker) Close() error { c.closed.Store(true); return nil }

// TestRequestBodyClosed: the caller's body is closed whichever way it is
// sent (a RoundTripper must close it), and a request that is never retried
// streams it as it is.
func TestRequestBodyClosed(t *testing.T) {
	cases := []struct {
		name     string
		method   string
		getBody  bool
		requests int
	}{
		{name: "replayed from GetBody", method: "PUT", getBody: true, requests: 2},
		{name: "buffered once", method: "PUT", requests: 2},
		{name: "POST sent once, streamed", method: "POST", requests: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, ts := newScript(t, failThenOK(1, http.StatusServiceUnavailable, ""))
			body := &closeTracker{Reader: strings.NewReader("payload")}
			req, err := http.NewRequest(tc.method, ts.URL, body)
			if err != nil {
				t.Fatal(err)
			}
			if tc.getBody {
				req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader("payload")), nil }
			}
			send(t, newFakeClock().config(Config{}), req)
			if !body.closed.Load() || srv.Requests() != tc.requests || !slices.Equal(srv.Bodies(), slices.Repeat([]string{"payload"}, tc.requests)) {
				t.Fatalf("closed %v, bodies %q; want closed, %d x payload", body.closed.Load(), srv.Bodies(), tc.requests)
			}
		})
	}
}

// TestPastDeadline: a retry whose wait (hint or policy delay) would end
// after the request context's deadline is not made: the request ends at
// once with ErrPastDeadline, without sleeping; a wait that fits is slept and
// retried. The deadline is on the real clock here, so Now is the real one
// and only the sleeps are virtual.
func TestPastDeadline(t *testing.T) {
	cases := []struct {
		name     string
		value    string // Retry-After, "" for none
		ignore   bool
		requests int
	}{
		{name: "hint past the deadline", value: "5", requests: 1},
		{name: "hint within the deadline", value: "1", requests: 2},
		// Ignoring the hint, the policy's 500 ms fits in the 3 s left.
		{name: "hint ignored, policy wait fits", value: "5", ignore: true, requests: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var slept []time.Duration
			sleep := func(ctx context.Context, d time.Duration) error {
				mu.Lock()
				defer mu.Unlock()
				slept = append(slept, d)
				return ctx.Err()
			}
			srv, ts := newScript(t, failThenOK(1, http.StatusTooManyRequests, tc.value))
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			req := newRequest(t, "GET", ts.URL, "").WithContext(ctx)
			st, attempts, err := send(t, Config{Sleep: sleep, IgnoreRetryAfter: tc.ignore}, req)
			if srv.Requests() != tc.requests {
				t.Fatalf("requests %d; want %d (err %v)", srv.Requests(), tc.requests, err)
			}
			if tc.requests == 2 {
				if err != nil || st != 200 || len(slept) != 1 {
					t.Fatalf("status %d, err %v, slept %v; want 200 after one wait", st, err, slept)
				}
				return
			}
			var re *RetryError
			if !errors.Is(err, ErrPastDeadline) || !errors.As(err, &re) || re.LastStatus != 429 {
				t.Fatalf("err = %v; want ErrPastDeadline after a 429", err)
			}
			if !strings.Contains(err.Error(), "wait 5") || len(slept) != 0 || len(attempts) != 1 || !errors.Is(attempts[0].GiveUp, ErrPastDeadline) {
				t.Fatalf("err %q, slept %v, attempts %+v; want the wait named, no sleep, one attempt giving up", err, slept, attempts)
			}
		})
	}
}
