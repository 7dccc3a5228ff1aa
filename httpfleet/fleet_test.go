package httpfleet

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/httpretry"
	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/results/folder"
	"github.com/stampede-dev/stampede/spec"
)

// bucket is a token bucket: rate tokens per second, up to burst.
type bucket struct {
	mu     sync.Mutex
	rate   float64
	burst  float64
	tokens float64
	last   time.Time
}

func (b *bucket) take() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	if !b.last.IsZero() {
		b.tokens = min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
	}
	b.last = now
	if b.tokens >= 1 {
		b.tokens--
		return true
	}
	return false
}

// limited starts a loopback server answering 200 within a token bucket of
// 20/s and 429 with Retry-After: 1 above it.
func limited(t *testing.T) string {
	b := &bucket{rate: 20, burst: 5, tokens: 5}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !b.take() {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.Write([]byte("ok"))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func run(t *testing.T, cfg Config) *Result {
	t.Helper()
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := res.Summary
	t.Logf("requests %d attempts %d ok %d goodput %.2f/s amplification %.2f statuses %v outcomes %v ra seen %d honoured %d early %d abandoned %d unsafe %d",
		s.Requests, s.Attempts, s.Succeeded, s.GoodputPerS, s.Amplification, s.Statuses, s.Outcomes,
		s.RetryAfterSeen, s.RetryAfterHonoured, s.EarlyRetries, s.Abandoned, s.NotRetriedUnsafe)
	var sum uint64
	for _, n := range s.Outcomes {
		sum += n
	}
	if sum != s.Requests {
		t.Errorf("outcomes add up to %d, want the %d requests", sum, s.Requests)
	}
	return res
}

// TestRetryAfterHonoured runs a fleet over a 20/s token bucket that
// answers 429 with Retry-After: 1: honouring the hint gives no early
// retry, ignoring it (waits of 50 ms by policy) gives some; both keep a
// goodput and retry.
func TestRetryAfterHonoured(t *testing.T) {
	short := backoff.Policy{Kind: backoff.Exp, Initial: 50 * time.Millisecond, Multiplier: 1, Max: 50 * time.Millisecond}
	for _, tc := range []struct {
		name   string
		ignore bool
	}{{"honoured", false}, {"ignored", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := run(t, Config{URL: limited(t), HTTPFleet: spec.HTTPFleet{Clients: 20, Rate: 60, Duration: 1500 * time.Millisecond},
				Retry: httpretry.Config{MaxRetries: 2, Policy: &short, IgnoreRetryAfter: tc.ignore, Seed: 7}})
			s := res.Summary
			if s.GoodputPerS <= 0 || s.Statuses["429"] == 0 || s.RetryAfterSeen == 0 {
				t.Fatalf("want some 2xx and some 429 with Retry-After, got %+v", s)
			}
			// The bucket lets through at most 5 + 20/s: goodput, per second
			// of the whole run, cannot read above that.
			if limit := 20 + 5/res.Elapsed.Seconds(); s.GoodputPerS > limit {
				t.Errorf("goodput %.2f/s above the limiter's %.2f/s over %s", s.GoodputPerS, limit, res.Elapsed)
			}
			if want := float64(s.Attempts) / float64(s.Requests); s.Amplification != want || s.Amplification <= 1 {
				t.Errorf("amplification %v, want attempts/requests = %v > 1", s.Amplification, want)
			}
			if tc.ignore {
				if s.EarlyRetries == 0 || s.RetryAfterHonoured != 0 {
					t.Errorf("ignoring Retry-After: early retries %d, honoured %d; want > 0 and 0", s.EarlyRetries, s.RetryAfterHonoured)
				}
			} else if s.EarlyRetries != 0 || s.RetryAfterHonoured == 0 {
				t.Errorf("honouring Retry-After: early retries %d, honoured %d; want 0 and > 0", s.EarlyRetries, s.RetryAfterHonoured)
			}
			if res.Latency.TotalCount() != int64(s.Requests-s.Outcomes[OutcomeUnfinished]) || res.AttemptLatency.TotalCount() != int64(s.Attempts) {
				t.Errorf("histograms hold %d and %d values", res.Latency.TotalCount(), res.AttemptLatency.TotalCount())
			}
		})
	}
}

// TestDeadline: with a deadline shorter than the server's Retry-After, a
// fleet that honours the hint makes no retry at all (each 429 is given up
// at once as "deadline": the retry could not happen in time), while one
// that ignores it retries by its 50 ms policy within the same deadline.
func TestDeadline(t *testing.T) {
	short := backoff.Policy{Kind: backoff.Exp, Initial: 50 * time.Millisecond, Multiplier: 1, Max: 50 * time.Millisecond}
	for _, tc := range []struct {
		name   string
		ignore bool
	}{{"honoured", false}, {"ignored", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := run(t, Config{URL: limited(t), HTTPFleet: spec.HTTPFleet{Clients: 20, Rate: 60, Duration: 1500 * time.Millisecond, Deadline: 800 * time.Millisecond},
				Retry: httpretry.Config{MaxRetries: 3, Policy: &short, IgnoreRetryAfter: tc.ignore, Seed: 7}})
			s := res.Summary
			if s.DeadlineS == nil || *s.DeadlineS != 0.8 {
				t.Errorf("deadline_s %v; want 0.8", s.DeadlineS)
			}
			if s.Statuses["429"] == 0 || s.Succeeded == 0 {
				t.Fatalf("want some 2xx and some 429, got %+v", s)
			}
			if tc.ignore {
				if s.Amplification <= 1 || s.EarlyRetries == 0 {
					t.Errorf("ignoring Retry-After: amplification %v, early retries %d; want > 1 and > 0", s.Amplification, s.EarlyRetries)
				}
				return
			}
			if s.Attempts != s.Requests || s.RetryAfterHonoured != 0 || s.EarlyRetries != 0 {
				t.Errorf("honouring a 1 s Retry-After with 800 ms to live: attempts %d for %d requests, honoured %d, early %d; want no retry",
					s.Attempts, s.Requests, s.RetryAfterHonoured, s.EarlyRetries)
			}
			if d := s.Outcomes[OutcomeDeadline]; d != s.Statuses["429"] || s.Abandoned != d {
				t.Errorf("outcomes %v, abandoned %d; want every 429 given up as %q and counted abandoned", s.Outcomes, s.Abandoned, OutcomeDeadline)
			}
		})
	}
}

