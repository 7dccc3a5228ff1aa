package loadgen

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"golang.org/x/sys/unix"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/connerr"
	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/spec"
)

// fast is a reconnect policy for tests: 50 ms ± 50 %.
var fast = backoff.Policy{Kind: backoff.Fixed, Initial: 50 * time.Millisecond, Jitter: 0.5}

// totals sums a report's timeline.
func totals(rep *results.Report) results.Bucket {
	var b results.Bucket
	for i := range rep.Timeline {
		b.Add(&rep.Timeline[i])
	}
	return b
}

func upDown(rep *results.Report) (up, down int) {
	for _, tr := range rep.Transitions {
		if tr.Up {
			up++
		} else {
			down++
		}
	}
	return up, down
}

// TestHoldDropReconnect: a fleet connects and holds; the server drops every
// connection; every client comes back per the policy.
func TestHoldDropReconnect(t *testing.T) {
	const n = 300
	srv := newTestServer(t, false, nil)
	run := start(t, Config{Client: spec.Client{URL: srv.url, Clients: n, Policy: fast, Seed: 1, Reactors: 2}})
	waitFor(t, 20*time.Second, "all connected", func(s Stats) bool { return s.Connected == n }, run.f)

	srv.waitHeld(n)
	srv.ping() // answered by the reactor, must not disturb anything
	dropped := srv.dropAll()
	if dropped != n {
		t.Fatalf("server held %d connections, want %d", dropped, n)
	}
	waitFor(t, 20*time.Second, "all reconnected", func(s Stats) bool { return s.Successes == 2*n && s.Connected == n }, run.f)
	rep := run.stop(t)

	b := totals(rep)
	if b.Successes != 2*n || b.Disconnects[connerr.Closed1006] != n || b.DisconnectCount() != n {
		t.Errorf("successes %d, disconnects %v; want %d successes and %d closed_1006", b.Successes, b.Disconnects, 2*n, n)
	}
	if b.Attempts != b.Successes+b.FailureCount() {
		t.Errorf("attempts %d != successes %d + failures %d", b.Attempts, b.Successes, b.FailureCount())
	}
	if up, down := upDown(rep); up != 2*n || down != n {
		t.Errorf("transitions: %d up, %d down; want %d, %d", up, down, 2*n, n)
	}
	if got := rep.Connect.TotalCount(); got != 2*n {
		t.Errorf("connect latencies: %d, want %d", got, 2*n)
	}
	if got := rep.TTR.TotalCount(); got != n {
		t.Errorf("TTR samples: %d, want %d", got, n)
	}
	// fixed 50 ms ± 50 %: nobody comes back sooner than 25 ms.
	if min := time.Duration(rep.TTR.Min()) * time.Microsecond; min < 25*time.Millisecond {
		t.Errorf("fastest recovery %s is shorter than the policy allows", min)
	}
	if rep.Clients != n || rep.Processes != 1 || !rep.Start.Equal(run.f.cfg.Start) {
		t.Errorf("report clients %d processes %d start %s", rep.Clients, rep.Processes, rep.Start)
	}
}

