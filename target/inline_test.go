package target

import (
	"bufio"
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stampede-dev/stampede/spec"
)

// wsRequest is a client's upgrade request.
const wsRequest = "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
	"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"

// upgradeIn sends wsRequest to s in the given pieces, pause apart, and
// returns the status line the client read.
func upgradeIn(t *testing.T, s *Server, pause time.Duration, pieces ...string) string {
	t.Helper()
	c, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	for i, p := range pieces {
		if i > 0 {
			time.Sleep(pause)
		}
		if _, err := io.WriteString(c, p); err != nil {
			t.Fatal(err)
		}
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatalf("read the answer: %v", err)
	}
	return strings.TrimSpace(line)
}

// TestInlineUpgrade: a plain server upgrades a connection whose request is
// all there in its accept loop (nothing handed off); one whose request
// comes in two pieces, or a server with TLS or a handshake cost, upgrades
// in a goroutine, reading again what the loop read (prefix). Either way the
// connection has TCP_NODELAY, as Go's accepted connections do, and no
// keep-alive (listener.Listener).
func TestInlineUpgrade(t *testing.T) {
	half := len(wsRequest) / 2
	for _, tc := range []struct {
		name   string
		cfg    Config
		pieces []string
		inline uint64
	}{
		{"whole request, inline", Config{}, []string{wsRequest}, 1},
		{"request in two pieces, handed off", Config{}, []string{wsRequest[:half], wsRequest[half:]}, 0},
		{"request line in two pieces, handed off", Config{}, []string{wsRequest[:5], wsRequest[5:]}, 0},
		{"handshake cost, in goroutines", Config{Server: spec.Server{HandshakeCost: time.Millisecond}}, []string{wsRequest}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startServer(t, tc.cfg)
			waitReady(t, s)
			if line := upgradeIn(t, s, 200*time.Millisecond, tc.pieces...); !strings.Contains(line, " 101 ") {
				t.Fatalf("answer %q, want 101", line)
			}
			eventually(t, "the connection registered", func() bool { return len(s.snapshot()) == 1 })
			if n := s.stats.inline.Load(); n != tc.inline {
				t.Errorf("%d connections upgraded in the accept loop, want %d", n, tc.inline)
			}
			c := s.snapshot()[0]
			if !c.sock.acquire() {
				t.Fatal("the connection's socket is closed")
			}
			defer c.sock.release()
			fd := int(c.sock.fd)
			if v, err := unix.GetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY); err != nil || v != 1 {
				t.Errorf("TCP_NODELAY %d, %v; want 1", v, err)
			}
			if v, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_KEEPALIVE); err != nil || v != 0 {
				t.Errorf("SO_KEEPALIVE %d, %v; want 0", v, err)
			}
			if st := s.Stats(); st.Accepted != 1 || st.UpgradesOK != 1 {
				t.Errorf("accepted %d, upgraded %d; want 1 and 1", st.Accepted, st.UpgradesOK)
			}
		})
	}
}

// TestInlineNothingSent: a connection closed with nothing sent is
// accepted (a FIN is bytes enough for the deferred accept), not upgraded,
// and its slot is given back: the next client is upgraded.
func TestInlineNothingSent(t *testing.T) {
	s := startServer(t, Config{Server: spec.Server{Upgraders: 1}})
	waitReady(t, s)
	c, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	eventually(t, "the empty connection counted", func() bool { return s.Stats().UpgradesFailed == 1 })
	for range 2 {
		mustDial(t, s.URL())
	}
	if st := s.Stats(); st.UpgradesOK != 2 {
		t.Fatalf("upgraded %d after the empty connection, want 2", st.UpgradesOK)
	}
}

// acceptedBare hands s's accept path a connection accepted before its
// client sent anything, as the kernel hands over one a SYN cookie made
// (the listener's deferred accept holds back every other): the client's
// end and the server's fd, taken with an upgrade slot as the accept loop
// takes one.
func acceptedBare(t *testing.T, s *Server) (client net.Conn, fd int, peer netip.AddrPort) {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err = net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	nc, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	f, err := nc.(*net.TCPConn).File() // a blocking duplicate: made non-blocking below
	if err != nil {
		t.Fatal(err)
	}
	fd, err = unix.Dup(int(f.Fd()))
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		t.Fatal(err)
	}
	s.upSem <- struct{}{}
	return client, fd, netip.MustParseAddrPort(client.LocalAddr().String())
}

// TestWaitingForRequest: a connection accepted before its request came
// waits in the waiting set, holding its upgrade slot, and is upgraded in
// place when the request comes; one whose request never comes is closed
// at the handshake timeout and its slot given back.
func TestWaitingForRequest(t *testing.T) {
	s := startServer(t, Config{Server: spec.Server{HandshakeTimeout: 300 * time.Millisecond}})
	waitReady(t, s)
	eventually(t, "the accept loop waiting with its slot", func() bool { return len(s.upSem) == 1 })

	late, fd, peer := acceptedBare(t, s)
	s.upgradeInline(fd, peer, time.Time{})
	silent, fd2, peer2 := acceptedBare(t, s)
	s.upgradeInline(fd2, peer2, time.Time{})
	if n := len(s.upSem); n != 3 {
		t.Fatalf("%d upgrade slots held while two connections wait, want theirs and the accept loop's", n)
	}

	time.Sleep(100 * time.Millisecond)
	if _, err := io.WriteString(late, wsRequest); err != nil {
		t.Fatal(err)
	}
	late.SetReadDeadline(time.Now().Add(10 * time.Second))
	if line, err := bufio.NewReader(late).ReadString('\n'); err != nil || !strings.Contains(line, " 101 ") {
		t.Fatalf("the late request was answered %q, %v; want 101", line, err)
	}
	eventually(t, "the late one upgraded in place", func() bool { return s.stats.inline.Load() == 1 })

	silent.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := silent.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("the silent client read %d, %v; want EOF at the handshake timeout", n, err)
	}
	eventually(t, "the silent one counted and both slots free", func() bool {
		return s.Stats().UpgradesFailed == 1 && len(s.upSem) == 1
	})
	if st := s.Stats(); st.UpgradesOK != 1 {
		t.Errorf("upgraded %d, want 1", st.UpgradesOK)
	}
}

// TestWaitingClosedAtShutdown: a connection still waiting for its
// request when the server shuts down is closed with it.
func TestWaitingClosedAtShutdown(t *testing.T) {
	s, err := Start(Config{})
	if err != nil {
		t.Fatal(err)
	}
	waitReady(t, s)
	eventually(t, "the accept loop waiting with its slot", func() bool { return len(s.upSem) == 1 })
	c, fd, peer := acceptedBare(t, s)
	s.upgradeInline(fd, peer, time.Time{})
	s.Shutdown(Abrupt)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("the waiting client read %d, %v after the shutdown; want EOF", n, err)
	}
	if n := len(s.upSem); n != 0 {
		t.Errorf("%d upgrade slots held after the shutdown, want 0", n)
	}
}