// TestGraceIsNotADeadline: without --deadline, a retry whose wait would
// outlast the run's grace period is not made either, but the request is
// "unfinished" (the run ended), not a "deadline" outcome nor abandoned.
func TestGraceIsNotADeadline(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "2")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	t.Cleanup(srv.Close)
	res := run(t, Config{URL: srv.URL, HTTPFleet: spec.HTTPFleet{Clients: 2, Rate: 10, Duration: 300 * time.Millisecond, Grace: 500 * time.Millisecond}})
	s := res.Summary
	if s.Requests == 0 || s.Outcomes[OutcomeUnfinished] != s.Requests || s.Abandoned != 0 || s.DeadlineS != nil {
		t.Errorf("requests %d, outcomes %v, abandoned %d, deadline_s %v; want all unfinished, none abandoned, no deadline",
			s.Requests, s.Outcomes, s.Abandoned, s.DeadlineS)
	}
}

// TestOverloaded529 is the overloaded-server case: every client's
// first request gets 529 with Retry-After: 2. No retry may come sooner
// than 2 s after a 529 (checked at the server: the k-th earliest retry
// against the k-th earliest 529), and the retries are spread: at most a
// third of the clients in one 100 ms window.
func TestOverloaded529(t *testing.T) {
	const clients = 60
	var mu sync.Mutex
	var first time.Time
	var rejected, retries []time.Time
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		now := time.Now()
		if first.IsZero() {
			first = now
		}
		reject := now.Sub(first) < time.Second
		if reject {
			rejected = append(rejected, now)
		} else {
			retries = append(retries, now)
		}
		mu.Unlock()
		if reject {
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(httpretry.StatusOverloaded)
			return
		}
		w.Write([]byte("ok"))
	}))
	t.Cleanup(srv.Close)
	// One request per client, all scheduled within the first 600 ms.
	res := run(t, Config{URL: srv.URL, HTTPFleet: spec.HTTPFleet{Clients: clients, Rate: clients / 0.6, Duration: 600 * time.Millisecond},
		Retry: httpretry.Config{Seed: 3}})
	s := res.Summary
	mu.Lock()
	defer mu.Unlock()
	if len(rejected) != clients || len(retries) != clients || s.Succeeded != clients {
		t.Fatalf("server rejected %d, then saw %d retries, %d succeeded; want %d each", len(rejected), len(retries), s.Succeeded, clients)
	}
	slices.SortFunc(rejected, func(a, b time.Time) int { return a.Compare(b) })
	slices.SortFunc(retries, func(a, b time.Time) int { return a.Compare(b) })
	for k := range retries {
		if gap := retries[k].Sub(rejected[k]); gap < 2*time.Second {
			t.Errorf("retry %d came %s after 529 %d: sooner than the 2 s asked", k, gap, k)
		}
	}
	peak := map[int64]int{}
	for _, at := range retries {
		peak[int64(at.Sub(first)/(100*time.Millisecond))]++
	}
	t.Logf("retries per 100 ms: %v", peak)
	for w, n := range peak {
		if n > clients/3 {
			t.Errorf("%d retries in the 100 ms from %d ms: more than a third of the %d clients", n, w*100, clients)
		}
	}
	if s.EarlyRetries != 0 || s.RetryAfterHonoured != clients || s.Statuses["529"] != clients {
		t.Errorf("early %d, honoured %d, 529s %d; want 0, %d, %d", s.EarlyRetries, s.RetryAfterHonoured, s.Statuses["529"], clients, clients)
	}
}

