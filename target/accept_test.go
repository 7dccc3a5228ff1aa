package target

import (
	"bufio"
	"io"
	"math"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/spec"
)

// listenQueue returns the Recv-Q (connections in the accept queue) and
// Send-Q (backlog) that ss shows for the listener on port; ok is false when
// ss is not installed.
func listenQueue(t *testing.T, port int) (recvQ, sendQ int, ok bool) {
	t.Helper()
	if _, err := exec.LookPath("ss"); err != nil {
		return 0, 0, false
	}
	out, err := exec.Command("ss", "-ltnH", "sport = :"+strconv.Itoa(port)).Output()
	if err != nil {
		t.Fatalf("ss: %v", err)
	}
	f := strings.Fields(string(out))
	if len(f) < 3 {
		t.Fatalf("ss shows no listener on %d: %q", port, out)
	}
	recvQ, _ = strconv.Atoi(f[1])
	sendQ, _ = strconv.Atoi(f[2])
	return recvQ, sendQ, true
}

func port(a net.Addr) int { return a.(*net.TCPAddr).Port }

// While the server holds (listening, not accepting), the kernel completes
// exactly backlog+1 handshakes and drops the SYNs of the rest; when
// accepting starts, those backlog+1 are accepted.
func TestHoldFillsBacklog(t *testing.T) {
	const backlog = 4
	s := startServer(t, Config{Server: spec.Server{Backlog: backlog, Hold: time.Hour}})
	addr := s.Addr().String()
	// One at a time, so each handshake completes before the next SYN.
	if got := dialTCP(t, addr, 1, 2*time.Second); got != 1 {
		t.Fatal("first dial failed")
	}
	for i := 1; i < backlog+1; i++ {
		if dialTCP(t, addr, 1, 2*time.Second) != 1 {
			t.Fatalf("dial %d of the first backlog+1 failed", i+1)
		}
	}
	// The queue is full: these SYNs are dropped; 300 ms is well before
	// the first SYN retransmit (1 s), so they cannot sneak in.
	if got := dialTCP(t, addr, 3, 300*time.Millisecond); got != 0 {
		t.Fatalf("%d dials completed on a full accept queue; want 0", got)
	}
	if recvQ, sendQ, ok := listenQueue(t, port(s.Addr())); ok && (recvQ != backlog+1 || sendQ != backlog) {
		t.Fatalf("ss Recv-Q/Send-Q = %d/%d; want %d/%d", recvQ, sendQ, backlog+1, backlog)
	}
	select {
	case <-s.Ready():
		t.Fatal("Ready before the hold ended")
	default:
	}
	if st := s.Stats(); st.Accepted != 0 {
		t.Fatalf("accepted %d during the hold", st.Accepted)
	}
	s.Stall(0)
	waitReady(t, s)
	eventually(t, "backlog+1 accepts", func() bool { return s.Stats().Accepted == backlog+1 })
	time.Sleep(50 * time.Millisecond)
	if got := s.Stats().Accepted; got != backlog+1 {
		t.Fatalf("accepted %d; want %d", got, backlog+1)
	}
	mustDial(t, s.URL()) // and the server upgrades again
}

// SetBacklog changes the backlog of a listening socket: ss shows it as
// Send-Q, and the accept queue then holds the new backlog+1.
func TestSetBacklog(t *testing.T) {
	s := startServer(t, Config{Server: spec.Server{Backlog: 16, Hold: time.Hour}})
	if _, sendQ, ok := listenQueue(t, port(s.Addr())); ok && sendQ != 16 {
		t.Fatalf("Send-Q = %d; want 16", sendQ)
	}
	if err := s.SetBacklog(2); err != nil {
		t.Fatal(err)
	}
	if s.Backlog() != 2 {
		t.Fatalf("Backlog() = %d; want 2", s.Backlog())
	}
	if _, sendQ, ok := listenQueue(t, port(s.Addr())); ok && sendQ != 2 {
		t.Fatalf("Send-Q = %d; want 2", sendQ)
	}
	addr := s.Addr().String()
	for i := range 3 {
		if dialTCP(t, addr, 1, 2*time.Second) != 1 {
			t.Fatalf("dial %d of backlog+1 failed", i+1)
		}
	}
	if got := dialTCP(t, addr, 2, 300*time.Millisecond); got != 0 {
		t.Fatalf("%d dials completed beyond backlog 2", got)
	}
	if err := s.SetBacklog(0); err == nil {
		t.Fatal("SetBacklog(0) succeeded")
	}
}

