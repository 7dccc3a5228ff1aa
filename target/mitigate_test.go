package target

import (
	"math"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/internal/wstest"
	"github.com/stampede-dev/stampede/spec"
)

// gateRate is the rate the server's gate paces at, at t.
func gateRate(s *Server, t time.Time) float64 {
	s.gate.mu.Lock()
	defer s.gate.mu.Unlock()
	return s.gate.rateLocked(t)
}

// The admission ramp on the injected clock: from the instant the server
// began accepting (after its Hold, ended early here by a Stall(0)) the
// rate rises from AdmitFloor to AcceptRate over AdmitRamp; a chaos
// accept-rate change replaces the rate it rises to.
func TestAdmitRampRate(t *testing.T) {
	clk := newFakeClock()
	s := startServer(t, Config{Server: spec.Server{AcceptRate: 100, AdmitRamp: 10 * time.Second, Hold: time.Hour}, Clock: clk})
	clk.Advance(3 * time.Second)
	if err := s.Stall(0); err != nil {
		t.Fatal(err)
	}
	waitReady(t, s)
	t0 := s.ReadyAt()
	if want := clk.Now(); !t0.Equal(want) {
		t.Fatalf("ready at %v; want %v", t0, want)
	}
	for _, tc := range []struct {
		at   time.Duration
		want float64
	}{
		{-time.Second, 10}, // the default floor, a tenth of the rate
		{0, 10},
		{5 * time.Second, 55},
		{10 * time.Second, 100},
		{time.Hour, 100},
	} {
		if got := gateRate(s, t0.Add(tc.at)); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("rate at ready%+v = %v; want %v", tc.at, got, tc.want)
		}
	}
	if err := s.SetAcceptRate(50); err != nil {
		t.Fatal(err)
	}
	if got := gateRate(s, t0.Add(5*time.Second)); math.Abs(got-30) > 1e-9 {
		t.Errorf("after SetAcceptRate(50): rate at ready+5s = %v; want 30", got)
	}
	if err := s.SetAcceptRate(4); err != nil { // below the floor
		t.Fatal(err)
	}
	if got := gateRate(s, t0); got != 4 {
		t.Errorf("after SetAcceptRate(4): rate at ready = %v; want 4", got)
	}
}

// A StartReject window admits nobody: the ramp starts at its end.
func TestAdmitRampAfterStartReject(t *testing.T) {
	clk := newFakeClock()
	s := startServer(t, Config{Server: spec.Server{AcceptRate: 100, AdmitRamp: 10 * time.Second, AdmitFloor: 20,
		StartReject: &Rejection{Status: 503, RetryAfter: time.Second, For: 4 * time.Second}}, Clock: clk})
	waitReady(t, s)
	t0 := s.ReadyAt()
	if got := gateRate(s, t0.Add(4*time.Second)); got != 20 {
		t.Errorf("rate at the window's end = %v; want the floor 20", got)
	}
	if got := gateRate(s, t0.Add(9*time.Second)); got != 60 {
		t.Errorf("rate 5s after the window = %v; want 60", got)
	}
}

// The ramp's tokens are the exact integral of its rate, and the gate
// accepts at the floor first: on the fake clock, a ramp from 10/s admits
// one accept per 100 ms of clock at its start.
func TestAdmitRampBucket(t *testing.T) {
	t0 := time.Unix(1000, 0)
	r := ramp{start: t0, d: 10 * time.Second, floor: 10}
	for _, tc := range []struct {
		a, b time.Duration
		want float64
	}{
		{-2 * time.Second, 0, 20},                  // the floor before the start
		{0, 10 * time.Second, 550},                 // (10+100)/2 * 10 s
		{5 * time.Second, 15 * time.Second, 887.5}, // (55+100)/2*5 + 100*5
		{10 * time.Second, 11 * time.Second, 100},
	} {
		if got := r.tokens(t0.Add(tc.a), t0.Add(tc.b), 100); math.Abs(got-tc.want) > 1e-6 {
			t.Errorf("tokens over [%v, %v] = %v; want %v", tc.a, tc.b, got, tc.want)
		}
	}

	clk := newFakeClock()
	s := startServer(t, Config{Server: spec.Server{AcceptRate: 1000, AdmitRamp: time.Hour, AdmitFloor: 10, Backlog: 16}, Clock: clk})
	waitReady(t, s)
	addr := s.Addr().String()
	for range 6 {
		if dialTCP(t, addr, 1, 2*time.Second) != 1 {
			t.Fatal("dial failed")
		}
	}
	// The burst of the floor (1) at once, then one per 100 ms: an
	// unramped gate at 1000/s would take all six at once.
	for i, want := range []uint64{1, 2, 3} {
		if i > 0 {
			clk.Advance(100 * time.Millisecond)
		}
		eventually(t, "accepts at the floor", func() bool {
			return s.Stats().Accepted == want && clk.Waiters() == 1
		})
	}
}