// TestPostIdempotency: a POST without an Idempotency-Key is never
// retried, and is counted not_retried_unsafe; with AutoIdempotencyKey
// each logical request keeps its key across retries (the server rejects
// a key's first sight and accepts its second), and no key succeeds twice.
func TestPostIdempotency(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	ok := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("Idempotency-Key")
		mu.Lock()
		seen[key]++
		first := seen[key] == 1 || key == ""
		if !first {
			ok[key]++
		}
		mu.Unlock()
		if first {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ok"))
	}))
	t.Cleanup(srv.Close)
	fast := backoff.Policy{Kind: backoff.Exp, Initial: 10 * time.Millisecond, Multiplier: 1, Max: 10 * time.Millisecond}
	cfg := Config{URL: srv.URL, Method: http.MethodPost, Body: []byte(`{"n":1}`), HTTPFleet: spec.HTTPFleet{Clients: 10, Rate: 50, Duration: 400 * time.Millisecond},
		Retry: httpretry.Config{Policy: &fast}}

	s := run(t, cfg).Summary
	if s.Requests == 0 || s.NotRetriedUnsafe != s.Requests || s.Attempts != s.Requests || s.Outcomes["status_503"] != s.Requests {
		t.Errorf("without a key: %d requests, %d attempts, %d not_retried_unsafe; want one attempt each, all counted", s.Requests, s.Attempts, s.NotRetriedUnsafe)
	}

	cfg.AutoIdempotencyKey = true
	s = run(t, cfg).Summary
	mu.Lock()
	defer mu.Unlock()
	if s.NotRetriedUnsafe != 0 || s.Succeeded != s.Requests || s.Attempts != 2*s.Requests {
		t.Errorf("with auto keys: %d of %d succeeded in %d attempts, %d unsafe; want all in 2 attempts each", s.Succeeded, s.Requests, s.Attempts, s.NotRetriedUnsafe)
	}
	if uint64(len(ok)) != s.Requests {
		t.Errorf("%d keys succeeded, want one per request (%d)", len(ok), s.Requests)
	}
	for k, n := range ok {
		if n > 1 {
			t.Errorf("key %s succeeded %d times", k, n)
		}
	}
}

