package loadgen

import (
	"net"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"golang.org/x/sys/unix"

	"github.com/stampede-dev/stampede/spec"
)

// TestEventsBeforeTimers: a reactor with more events waiting than one
// wait returns reads them before its timers fire: behind on its events,
// it starts no attempt and runs no deadline until it has caught up (a
// loadgen behind on its events, as in a restart's herd on a machine it
// shares with the target, would otherwise send more SYNs to an accept
// queue its unread answers say is full).
func TestEventsBeforeTimers(t *testing.T) {
	const n = eventBatch + eventBatch/2
	r, ln := connecting(t, n, time.Minute)
	// Every connect has finished once the server has taken it.
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	ln.SetDeadline(time.Now().Add(30 * time.Second))
	for range n {
		c, err := ln.Accept()
		if err != nil {
			t.Fatalf("accept %d of %d: %v", len(conns)+1, n, err)
		}
		conns = append(conns, c)
	}
	r.startOff += int64(2 * time.Second) // past every connect deadline
	behind := 0
	// A full batch: its connects move on, the rest wait for the next
	// wait, and so do the timers, though every deadline has passed.
	if _, err := r.loop(&behind); err != nil {
		t.Fatal(err)
	}
	if s := states(r); s[uint8(stHandshaking)] != eventBatch || s[uint8(stConnecting)] != n-eventBatch {
		t.Errorf("after a full batch, client states %v (connecting %d, handshaking %d): want %d handshaking and %d still connecting, their deadlines not run",
			s, stConnecting, stHandshaking, eventBatch, n-eventBatch)
	}
	// The rest, then the timers: none timed out.
	if _, err := r.loop(&behind); err != nil {
		t.Fatal(err)
	}
	if s := states(r); s[uint8(stHandshaking)] != n {
		t.Errorf("client states %v (handshaking is %d): want all %d handshaking, none timed out before its connect was read",
			s, stHandshaking, n)
	}
}

// TestNoPingsWhileBehind: a reactor behind on its events does not ping
// its silent connections: their silence may be a close it has not read
// (a restart ends every connection at once), and a ping to a closed
// connection is a write and a reset for nothing. It sweeps once it has
// caught up.
func TestNoPingsWhileBehind(t *testing.T) {
	const n = eventBatch + eventBatch/2
	r, ln := connecting(t, n, time.Minute)
	if r.ka == nil {
		t.Fatal("no keepalive in the reactor")
	}
	upgraded := upgrading(t, ln, n)
	behind := 0
	for deadline := time.Now().Add(30 * time.Second); states(r)[uint8(stConnected)] < n; {
		if time.Now().After(deadline) {
			t.Fatalf("client states %v (connected is %d): want all %d connected", states(r), stConnected, n)
		}
		if _, err := r.loop(&behind); err != nil {
			t.Fatal(err)
		}
	}
	// The server closes every connection, and the clients have heard
	// nothing for a ping interval; every close has reached its client.
	for range n {
		(<-upgraded).Close()
	}
	for j := range r.clients {
		waitHangUp(t, int(r.clients[j].fd))
	}
	r.startOff += r.ka.interval
	r.ka.next = r.now() // a sweep is due
	before := make([]int64, n)
	for j := range r.clients {
		before[j] = r.ka.c[j].ping
	}
	if _, err := r.loop(&behind); err != nil {
		t.Fatal(err)
	}
	pinged := 0
	for j := range r.clients {
		if r.clients[j].state == stConnected && r.ka.c[j].ping != before[j] {
			pinged++
		}
	}
	if left := states(r)[uint8(stConnected)]; left != n-eventBatch || pinged > 0 {
		t.Errorf("after a full batch of closes, %d connections left (want %d) and %d of them pinged (want none)", left, n-eventBatch, pinged)
	}
}

// waitHangUp waits until the socket fd has its peer's FIN unread.
func waitHangUp(t *testing.T, fd int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; {
		p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLRDHUP}}
		if n, err := unix.Poll(p, 0); err != nil && err != unix.EINTR {
			t.Fatal(err)
		} else if n == 1 && p[0].Revents&unix.POLLRDHUP != 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("socket %d: no hang-up within 10 s", fd)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestDeadlineAsksTheSocket: a connect or upgrade whose deadline passes
// while its answer waits unread is moved on by the answer, not failed as
// timed out: the deadline asks the socket before it fails the attempt.
func TestDeadlineAsksTheSocket(t *testing.T) {
	const n = 8
	r, ln := connecting(t, n, time.Second)
	upgraded := upgrading(t, ln, n)
	// Every connect has finished, unread: the connect deadlines fire.
	r.startOff += int64(2 * time.Second)
	r.fire()
	if s := states(r); s[uint8(stHandshaking)] != n {
		t.Fatalf("after the connect deadlines, client states %v (handshaking is %d): want all %d handshaking", s, stHandshaking, n)
	}
	for range n {
		<-upgraded
	}
	// Every 101 has arrived, unread: the upgrade deadlines fire.
	r.startOff += int64(2 * time.Second)
	r.fire()
	if s := states(r); s[uint8(stConnected)] != n {
		t.Errorf("after the upgrade deadlines, client states %v (connected is %d): want all %d connected", s, stConnected, n)
	}
}

// connecting returns a reactor of n clients that has started each one's
// connect to ln, a listener of its own, the ramp done: connect deadlines
// of a second, upgrade deadlines of handshake.
func connecting(t *testing.T, n int, handshake time.Duration) (*reactor, *net.TCPListener) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := l.(*net.TCPListener)
	t.Cleanup(func() { ln.Close() })
	f, err := New(Config{Client: spec.Client{URL: "ws://" + ln.Addr().String() + "/", Clients: n,
		ConnectTimeout: time.Second, HandshakeTimeout: handshake}})
	if err != nil {
		t.Fatal(err)
	}
	r := newReactor(f, 0, 1)
	start := time.Now()
	if err := r.open(start, start); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		r.shutdown()
		r.ep.Close()
	})
	for j := range int32(n) {
		r.start(j, r.now())
	}
	r.next = int32(n) // the ramp is done
	return r, ln
}

// upgrading accepts n connections on ln and answers each one's upgrade
// in a goroutine of its own, which then sends the connection on the
// channel returned. The connections close when the test ends.
func upgrading(t *testing.T, ln *net.TCPListener, n int) <-chan net.Conn {
	t.Helper()
	done := make(chan net.Conn, n)
	ln.SetDeadline(time.Now().Add(30 * time.Second))
	for range n {
		c, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		go func() {
			if _, err := ws.Upgrade(c); err != nil {
				t.Error(err)
			}
			done <- c
		}()
	}
	return done
}

// states counts r's clients by state.
func states(r *reactor) map[uint8]int {
	m := map[uint8]int{}
	for j := range r.clients {
		m[uint8(r.clients[j].state)]++
	}
	return m
}