// TestCloseClasses: a server that says goodbye with 1001 is told apart from
// one that just drops the connection (1006), and from other close codes.
func TestCloseClasses(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(*testServer)
		want connerr.Class
	}{
		{"graceful close 1001", func(s *testServer) { s.closeAll(ws.StatusGoingAway) }, connerr.Closed1001},
		{"abrupt drop", func(s *testServer) { s.dropAll() }, connerr.Closed1006},
		{"normal close 1000", func(s *testServer) { s.closeAll(ws.StatusNormalClosure) }, connerr.Protocol},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const n = 20
			srv := newTestServer(t, false, nil)
			run := start(t, Config{Client: spec.Client{URL: srv.url, Clients: n, Policy: fast}})
			waitFor(t, 10*time.Second, "all connected", func(s Stats) bool { return s.Connected == n }, run.f)
			srv.waitHeld(n)
			tc.end(srv)
			s := waitFor(t, 10*time.Second, "disconnects", func(s Stats) bool { return s.DisconnectCount() == n }, run.f)
			if s.Disconnects[tc.want] != n {
				t.Errorf("disconnects by class %v, want %d of %s", s.Disconnects, n, tc.want)
			}
			rep := run.stop(t)
			if got := totals(rep).Disconnects[tc.want]; got != n {
				t.Errorf("report: %d disconnects of %s, want %d", got, tc.want, n)
			}
		})
	}
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestRefusedRetries: connects to a closed port are refused, retried per the
// policy, and the clients stop when the attempts run out.
func TestRefusedRetries(t *testing.T) {
	const n, retries = 10, 3
	pol := backoff.Policy{Kind: backoff.Fixed, Initial: 10 * time.Millisecond, MaxAttempts: retries}
	run := start(t, Config{Client: spec.Client{URL: "ws://" + closedPort(t) + "/", Clients: n, Policy: pol}})
	waitFor(t, 10*time.Second, "all stopped", func(s Stats) bool { return s.StoppedCount() == n }, run.f)
	rep := run.stop(t)
	b := totals(rep)
	if b.Attempts != n*(1+retries) || b.Failures[connerr.Refused] != n*(1+retries) {
		t.Errorf("attempts %d, failures %v; want %d refused", b.Attempts, b.Failures, n*(1+retries))
	}
	st := rep.Stopped[results.AttemptsExhausted]
	if st.Count != n || !strings.Contains(st.LastError, "connection refused") || !strings.HasPrefix(st.LastError, "refused: ") {
		t.Errorf("stopped: %+v", rep.Stopped)
	}
}

// Test401Stops: a 401 answer is not retried; the client keeps its error.
func Test401Stops(t *testing.T) {
	srv := newTestServer(t, false, func(uint32, int) (int, http.Header) { return 401, nil })
	run := start(t, Config{Client: spec.Client{URL: srv.url, Clients: 3, Policy: fast}})
	waitFor(t, 10*time.Second, "all stopped", func(s Stats) bool { return s.StoppedCount() == 3 }, run.f)
	time.Sleep(100 * time.Millisecond) // a retry, if one were scheduled, would be due by now
	rep := run.stop(t)
	b := totals(rep)
	if b.Attempts != 3 || b.Failures[connerr.Handshake4xx] != 3 {
		t.Errorf("attempts %d failures %v; want 3 handshake_4xx", b.Attempts, b.Failures)
	}
	want := results.Stopped{Count: 3, LastError: "handshake_4xx: 401 Unauthorized"}
	if got := rep.Stopped["handshake_4xx"]; got != want {
		t.Errorf("stopped %+v, want %+v", got, want)
	}
}

// retries collects the OnRetry calls of a run.
type retries struct {
	mu   sync.Mutex
	list []Retry
}

func (r *retries) add(x Retry) {
	r.mu.Lock()
	r.list = append(r.list, x)
	r.mu.Unlock()
}

func (r *retries) of(id uint32) []Retry {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Retry
	for _, x := range r.list {
		if x.Client == id {
			out = append(out, x)
		}
	}
	return out
}

