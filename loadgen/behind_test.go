package loadgen

import (
	"net"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/spec"
)

// TestEventsBeforeTimers: a reactor with more finished connects waiting
// than one wait returns reads them all before its timers fire, so none
// fails as a connect timeout though its deadline passed while it waited
// unread (a loadgen behind on its events, as in a restart's herd on a
// machine it shares with the target).
func TestEventsBeforeTimers(t *testing.T) {
	const n = eventBatch + eventBatch/2
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	f, err := New(Config{Client: spec.Client{URL: "ws://" + ln.Addr().String() + "/", Clients: n,
		ConnectTimeout: time.Second, HandshakeTimeout: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	r := newReactor(f, 0, 1)
	start := time.Now()
	if err := r.open(start, start); err != nil {
		t.Fatal(err)
	}
	defer r.ep.Close()
	defer r.shutdown()
	for j := range int32(n) {
		r.start(j, r.now())
	}
	r.next = n // the ramp is done
	// Every connect has finished once the server has taken it.
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	ln.(*net.TCPListener).SetDeadline(time.Now().Add(30 * time.Second))
	for range n {
		c, err := ln.Accept()
		if err != nil {
			t.Fatalf("accept %d of %d: %v", len(conns)+1, n, err)
		}
		conns = append(conns, c)
	}
	r.startOff += int64(2 * time.Second) // past every connect deadline
	behind := 0
	for range 2 { // a full batch, then the rest and the timers

		if _, err := r.loop(&behind); err != nil {
			t.Fatal(err)
		}
	}
	states := map[uint8]int{}
	for j := range r.clients {
		states[uint8(r.clients[j].state)]++
	}
	if states[uint8(stHandshaking)] != n {
		t.Errorf("client states %v (handshaking is %d): want all %d handshaking, none timed out before its connect was read",
			states, stHandshaking, n)
	}
}