// With real sockets: a ramped target takes a burst of connects more
// slowly in its first moments than an unramped one.
func TestAdmitRampSockets(t *testing.T) {
	const n = 40
	plain := startServer(t, Config{Server: spec.Server{AcceptRate: 200, Backlog: 64}})
	ramped := startServer(t, Config{Server: spec.Server{AcceptRate: 200, Backlog: 64, AdmitRamp: time.Minute, AdmitFloor: 2}})
	waitReady(t, plain)
	waitReady(t, ramped)
	var wg sync.WaitGroup
	for _, s := range []*Server{plain, ramped} {
		wg.Go(func() { dialTCP(t, s.Addr().String(), n, 5*time.Second) })
	}
	eventually(t, "the unramped target accepts all", func() bool { return plain.Stats().Accepted == n })
	// Within the first seconds the ramp (2/s, rising 3.3/s each second)
	// has admitted a handful.
	if got := ramped.Stats().Accepted; got >= n/2 {
		t.Errorf("ramped target accepted %d of %d while the unramped one took all; want under %d", got, n, n/2)
	}
	wg.Wait()
}

// Shedding: a burst of upgrades at a low accept rate is accepted at once
// (not paced), admitted as far as the admission bucket allows (on the
// fake clock, its one token) and the rest answered 503 with Retry-After
// in 1..Shed seconds; Stats counts the shed, and a shed client that comes
// back before its Retry-After is an early retry.
func TestShed(t *testing.T) {
	const n = 60
	clk := newFakeClock()
	s := startServer(t, Config{Server: spec.Server{AcceptRate: 5, Shed: 3 * time.Second, Backlog: 128}, Clock: clk, Seed: 7})
	waitReady(t, s)
	results := make([]dialResult, n)
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() { results[i] = dialWS(s.URL(), "c"+strconv.Itoa(i)) })
	}
	wg.Wait()
	ok, shed := 0, 0
	seen := map[string]bool{}
	var shedID string
	for i, r := range results {
		switch {
		case r.err == nil:
			ok++
			r.conn.Close()
		case r.status == 503:
			shed++
			k, err := strconv.Atoi(r.retryAfter)
			if err != nil || k < 1 || k > 3 {
				t.Errorf("client %d: Retry-After %q; want 1..3", i, r.retryAfter)
			}
			seen[r.retryAfter] = true
			shedID = "c" + strconv.Itoa(i)
		default:
			t.Fatalf("client %d: %v", i, r.err)
		}
	}
	if ok != 1 || shed != n-1 {
		t.Fatalf("%d upgraded and %d shed; want 1 and %d", ok, shed, n-1)
	}
	if len(seen) < 2 {
		t.Errorf("every Retry-After was one of %v; want them drawn over 1..3", seen)
	}
	st := s.Stats()
	if st.UpgradesShed != n-1 || st.UpgradesRejected != n-1 || st.UpgradesOK != 1 || st.Accepted != n {
		t.Fatalf("stats %+v; want %d shed and rejected, 1 ok, %d accepted", st, n-1, n)
	}
	// Back at once, before any Retry-After: an early retry, shed again
	// (the clock has not refilled the bucket).
	if r := dialWS(s.URL(), shedID); r.status != 503 {
		t.Fatalf("retry: %v; want 503", r.err)
	}
	if st := s.Stats(); st.EarlyRetries != 1 {
		t.Fatalf("early retries %d; want 1", st.EarlyRetries)
	}
	// A second of clock buys 5 admissions.
	clk.Advance(time.Second)
	if r := dialWS(s.URL(), "late"); r.err != nil {
		t.Fatalf("after a second: %v", r.err)
	}
}

// A graceful shutdown with spread and hint: the listener closes at once,
// every client gets 1013 with a parseable delay in [after, after+hint],
// and the close frames are spread: the last comes at least half the
// spread after the first.
func TestShutdownSpreadHint(t *testing.T) {
	const spread, after, hint = 600 * time.Millisecond, time.Second, 2 * time.Second
	s := startServer(t, Config{Seed: 1})
	waitReady(t, s)
	var conns []net.Conn
	for range 8 {
		conns = append(conns, mustDial(t, s.URL()))
	}
	eventually(t, "8 conns", func() bool { return s.Stats().Conns == 8 })
	if err := s.ShutdownWith(ShutdownOptions{Mode: Abrupt, Spread: spread}); err == nil {
		t.Fatal("an abrupt shutdown with a spread was taken")
	}
	done := make(chan []wstest.CloseSeen)
	go func() { done <- readCloses(conns) }()
	go s.ShutdownWith(ShutdownOptions{Mode: Graceful, Spread: spread, HintAfter: after, Hint: hint})
	eventually(t, "the listener closed", func() bool {
		c, err := net.Dial("tcp", s.Addr().String())
		if err == nil {
			c.Close()
		}
		return err != nil
	})
	seen := <-done
	first, last := checkHinted(t, seen, after, hint)
	if d := last.Sub(first); d < spread/2 {
		t.Fatalf("closes came within %v; want them spread over %v (at least half)", d, spread)
	}
	<-s.Done()
}
