package loadgen

import (
	"crypto/tls"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"

	"github.com/stampede-dev/stampede/spec"
	"github.com/stampede-dev/stampede/tlsconf"
)

// downTLS is a wss:// server on one port whose ticket keys outlive its
// outages: while down, it accepts each connection and closes it before
// answering the ClientHello, as a dying server resets the connections of
// its accept queue.
type downTLS struct {
	ln    net.Listener
	srv   *tlsconf.Server
	down  atomic.Bool
	mu    sync.Mutex
	conns map[net.Conn]bool
}

func newDownTLS(t *testing.T) *downTLS {
	srv, err := tlsconf.NewServer(tlsconf.ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &downTLS{ln: ln, srv: srv, conns: map[net.Conn]bool{}}
	t.Cleanup(func() { ln.Close(); s.drop(); srv.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if s.down.Load() {
				c.Close()
				continue
			}
			go s.serve(c)
		}
	}()
	return s
}

// serve upgrades one connection and holds it until it ends.
func (s *downTLS) serve(c net.Conn) {
	tc := tls.Server(c, s.srv.Config())
	if s.srv.Handshake(tc) != nil {
		c.Close()
		return
	}
	if _, err := ws.Upgrade(tc); err != nil {
		c.Close()
		return
	}
	s.mu.Lock()
	s.conns[c] = true
	s.mu.Unlock()
	for {
		if _, _, err := wsutil.ReadClientData(tc); err != nil {
			return
		}
	}
}

// drop closes every connection without a close frame, as a crash does.
func (s *downTLS) drop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		c.Close()
		delete(s.conns, c)
	}
}

// TestWSSResumesAfterFailedHandshakes: clients whose handshakes failed
// while the server was down (closed before it answered) keep their
// sessions and resume once it is back, although crypto/tls forgot the
// session at each failed handshake.
func TestWSSResumesAfterFailedHandshakes(t *testing.T) {
	const n = 4
	srv := newDownTLS(t)
	url := "wss://" + srv.ln.Addr().String() + "/"
	run := start(t, Config{Client: spec.Client{URL: url, Clients: n, Policy: fast, TLSInsecure: true}})
	waitFor(t, 10*time.Second, "connected", func(s Stats) bool { return s.Connected == n }, run.f)
	time.Sleep(100 * time.Millisecond) // the TLS 1.3 tickets, read after the upgrade
	srv.down.Store(true)
	srv.drop()
	waitFor(t, 10*time.Second, "failed handshakes", func(s Stats) bool { return s.Attempts >= 4*n }, run.f)
	srv.down.Store(false)
	waitFor(t, 10*time.Second, "reconnects", func(s Stats) bool { return s.Successes == 2*n && s.Connected == n }, run.f)
	b := totals(run.stop(t))
	if b.TLSFull != n || b.TLSResumed != n {
		t.Errorf("handshakes: %d full, %d resumed; want %d and %d", b.TLSFull, b.TLSResumed, n, n)
	}
}
