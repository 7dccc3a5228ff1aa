package loadgen

import (
	"crypto/tls"
	"io"
	"net"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/connerr"
	"github.com/stampede-dev/stampede/spec"
)

// trickleConn writes what it is given a few bytes at a time, pausing
// between them, so that its peer reads TLS records (headers too) in pieces.
type trickleConn struct{ net.Conn }

func (c trickleConn) Write(p []byte) (int, error) {
	for done := 0; done < len(p); {
		n, err := c.Conn.Write(p[done:min(done+3, len(p))])
		done += n
		if err != nil {
			return done, err
		}
		time.Sleep(50 * time.Microsecond)
	}
	return len(p), nil
}

// TestWSSPartialRecords: a server whose records arrive three bytes at a
// time: the reactor keeps each partial record until the rest comes, and
// echoes go both ways without a failure.
func TestWSSPartialRecords(t *testing.T) {
	const n = 3
	srv := newTLSServerOn(t, 0, func(c net.Conn) net.Conn { return trickleConn{c} })
	run := start(t, Config{Client: spec.Client{URL: srv.url, Clients: n, Policy: fast, TLSInsecure: true,
		Mode: spec.ModeEcho, MsgRate: 10, MsgSize: 600, HandshakeTimeout: 20 * time.Second}})
	waitFor(t, 20*time.Second, "echoes", func(s Stats) bool { return s.Connected == n && s.MsgDelivered >= 3*n }, run.f)
	rep := run.stop(t)
	b := totals(rep)
	if b.FailureCount() != 0 || b.DisconnectCount() != 0 || b.Successes != n || rep.RTT.TotalCount() < 3*n {
		t.Errorf("failures %v disconnects %v successes %d echoes %d", b.Failures, b.Disconnects, b.Successes, rep.RTT.TotalCount())
	}
}

// TestWSSServerGone: a server that closes without a close frame, after a
// TLS close_notify or with a bare FIN, is a 1006; the clients come back.
func TestWSSServerGone(t *testing.T) {
	const n = 3
	for _, tc := range []struct {
		name  string
		close func(net.Conn)
	}{
		{"close_notify", func(c net.Conn) { c.Close() }},
		{"fin", func(c net.Conn) { c.(*tls.Conn).NetConn().Close() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newTLSServer(t, 0)
			run := start(t, Config{Client: spec.Client{URL: srv.url, Clients: n, Policy: fast, TLSInsecure: true}})
			waitFor(t, 10*time.Second, "connected", func(s Stats) bool { return s.Connected == n }, run.f)
			for srv.held() != n {
				time.Sleep(5 * time.Millisecond)
			}
			srv.mu.Lock()
			for c := range srv.conns {
				tc.close(c)
				delete(srv.conns, c)
			}
			srv.mu.Unlock()
			waitFor(t, 10*time.Second, "back", func(s Stats) bool { return s.Successes == 2*n && s.Connected == n }, run.f)
			if b := totals(run.stop(t)); b.Disconnects[connerr.Closed1006] != n || b.DisconnectCount() != n {
				t.Errorf("disconnects %v, want %d closed_1006", b.Disconnects, n)
			}
		})
	}
}

// TestWSSHandshakeQueue: with one handshake goroutine, clients wait their
// turn and all connect; against a server that never answers, the queued
// ones and the one in progress all fail at their deadline, and the run
// still ends.
func TestWSSHandshakeQueue(t *testing.T) {
	defer func(n int) { tlsHandshakers = n }(tlsHandshakers)
	tlsHandshakers = 1
	const n = 4
	srv := newTLSServer(t, 0)
	run := start(t, Config{Client: spec.Client{URL: srv.url, Clients: n, Policy: fast, TLSInsecure: true, Mode: spec.ModeEcho, MsgRate: 20}})
	waitFor(t, 10*time.Second, "echoes", func(s Stats) bool { return s.Connected == n && s.MsgDelivered >= n }, run.f)
	if b := totals(run.stop(t)); b.FailureCount() != 0 || b.TLSFull != n {
		t.Errorf("failures %v, %d full handshakes", b.Failures, b.TLSFull)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() { // accepts and says nothing
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	run = start(t, Config{Client: spec.Client{URL: "wss://" + ln.Addr().String() + "/", Clients: n, Policy: fast, TLSInsecure: true,
		HandshakeTimeout: 200 * time.Millisecond}})
	waitFor(t, 10*time.Second, "timeouts", func(s Stats) bool { return s.Failures[connerr.HandshakeTimeout] >= 2*n }, run.f)
	if b := totals(run.stop(t)); b.FailureCount() != b.Failures[connerr.HandshakeTimeout] || b.Successes != 0 {
		t.Errorf("failures %v successes %d, want only handshake timeouts", b.Failures, b.Successes)
	}
}

// TestTLSBuffersReleased: crypto/tls's input buffers are found on this Go;
// a connection whose buffers were let go after its handshake and after
// each read still carries data both ways.
func TestTLSBuffersReleased(t *testing.T) {
	if !tlsBufs.ok {
		t.Fatal("tls.Conn has no rawInput, input and hand buffers on this Go: wss:// clients keep their handshake's buffers")
	}
	hs := httptest.NewUnstartedServer(nil)
	hs.StartTLS()
	cert := hs.TLS.Certificates[0]
	hs.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		sc := tls.Server(c, &tls.Config{Certificates: []tls.Certificate{cert}})
		defer sc.Close()
		_, _ = io.Copy(sc, sc) // echo
	}()
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	tc := tls.Client(raw, &tls.Config{InsecureSkipVerify: true})
	defer tc.Close()
	tc.SetDeadline(time.Now().Add(10 * time.Second))
	if err := tc.Handshake(); err != nil {
		t.Fatal(err)
	}
	if b := tlsBufferBytes(tc); b == 0 {
		t.Fatal("no input buffers after the handshake: the test sees nothing")
	}
	releaseTLSBuffers(tc)
	if b := tlsBufferBytes(tc); b != 0 {
		t.Fatalf("%d bytes of input buffers after release", b)
	}
	for _, msg := range []string{"one", "two, after a release"} {
		if _, err := tc.Write([]byte(msg)); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len(msg))
		if _, err := io.ReadFull(tc, got); err != nil || string(got) != msg {
			t.Fatalf("echo %q, %v; want %q", got, err, msg)
		}
		releaseTLSBuffers(tc)
		if b := tlsBufferBytes(tc); b != 0 {
			t.Fatalf("%d bytes of input buffers after a read and a release", b)
		}
	}
}