// TestRetryAfterStatuses: a load balancer's 502, 503 or 504 with
// Retry-After delays the next attempt by at least the hint, spread upwards
// by backoff.Hinted, and the policy's own delay is the floor when it is
// longer. The server notes when each client's upgrades arrive: no client
// comes back sooner than it was told.
func TestRetryAfterStatuses(t *testing.T) {
	const n = 4
	slow := backoff.Policy{Kind: backoff.Fixed, Initial: 1500 * time.Millisecond, Multiplier: 1}
	for _, tc := range []struct {
		name   string
		status int
		class  connerr.Class
		policy backoff.Policy
	}{
		{"502", 502, connerr.HTTP502, fast},
		{"503", 503, connerr.HTTP503, fast},
		{"504", 504, connerr.HTTP504, fast},
		// The fixed 1.5 s is longer than the 1 s hint (spread by at most
		// HintSpread): the policy decides.
		{"503 policy floor", 503, connerr.HTTP503, slow},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			first := map[uint32]time.Time{}
			var early []string
			srv := newTestServer(t, false, func(id uint32, nth int) (int, http.Header) {
				now := time.Now()
				mu.Lock()
				defer mu.Unlock()
				if nth == 1 {
					first[id] = now
					return tc.status, http.Header{"Retry-After": {"1"}}
				}
				if d := now.Sub(first[id]); nth == 2 && d < time.Second {
					early = append(early, fmt.Sprintf("client %d came back after %s", id, d))
				}
				return 0, nil
			})
			var rs retries
			cfg := Config{Client: spec.Client{URL: srv.url, Clients: n, Policy: tc.policy, Seed: 7}, OnRetry: rs.add}
			run := start(t, cfg)
			waitFor(t, 10*time.Second, "all connected", func(s Stats) bool { return s.Connected == n }, run.f)
			rep := run.stop(t)
			mu.Lock()
			if len(early) > 0 {
				t.Errorf("retried sooner than Retry-After: %v", early)
			}
			mu.Unlock()
			for id := uint32(0); id < n; id++ {
				got := rs.of(id)
				if len(got) != 1 {
					t.Fatalf("client %d: retries %+v, want one", id, got)
				}
				want := max(tc.policy.Delay(7, uint64(id), 1), backoff.Hinted(time.Second, backoff.HintSpread, backoff.U(7, backoff.StreamHint, uint64(id), 1)))
				if r := got[0]; r.Class != tc.class || r.Hint != time.Second || r.Delay != want || r.Delay < time.Second {
					t.Errorf("client %d: retry %+v, want %s hint 1s delay %s", id, r, tc.class, want)
				}
			}
			if b := totals(rep); b.Failures[tc.class] != n {
				t.Errorf("failures %v; want %d %s", b.Failures, n, tc.class)
			}
			// The second attempt started no sooner than the hint after the
			// first failed: connected at >= 1 s from the start.
			for _, tr := range rep.Transitions {
				if tr.Up && tr.At < time.Second {
					t.Errorf("client %d connected at %s, before its Retry-After", tr.Client, tr.At)
				}
			}
		})
	}
}

// TestAttemptResets: the attempt counter counts failures since the last
// success and restarts at 1 after each successful connect.
func TestAttemptResets(t *testing.T) {
	const n = 6
	pol := backoff.Policy{Kind: backoff.Exp, Initial: 20 * time.Millisecond, Multiplier: 2, Jitter: 0.5}
	// Each client's 2nd upgrade request (its first reconnect) gets a 500.
	srv := newTestServer(t, false, func(_ uint32, nth int) (int, http.Header) {
		if nth == 2 {
			return 500, nil
		}
		return 0, nil
	})
	var rs retries
	run := start(t, Config{Client: spec.Client{URL: srv.url, Clients: n, Policy: pol, Seed: 3}, OnRetry: rs.add})
	waitFor(t, 10*time.Second, "all connected", func(s Stats) bool { return s.Connected == n }, run.f)
	for round := 1; round <= 2; round++ {
		srv.waitHeld(n)
		srv.dropAll()
		waitFor(t, 10*time.Second, "all reconnected", func(s Stats) bool { return s.Successes == uint64((round+1)*n) && s.Connected == n }, run.f)
	}
	run.stop(t)
	for id := uint32(0); id < n; id++ {
		want := []struct {
			attempt int
			class   connerr.Class
		}{{1, connerr.Closed1006}, {2, connerr.Handshake5xx}, {1, connerr.Closed1006}}
		got := rs.of(id)
		if len(got) != len(want) {
			t.Fatalf("client %d: retries %+v, want %d", id, got, len(want))
		}
		for i, w := range want {
			r := got[i]
			if r.Attempt != w.attempt || r.Class != w.class || r.Delay != pol.Delay(3, uint64(id), w.attempt) {
				t.Errorf("client %d retry %d: %+v, want attempt %d class %s delay %s", id, i, r, w.attempt, w.class, pol.Delay(3, uint64(id), w.attempt))
			}
		}
	}
}

