package httpfleet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/stampede-dev/stampede/hoststat"
	"github.com/stampede-dev/stampede/httpretry"
	"github.com/stampede-dev/stampede/internal/redact"
	"github.com/stampede-dev/stampede/results"
)

// Result is what a run measured.
type Result struct {
	// Summary is the summary.json "http" object.
	Summary results.HTTP
	// Timeline counts attempts per 100 ms by answer.
	Timeline results.HTTPTimeline
	// Latency (from each logical request's scheduled send to its end) and
	// AttemptLatency (each attempt) are in microseconds.
	Latency, AttemptLatency *hdrhistogram.Histogram
	// Start is when the schedule began; Elapsed how long the run lasted,
	// grace included.
	Start   time.Time
	Elapsed time.Duration
	// Machine is how busy the machine was while the fleet ran, this
	// process apart (hoststat.Sampler.Machine); nil when not read.
	Machine *results.MachineLoad
	// Interrupted says the run's context was cancelled before its end
	// (Ctrl-C): the figures cover what ran.
	Interrupted bool
}

// Outcome names of Summary.Outcomes besides status_NNN and the connection
// classes.
const (
	OutcomeOK         = "ok"
	OutcomeUnfinished = "unfinished"
	OutcomeDeadline   = "deadline"
)

// Run sends cfg's offered load for cfg.Duration and waits up to the grace
// period for the last requests: it ends by Duration plus Grace, whatever
// the rate. At most MaxInflight requests run at once. Cancelling
// ctx stops the schedule and every request (they are counted
// "unfinished"), and the Result covers what ran, Interrupted set.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	return drive(ctx, cfg, newMeter()), nil
}

// drive is Run of a checked cfg, with its defaults, counted by m.
func drive(ctx context.Context, cfg Config, m *meter) *Result {
	grace := cfg.Grace
	start := cfg.Now()
	m.mu.Lock()
	m.start = start
	m.mu.Unlock()
	reqCtx, cancel := context.WithDeadline(ctx, start.Add(cfg.Duration+grace))
	defer cancel()

	// The schedule ends at Duration by the clock too: a client behind
	// its schedule (the machine cannot keep up) stops there all the same.
	schedCtx, stopSched := context.WithDeadline(ctx, start.Add(cfg.Duration))
	defer stopSched()
	inflight := make(chan struct{}, cfg.MaxInflight)
	var clients sync.WaitGroup
	for i := range cfg.Clients {
		clients.Add(1)
		go func() {
			defer clients.Done()
			tr := newTransport(cfg)
			var requests sync.WaitGroup // this client's
			defer func() { requests.Wait(); tr.CloseIdleConnections() }()
			for k := 0; ; k++ {
				// Client i sends at (i + k·Clients)/R: the fleet's
				// sends are evenly spaced at rate R.
				at := time.Duration((float64(i) + float64(k)*float64(cfg.Clients)) / cfg.Rate * float64(time.Second))
				if at >= cfg.Duration || schedCtx.Err() != nil {
					return
				}
				if cfg.Sleep(schedCtx, start.Add(at).Sub(cfg.Now())) != nil {
					return
				}
				select { // at most MaxHTTPInflight requests at once
				case inflight <- struct{}{}:
				case <-schedCtx.Done():
					return
				}
				requests.Add(1)
				go func() {
					defer func() { <-inflight; requests.Done() }()
					m.send(reqCtx, cfg, tr, uint64(i), uint64(k), start.Add(at))
				}()
			}
		}()
	}
	load := sampleMachine()
	waitClients(&clients, reqCtx)
	m.close() // a request still running now is counted unfinished
	res := m.result(cfg, cfg.Now().Sub(start))
	res.Machine = load()
	res.Interrupted = ctx.Err() != nil
	return res
}

// settleTimeout is how long Run waits, once its requests are cancelled
// (the grace period is over, or Ctrl-C), for them to return before it
// counts them unfinished and ends.
const settleTimeout = 300 * time.Millisecond