// The accept rate is a token bucket on the injected clock: with rate 10/s
// and burst 2, two accepts happen at once, then one per 100 ms of clock,
// and an idle moment saves up at most two.
func TestAcceptRate(t *testing.T) {
	clk := newFakeClock()
	s := startServer(t, Config{Server: spec.Server{AcceptRate: 10, AcceptBurst: 2, Backlog: 16}, Clock: clk})
	waitReady(t, s)
	addr := s.Addr().String()
	const dials = 8
	for range dials {
		if dialTCP(t, addr, 1, 2*time.Second) != 1 {
			t.Fatal("dial failed")
		}
	}
	steps := []struct {
		name    string
		advance time.Duration
		want    uint64 // accepted so far, the loop then waiting on the clock
	}{
		{name: "burst at start", advance: 0, want: 2},
		{name: "one token per 100 ms", advance: 100 * time.Millisecond, want: 3},
		{name: "half a token is not one", advance: 50 * time.Millisecond, want: 3},
		{name: "2.5 tokens make two accepts", advance: 200 * time.Millisecond, want: 5},
		{name: "an idle hour saves up only the burst", advance: time.Hour, want: 7},
	}
	for _, st := range steps {
		clk.Advance(st.advance)
		eventually(t, st.name, func() bool {
			return s.Stats().Accepted == st.want && clk.Waiters() == 1
		})
	}
	// Lifting the limit accepts the rest at once.
	if err := s.SetAcceptRate(0); err != nil {
		t.Fatal(err)
	}
	eventually(t, "all accepted", func() bool { return s.Stats().Accepted == dials })
}

func TestBucket(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := time.Millisecond
	tests := []struct {
		name     string
		rate     float64
		burst    int
		takes    int           // tokens taken at t0
		at       time.Duration // then asked at t0+at
		wantWait time.Duration
	}{
		{name: "unlimited never waits", rate: 0, burst: 1, takes: 100, at: 0, wantWait: 0},
		{name: "full bucket", rate: 10, burst: 3, takes: 2, at: 0, wantWait: 0},
		{name: "empty bucket waits one interval", rate: 10, burst: 3, takes: 3, at: 0, wantWait: 100 * ms},
		{name: "partly refilled", rate: 10, burst: 3, takes: 3, at: 40 * ms, wantWait: 60 * ms},
		{name: "debt from a concurrent accept", rate: 10, burst: 1, takes: 2, at: 0, wantWait: 200 * ms},
		{name: "refill capped at burst", rate: 10, burst: 2, takes: 2, at: time.Hour, wantWait: 0},
		{name: "high rate", rate: 2000, burst: 20, takes: 20, at: 0, wantWait: 500 * time.Microsecond},
		// 1e21 ns does not fit a Duration: the wait saturates instead of
		// wrapping to a negative one, which meant "accept now".
		{name: "rate too small for a Duration", rate: 1e-12, burst: 1, takes: 1, at: 0, wantWait: math.MaxInt64},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b bucket
			b.reset(t0, tc.rate, tc.burst)
			for range tc.takes {
				b.take(t0)
			}
			if got := b.wait(t0.Add(tc.at)); got != tc.wantWait {
				t.Fatalf("wait = %v; want %v", got, tc.wantWait)
			}
		})
	}
	if got := defaultBurst(2000); got != 20 {
		t.Fatalf("defaultBurst(2000) = %d; want 20", got)
	}
	if got := defaultBurst(10); got != 1 {
		t.Fatalf("defaultBurst(10) = %d; want 1", got)
	}
}