// TestEchoRTT: echo mode sends stamped frames and records their round trip.
func TestEchoRTT(t *testing.T) {
	const n = 8
	srv := newTestServer(t, true, nil)
	run := start(t, Config{Client: spec.Client{URL: srv.url, Clients: n, Policy: fast, Mode: spec.ModeEcho, MsgRate: 50, MsgSize: 100}})
	waitFor(t, 10*time.Second, "echoes", func(s Stats) bool { return s.MsgDelivered >= 5*n }, run.f)
	rep := run.stop(t)
	if rep.Messages.Delivered < 5*n || rep.Messages.Sent < rep.Messages.Delivered {
		t.Errorf("messages %+v", rep.Messages)
	}
	if got := rep.RTT.TotalCount(); got != int64(rep.Messages.Delivered) {
		t.Errorf("RTT samples %d, delivered %d", got, rep.Messages.Delivered)
	}
	b := totals(rep)
	if uint64(b.MsgSent) != rep.Messages.Sent || uint64(b.MsgDelivered) != rep.Messages.Delivered {
		t.Errorf("timeline messages %d/%d, report %+v", b.MsgSent, b.MsgDelivered, rep.Messages)
	}
	// Each echo's round trip lands in the bucket it was delivered in, and
	// the buckets agree with the histogram.
	for i := range rep.Timeline {
		if bk := &rep.Timeline[i]; bk.RTTCount != bk.MsgDelivered {
			t.Errorf("bucket %d: %d round trips, %d delivered", i, bk.RTTCount, bk.MsgDelivered)
		}
	}
	if b.RTTCount == 0 || b.RTTSumMicros < uint64(b.RTTCount) || b.RTTSumMicros > uint64(b.RTTCount)*uint64(b.RTTMaxMicros) {
		t.Errorf("timeline round trips: count %d, sum %d µs, max %d µs", b.RTTCount, b.RTTSumMicros, b.RTTMaxMicros)
	}
	if !rep.RTT.ValuesAreEquivalent(int64(b.RTTMaxMicros), rep.RTT.Max()) {
		t.Errorf("timeline max %d µs, histogram max %d µs", b.RTTMaxMicros, rep.RTT.Max())
	}
}

// TestRampSpacing: client i's first attempt starts no sooner than i/Ramp.
func TestRampSpacing(t *testing.T) {
	const n, ramp = 10, 50.0
	srv := newTestServer(t, false, nil)
	run := start(t, Config{Client: spec.Client{URL: srv.url, Clients: n, Ramp: ramp, Policy: fast, Reactors: 3}, FirstID: 100})
	waitFor(t, 10*time.Second, "all connected", func(s Stats) bool { return s.Connected == n }, run.f)
	rep := run.stop(t)
	seen := map[uint32]bool{}
	for _, tr := range rep.Transitions {
		slot := time.Duration(float64(tr.Client-100) / ramp * float64(time.Second))
		if tr.Up && tr.At < slot {
			t.Errorf("client %d up at %s, before its slot %s", tr.Client, tr.At, slot)
		}
		seen[tr.Client] = true
	}
	if len(seen) != n {
		t.Errorf("clients seen: %v", seen)
	}
	// 10 clients at 50/s: slots 0..180 ms, so attempts fall in at least
	// two 100 ms buckets.
	if len(rep.Timeline) < 2 {
		t.Errorf("timeline %d buckets, want >= 2", len(rep.Timeline))
	}
}

// TestSourceIPs: clients bind round-robin to the source addresses by ID.
func TestSourceIPs(t *testing.T) {
	srv := newTestServer(t, false, nil)
	ips := []netip.Addr{netip.MustParseAddr("127.0.0.2"), netip.MustParseAddr("127.0.0.3")}
	run := start(t, Config{Client: spec.Client{URL: srv.url, Clients: 4, Policy: fast, SourceIPs: ips}, FirstID: 10})
	waitFor(t, 10*time.Second, "all connected", func(s Stats) bool { return s.Connected == 4 }, run.f)
	run.stop(t)
	for id := uint32(10); id < 14; id++ {
		if got, want := srv.remoteOf(id), ips[id%2].String(); got != want {
			t.Errorf("client %d connected from %s, want %s", id, got, want)
		}
	}
}