// TestClosedPort: every request against a port nothing listens on ends
// refused, and nothing succeeds.
func TestClosedPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	res := run(t, Config{URL: "http://" + addr + "/", HTTPFleet: spec.HTTPFleet{Clients: 5, Rate: 20, Duration: 300 * time.Millisecond},
		Retry: httpretry.Config{MaxRetries: -1}})
	s := res.Summary
	if s.Requests == 0 || s.Outcomes["refused"] != s.Requests || s.Succeeded != 0 || s.GoodputPerS != 0 {
		t.Errorf("closed port: %d requests, outcomes %v, goodput %v; want all refused", s.Requests, s.Outcomes, s.GoodputPerS)
	}
	dir := t.TempDir()
	cfg := Config{URL: "http://" + addr + "/", HTTPFleet: spec.HTTPFleet{Clients: 5}}
	sum := Summarize(cfg, res, nil)
	// The machine's load while the fleet ran: at least the first and the
	// last sample, on this machine's cores.
	if m := sum.Machine; m == nil || m.Samples < 2 || m.Cores < 1 {
		t.Errorf("machine %+v", m)
	}
	if err := WriteResults(dir, cfg, res, sum); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{folder.SummaryFile, results.HTTPTimelineFile, results.HTTPLatencyLogFile, results.HTTPAttemptLogFile, "report.html"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// TestValidate names the bad field.
func TestValidate(t *testing.T) {
	good := Config{URL: "http://127.0.0.1:1/", HTTPFleet: spec.HTTPFleet{Clients: 1, Rate: 1, Duration: time.Second}}
	for _, tc := range []struct {
		field string
		edit  func(*Config)
	}{
		{"HTTP.URL", func(c *Config) { c.URL = "ftp://x" }},
		{"HTTPFleet.Clients", func(c *Config) { c.Clients = 0 }},
		{"HTTPFleet.Rate", func(c *Config) { c.Rate = -1 }},
		{"HTTPFleet.Rate", func(c *Config) { c.Rate = 1e12 }}, // no clock spaces its sends
		{"HTTPFleet.Duration", func(c *Config) { c.Duration = -1 }},
		{"HTTPFleet.Grace", func(c *Config) { c.Grace = -1 }},
	} {
		c := good
		tc.edit(&c)
		err := c.Validate()
		ce, ok := err.(*spec.FieldError)
		if !ok || ce.Field != tc.field {
			t.Errorf("%s: got %v", tc.field, err)
		}
	}
	if err := good.Validate(); err != nil {
		t.Errorf("good config: %v", err)
	}
}

// TestHTTP2OverTLS: against a TLS server offering HTTP/2 the fleet's
// requests go over HTTP/2; over plain HTTP they are HTTP/1.1.
func TestHTTP2OverTLS(t *testing.T) {
	for _, tc := range []struct {
		name  string
		tls   bool
		proto int
	}{{"tls", true, 2}, {"plain", false, 1}} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			protos := map[int]int{}
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				protos[r.ProtoMajor]++
				mu.Unlock()
			}))
			cfg := Config{HTTPFleet: spec.HTTPFleet{Clients: 3, Rate: 30, Duration: 200 * time.Millisecond}}
			if tc.tls {
				srv.EnableHTTP2 = true
				srv.StartTLS()
				cfg.TLS = srv.Client().Transport.(*http.Transport).TLSClientConfig
			} else {
				srv.Start()
			}
			t.Cleanup(srv.Close)
			cfg.URL = srv.URL
			s := run(t, cfg).Summary
			mu.Lock()
			defer mu.Unlock()
			if s.Succeeded == 0 || protos[tc.proto] != int(s.Succeeded) {
				t.Errorf("server saw protocols %v for %d successes; want all HTTP/%d", protos, s.Succeeded, tc.proto)
			}
		})
	}
}

// TestInterrupted: a run whose context is cancelled stops its schedule
// and its requests at once, and says so; what ran is counted, every
// request sent but not ended as unfinished.
func TestInterrupted(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select { // half the requests outlast the interruption
		case <-r.Context().Done():
		case <-time.After(time.Duration(len(r.URL.Path)%2) * 10 * time.Second):
		}
	}))
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	began := time.Now()
	res, err := Run(ctx, Config{URL: srv.URL + "/", HTTPFleet: spec.HTTPFleet{Clients: 5, Rate: 20, Duration: 10 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("Run took %s after its context was cancelled at 300ms", took)
	}
	s := res.Summary
	if !res.Interrupted || s.Requests == 0 || s.Outcomes[OutcomeUnfinished] == 0 {
		t.Errorf("interrupted %v, requests %d, outcomes %v; want an interrupted run with unfinished requests", res.Interrupted, s.Requests, s.Outcomes)
	}
	if sum := Summarize(Config{URL: srv.URL, HTTPFleet: spec.HTTPFleet{Clients: 5}}, res, nil); !sum.Interrupted {
		t.Error("the summary is not marked interrupted")
	}
}

// TestInflightCapped: at the highest rate against a server that answers
// nothing in time, the fleet holds at most MaxInflight requests at once
// (a send due beyond waits; spec.MaxHTTPInflight by default, 200 here so
// both ends fit the test's descriptors), and ends at its duration and
// grace.
func TestInflightCapped(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	began := time.Now()
	const inflight = 200
	res, err := Run(context.Background(), Config{URL: srv.URL + "/", MaxInflight: inflight,
		HTTPFleet: spec.HTTPFleet{Clients: 5, Rate: spec.MaxHTTPRate, Duration: 500 * time.Millisecond, Grace: 200 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(began); took > 10*time.Second {
		t.Errorf("Run took %s: its duration and grace are 700ms", took)
	}
	if n := res.Summary.Requests; n == 0 || n > inflight {
		t.Errorf("%d requests sent, none answered: want 1..%d (the cap on requests in flight)", n, inflight)
	}
}