// waitClients waits for the clients, and no longer than settleTimeout
// after reqCtx ends: a dial or a response that ignores its context does
// not hold the run past its end.
func waitClients(clients *sync.WaitGroup, reqCtx context.Context) {
	done := make(chan struct{})
	go func() { clients.Wait(); close(done) }()
	select {
	case <-done:
		return
	case <-reqCtx.Done():
	}
	t := time.NewTimer(settleTimeout)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// sampleMachine samples the machine's load, this process's CPU apart,
// once a second until the returned function is called; that function
// takes the last sample and returns the load.
func sampleMachine() func() *results.MachineLoad {
	s := hoststat.NewSampler(time.Second, func() map[string][]int32 {
		return map[string][]int32{results.RoleCoordinator: {int32(os.Getpid())}}
	})
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	return func() *results.MachineLoad {
		stop()
		<-done // Run's last sample
		return s.Machine()
	}
}

// newTransport is one client's connections: keep-alive, HTTP/2 when a
// TLS server offers it.
func newTransport(cfg Config) *http.Transport {
	d := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Transport{
		DialContext:       d.DialContext,
		ForceAttemptHTTP2: true,
		// Each transport gets its own copy: setting up HTTP/2 writes
		// "h2" into the config's NextProtos, a race between clients
		// sharing one.
		TLSClientConfig:     cfg.TLS.Clone(),
		MaxIdleConnsPerHost: 8,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 5 * time.Second,
	}
}

// meter gathers the figures of every request under one lock.
type meter struct {
	mu       sync.Mutex
	closed   bool // the run ended: later figures are not counted
	start    time.Time
	sum      results.HTTP
	timeline results.HTTPTimeline
	lat      *hdrhistogram.Histogram
	att      *hdrhistogram.Histogram
}

func newMeter() *meter {
	return &meter{
		sum: results.HTTP{Statuses: map[string]uint64{}, Outcomes: map[string]uint64{}},
		lat: results.NewHistogram(), att: results.NewHistogram(),
	}
}

// send runs logical request k of client c, scheduled at sched.
func (m *meter) send(ctx context.Context, cfg Config, tr http.RoundTripper, c, k uint64, sched time.Time) {
	rctx := ctx
	if cfg.Deadline > 0 {
		var cancel context.CancelFunc
		rctx, cancel = context.WithDeadline(ctx, sched.Add(cfg.Deadline))
		defer cancel()
	}
	req, err := newRequest(rctx, cfg, c, k)
	if err != nil {
		return // Validate checked the URL and the method is a token
	}
	rc := cfg.Retry
	// Each logical request draws its own jitter and hint spread.
	rc.Client = c<<32 | k
	rc.Base = tr
	var prevEnd time.Time
	var prevHint time.Duration
	rc.OnAttempt = func(a httpretry.Attempt) {
		early := a.N > 1 && prevHint > 0 && a.Start.Sub(prevEnd) < prevHint
		prevEnd, prevHint = a.Start.Add(a.Took), 0
		if a.Retried() {
			prevHint = a.RetryAfter
		}
		m.attempt(a, early)
	}
	client, err := httpretry.New(rc)
	if err != nil {
		return // Validate checked Retry
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	m.sum.Requests++
	m.mu.Unlock()
	resp, err := client.Do(req)
	if err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	m.done(outcomeOf(ctx, rctx, cfg, sched, resp, err), cfg.Now().Sub(sched), err)
}

// newRequest is logical request k of client c: the configured method,
// URL, body and headers, the URL's user info as Basic authentication (what
// http.Client does and a bare Transport does not), and its idempotency key
// when the fleet draws them.
func newRequest(ctx context.Context, cfg Config, c, k uint64) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, cfg.method(), cfg.URL, bodyOf(cfg.Body))
	if err != nil {
		return nil, err
	}
	for name, vs := range cfg.Header {
		req.Header[name] = append([]string(nil), vs...)
	}
	if u := req.URL.User; u != nil && req.Header.Get("Authorization") == "" {
		p, _ := u.Password()
		req.SetBasicAuth(u.Username(), p)
	}
	if cfg.Host != "" {
		req.Host = cfg.Host
	}
	if cfg.AutoIdempotencyKey {
		req.Header.Set("Idempotency-Key", fmt.Sprintf("%x-%d-%d", cfg.Retry.Seed, c, k))
	}
	return req, nil
}

// outcomeOf names how a logical request ended: OutcomeOK, a final status,
// OutcomeDeadline (its own deadline), OutcomeUnfinished (the run's end or
// grace came first) or the last attempt's failure class. rctx is the
// request's context, ctx the run's.
func outcomeOf(ctx, rctx context.Context, cfg Config, sched time.Time, resp *http.Response, err error) string {
	var rerr *httpretry.RetryError
	switch {
	case err == nil:
		if resp.StatusCode/100 != 2 {
			return "status_" + strconv.Itoa(resp.StatusCode)
		}
		return OutcomeOK
	case ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)):
		return OutcomeUnfinished
	case errors.Is(err, httpretry.ErrPastDeadline) && !ownDeadline(ctx, cfg, sched):
		// The next wait would outlast the run's grace period, not a
		// deadline of the request's own.
		return OutcomeUnfinished
	case errors.Is(err, httpretry.ErrPastDeadline) || (rctx.Err() != nil && errors.Is(err, context.DeadlineExceeded)):
		return OutcomeDeadline
	case errors.As(err, &rerr) && rerr.LastStatus != 0:
		return "status_" + strconv.Itoa(rerr.LastStatus)
	case errors.As(err, &rerr) && len(rerr.Attempts) > 0:
		return rerr.Attempts[len(rerr.Attempts)-1].Class.String()
	}
	return "error"
}