// TestAcceptRateBounds: a rate too small or too large to pace, or not a
// number, is refused by Validate and by SetAcceptRate's check, naming the
// bound; 0 and the bounds themselves are taken.
func TestAcceptRateBounds(t *testing.T) {
	for _, tc := range []struct {
		rate float64
		want string // "" = accepted
	}{
		{0, ""},
		{spec.MinAcceptRate, ""},
		{spec.MaxAcceptRate, ""},
		{2000, ""},
		{1e-4, "too small"},
		{math.SmallestNonzeroFloat64, "too small"},
		{2e9, "too large"},
		{math.Inf(1), "too large"},
		{-1, "non-negative"},
		{math.NaN(), "non-negative"},
	} {
		err := Config{Server: spec.Server{AcceptRate: tc.rate}}.Validate()
		if tc.want == "" {
			if err != nil {
				t.Errorf("AcceptRate %v: %v", tc.rate, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "AcceptRate") {
			t.Errorf("AcceptRate %v: %v, want an AcceptRate error saying %q", tc.rate, err, tc.want)
		}
		if msg := spec.CheckAcceptRate(tc.rate); !strings.Contains(msg, tc.want) {
			t.Errorf("spec.CheckAcceptRate(%v) = %q, want %q", tc.rate, msg, tc.want)
		}
	}
}

// A client that sent its upgrade request and closed while its connection
// waited in the accept queue is not upgraded when the server reaches it:
// counted as failed, not upgraded, and the server upgrades the next one.
func TestAbandonedInQueueNotUpgraded(t *testing.T) {
	s := startServer(t, Config{Server: spec.Server{Backlog: 4, Hold: time.Hour}})
	c, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	req := "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
	if _, err := c.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	c.Close() // gave up before the server accepted
	time.Sleep(50 * time.Millisecond)
	s.Stall(0)
	waitReady(t, s)
	eventually(t, "the abandoned connection counted", func() bool { return s.Stats().UpgradesFailed == 1 })
	if st := s.Stats(); st.UpgradesOK != 0 || st.Accepted != 1 {
		t.Fatalf("accepted %d, upgraded %d; want 1 accepted, none upgraded", st.Accepted, st.UpgradesOK)
	}
	mustDial(t, s.URL())
	eventually(t, "the next client upgraded", func() bool { return s.Stats().UpgradesOK == 1 })
}

// The upgrade slots bound the connections accepted and not yet upgraded:
// with two slots and six clients whose requests wait in the accept queue
// (the server holds for 500 ms after its start), each upgrade burning
// 100 ms, the server never holds more than its two slots' ahead of its
// upgrades; the rest wait in the kernel's queue.
func TestSlotsBoundAcceptedNotUpgraded(t *testing.T) {
	s := startServer(t, Config{Server: spec.Server{Upgraders: 2, HandshakeCost: 100 * time.Millisecond, Hold: 500 * time.Millisecond}})
	const n = 6
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			if r := dialWS(s.URL(), ""); r.err == nil {
				r.conn.Close()
			}
		})
	}
	worst := uint64(0)
	for {
		st := s.Stats()
		done := st.UpgradesOK + st.UpgradesFailed + st.UpgradesRejected
		worst = max(worst, st.Accepted-min(done, st.Accepted))
		if done >= n {
			break
		}
		time.Sleep(time.Millisecond)
	}
	wg.Wait()
	if worst > 2 {
		t.Fatalf("%d connections were accepted ahead of their upgrades; want at most the 2 slots", worst)
	}
}

// The kernel holds a connection whose client has sent nothing (the
// listener's TCP_DEFER_ACCEPT): it is not accepted while silent, and is
// upgraded as soon as its request comes.
func TestDeferAccept(t *testing.T) {
	s := startServer(t, Config{})
	waitReady(t, s)
	c, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	time.Sleep(300 * time.Millisecond)
	if n := s.Stats().Accepted; n != 0 {
		t.Fatalf("%d silent connections accepted; want none before their first bytes", n)
	}
	req := "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || !strings.Contains(line, " 101 ") {
		t.Fatalf("after its request the client read %q, %v; want 101", line, err)
	}
}
