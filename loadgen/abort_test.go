package loadgen

import (
	"bufio"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/connerr"
	"github.com/stampede-dev/stampede/spec"
)

// TCP states of /proc/net/tcp (include/net/tcp_states.h).
const (
	tcpFinWait1 = 0x04
	tcpFinWait2 = 0x05
	tcpTimeWait = 0x06
	tcpClosing  = 0x0B
	tcpLastAck  = 0x09
)

// tcpSockets returns the IPv4 TCP sockets whose local port (local) or
// remote port (!local) is port, from /proc/net/tcp: each by its local and
// remote addresses, with its state.
func tcpSockets(t testing.TB, port int, local bool) map[string]int {
	t.Helper()
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		t.Skipf("no /proc/net/tcp: %v", err)
	}
	defer f.Close()
	socks := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 4 {
			continue
		}
		addr := fs[2]
		if local {
			addr = fs[1]
		}
		_, hexPort, _ := strings.Cut(addr, ":")
		p, _ := strconv.ParseUint(hexPort, 16, 16)
		st, _ := strconv.ParseUint(fs[3], 16, 8)
		if int(p) == port {
			socks[fs[1]+" "+fs[2]] = int(st)
		}
	}
	return socks
}

// tcpStates counts tcpSockets by state, leaving out the sockets in
// before in the same state: a port a test listens on may be one that an
// earlier connection on the machine (another test's) still holds in
// TIME_WAIT as its remote or local port.
func tcpStates(t testing.TB, port int, local bool, before map[string]int) map[int]int {
	t.Helper()
	n := map[int]int{}
	for sock, st := range tcpSockets(t, port, local) {
		if was, ok := before[sock]; !ok || was != st {
			n[st]++
		}
	}
	return n
}

func portOf(t *testing.T, addr net.Addr) int {
	t.Helper()
	return addr.(*net.TCPAddr).Port
}

// TestDroppedClosesWithReset: a connection the server dropped (FIN, no
// close frame) is closed with a reset, so the server's socket leaves no
// TIME_WAIT, and is still counted as a 1006 and reconnected.
func TestDroppedClosesWithReset(t *testing.T) {
	const n = 40
	srv := newTestServer(t, false, nil)
	port := portOf(t, srv.ln.Addr())
	before := tcpSockets(t, port, true)
	run := start(t, Config{Client: spec.Client{URL: srv.url, Clients: n, Policy: fast, Seed: 1}})
	waitFor(t, 20*time.Second, "all connected", func(s Stats) bool { return s.Connected == n }, run.f)
	srv.waitHeld(n)
	srv.dropAll()
	waitFor(t, 20*time.Second, "all reconnected", func(s Stats) bool { return s.Successes == 2*n && s.Connected == n }, run.f)
	tw := tcpStates(t, port, true, before)[tcpTimeWait]
	rep := run.stop(t)
	if got := totals(rep).Disconnects[connerr.Closed1006]; got != n {
		t.Errorf("disconnects %v, want %d closed_1006", totals(rep).Disconnects, n)
	}
	if tw != 0 {
		t.Errorf("%d TIME_WAIT sockets on the server's port after it dropped %d connections, want 0 (closed with a reset)", tw, n)
	}
}

// TestHandshakeTimeoutLeavesNoClosingSocket: an attempt whose upgrade was
// never answered is closed with a reset: no client socket is left in
// FIN_WAIT towards a server that never took the connection.
func TestHandshakeTimeoutLeavesNoClosingSocket(t *testing.T) {
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
			held = append(held, c) // accepted, never answered, never closed
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
	port := portOf(t, ln.Addr())
	before := tcpSockets(t, port, false)
	run := start(t, Config{Client: spec.Client{URL: "ws://" + ln.Addr().String(), Clients: 5, Policy: pol, HandshakeTimeout: 100 * time.Millisecond}})
	waitFor(t, 10*time.Second, "all stopped", func(s Stats) bool { return s.StoppedCount() == 5 }, run.f)
	st := tcpStates(t, port, false, before)
	run.stop(t)
	if c := st[tcpFinWait1] + st[tcpFinWait2] + st[tcpClosing] + st[tcpTimeWait] + st[tcpLastAck]; c != 0 {
		t.Errorf("client sockets still closing after their handshakes timed out: %v (state: count), want none", st)
	}
}