// done counts a logical request that ended with outcome after took, err
// its error; nothing once the meter is closed (close counted it
// unfinished).
func (m *meter) done(outcome string, took time.Duration, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	m.sum.Outcomes[outcome]++
	if outcome == OutcomeOK {
		m.sum.Succeeded++
	}
	if outcome != OutcomeUnfinished {
		results.RecordLatency(m.lat, took)
	}
	if errors.Is(err, httpretry.ErrRetriesExhausted) || errors.Is(err, httpretry.ErrRetryAfterTooLong) || outcome == OutcomeDeadline {
		m.sum.Abandoned++
	}
	if errors.Is(err, httpretry.ErrUnsafeMethod) {
		m.sum.NotRetriedUnsafe++
	}
}

// ownDeadline reports whether the request scheduled at sched has a
// deadline (cfg.Deadline) of its own that comes before the run's end.
func ownDeadline(run context.Context, cfg Config, sched time.Time) bool {
	if cfg.Deadline <= 0 {
		return false
	}
	end, ok := run.Deadline()
	return !ok || sched.Add(cfg.Deadline).Before(end)
}

// attempt counts one attempt.
func (m *meter) attempt(a httpretry.Attempt, early bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	s := &m.sum
	s.Attempts++
	what := a.Class.String()
	if a.Status != 0 {
		what = strconv.Itoa(a.Status)
	}
	s.Statuses[what]++
	if a.RetryAfter > 0 || a.BadRetryAfter != "" {
		s.RetryAfterSeen++
	}
	if a.Why == httpretry.WhyRetryAfter && a.GiveUp == nil {
		s.RetryAfterHonoured++
	}
	if early {
		s.EarlyRetries++
	}
	m.timeline.Add(a.Start.Sub(m.start), a.Status)
	results.RecordLatency(m.att, a.Took)
}

// close ends the counting: a request sent but not ended is counted
// unfinished, and nothing after is counted.
func (m *meter) close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	var ended uint64
	for _, n := range m.sum.Outcomes {
		ended += n
	}
	if ended < m.sum.Requests {
		m.sum.Outcomes[OutcomeUnfinished] += m.sum.Requests - ended
	}
}

// result fills the derived figures.
func (m *meter) result(cfg Config, elapsed time.Duration) *Result {
	m.mu.Lock()
	defer m.mu.Unlock()
	// Per second of the whole run, retries' tail included: over
	// --duration alone a limiter's 100/s would read as more.
	s := derive(cfg, m.sum, &m.timeline, m.lat, m.att, max(elapsed, cfg.Duration))
	return &Result{Summary: s, Timeline: m.timeline, Latency: m.lat, AttemptLatency: m.att, Start: m.start, Elapsed: elapsed}
}

// derive is s with its derived figures filled from the timeline tl and
// the latencies lat and att, goodput per second over the time over.
func derive(cfg Config, s results.HTTP, tl *results.HTTPTimeline, lat, att *hdrhistogram.Histogram, over time.Duration) results.HTTP {
	s.URL, s.Method = redact.URLWith(cfg.URL, cfg.SecretHeaders), cfg.method()
	s.Policy = httpretry.DefaultPolicy.String()
	if cfg.Retry.Policy != nil {
		s.Policy = cfg.Retry.Policy.String()
	}
	s.RetryAfter = !cfg.Retry.IgnoreRetryAfter
	s.OfferedPerS = cfg.Rate
	if cfg.Deadline > 0 {
		d := cfg.Deadline.Seconds()
		s.DeadlineS = &d
	}
	if over > 0 {
		s.GoodputPerS = float64(s.Succeeded) / over.Seconds()
	}
	if s.Requests > 0 {
		s.Amplification = float64(s.Attempts) / float64(s.Requests)
	}
	s.LatencyMS = results.Percentiles(lat)
	s.AttemptLatencyMS = results.Percentiles(att)
	s.PeakRejectedPer100ms = tl.PeakRejected()
	return s
}

// bodyOf returns a reader NewRequest can replay (it sets GetBody), or nil.
func bodyOf(b []byte) io.Reader {
	if b == nil {
		return nil
	}
	return bytes.NewReader(b)
}