// TestHandshakeTimeout: TCP connects but no answer comes.
func TestHandshakeTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var mu sync.Mutex
	var held []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c) // accepted, never answered
			mu.Unlock()
		}
	}()
	defer func() {
		mu.Lock()
		for _, c := range held {
			c.Close()
		}
		mu.Unlock()
	}()
	pol := backoff.Policy{Kind: backoff.Fixed, Initial: 10 * time.Millisecond, MaxAttempts: 1}
	run := start(t, Config{Client: spec.Client{URL: "ws://" + ln.Addr().String(), Clients: 3, Policy: pol, HandshakeTimeout: 100 * time.Millisecond}})
	waitFor(t, 10*time.Second, "all stopped", func(s Stats) bool { return s.StoppedCount() == 3 }, run.f)
	rep := run.stop(t)
	if b := totals(rep); b.Failures[connerr.HandshakeTimeout] != 6 {
		t.Errorf("failures %v, want 6 handshake_timeout", b.Failures)
	}
	if st := rep.Stopped[results.AttemptsExhausted]; st.Count != 3 || !strings.Contains(st.LastError, "no upgrade answer within 100ms") {
		t.Errorf("stopped %+v", rep.Stopped)
	}
}

// TestLimits: a fleet larger than the open-file limit is refused with the
// numbers before anything starts.
func TestLimits(t *testing.T) {
	_, err := New(Config{Client: spec.Client{URL: "ws://127.0.0.1:1/", Clients: 1 << 22}})
	le, ok := err.(*LimitError)
	if !ok {
		t.Fatalf("New: %v, want a *LimitError", err)
	}
	if le.Limit != "open files" || le.Need != 1<<22+FDMargin || !strings.Contains(le.Error(), "more loadgen processes") {
		t.Errorf("%+v: %s", le, le)
	}
}

// listenBacklog0 returns a listening socket on a free loopback port with
// backlog 0: its accept queue holds one connection, later SYNs are dropped
// while it is full. The test's end closes it.
func listenBacklog0(t *testing.T) int {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	return fd
}

// fullBacklog returns the address of a listener with backlog 0 that never
// accepts: its queue holds one connection, and later SYNs are dropped.
func fullBacklog(t *testing.T) string {
	sa, err := unix.Getsockname(listenBacklog0(t))
	if err != nil {
		t.Fatal(err)
	}
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), uint16(sa.(*unix.SockaddrInet4).Port)).String()
}

// TestConnectTimeout: against a full accept queue, the SYNs of all but the
// first client go unanswered (timeout) and the one queued connection never
// gets an answer (handshake_timeout).
func TestConnectTimeout(t *testing.T) {
	const n = 4
	pol := backoff.Policy{Kind: backoff.Fixed, Initial: 10 * time.Millisecond, MaxAttempts: 1}
	run := start(t, Config{Client: spec.Client{URL: "ws://" + fullBacklog(t) + "/", Clients: n, Policy: pol, Ramp: 100,
		ConnectTimeout: 200 * time.Millisecond, HandshakeTimeout: 200 * time.Millisecond}})
	waitFor(t, 10*time.Second, "all stopped", func(s Stats) bool { return s.StoppedCount() == n }, run.f)
	rep := run.stop(t)
	b := totals(rep)
	if b.Failures[connerr.Timeout] < 1 || b.Failures[connerr.HandshakeTimeout] < 1 ||
		b.Failures[connerr.Timeout]+b.Failures[connerr.HandshakeTimeout] != 2*n {
		t.Errorf("failures %v, want timeouts and handshake timeouts, %d in all", b.Failures, 2*n)
	}
	if st := rep.Stopped[results.AttemptsExhausted]; st.Count != n ||
		!strings.Contains(st.LastError, "no connection within 200ms") && !strings.Contains(st.LastError, "no upgrade answer within 200ms") {
		t.Errorf("stopped %+v", rep.Stopped)
	}
}
