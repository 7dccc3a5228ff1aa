package loadgen

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"

	"github.com/stampede-dev/stampede/results"
)

// testServer is a minimal WebSocket server for the tests: gobwas ws.Upgrade
// on accepted conns, one goroutine each. (The real target is package
// target's epoll server.)
type testServer struct {
	t      *testing.T
	ln     net.Listener
	url    string
	echo   bool
	reject rejectFunc // nil accepts every request

	mu       sync.Mutex
	conns    map[net.Conn]bool
	requests map[uint32]int    // upgrade requests per client
	remote   map[uint32]string // source IP of each client's last request
}

// rejectFunc decides the answer to client id's n-th upgrade request (n
// from 1): a status other than 0 or 101 rejects it with header.
type rejectFunc func(id uint32, n int) (status int, header http.Header)

func newTestServer(t *testing.T, echo bool, reject rejectFunc) *testServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &testServer{
		t: t, ln: ln, echo: echo, reject: reject, url: "ws://" + ln.Addr().String() + "/ws",
		conns: map[net.Conn]bool{}, requests: map[uint32]int{}, remote: map[uint32]string{},
	}
	go s.accept()
	t.Cleanup(func() {
		ln.Close()
		s.dropAll()
	})
	return s
}

func (s *testServer) accept() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		go s.serve(c)
	}
}

func (s *testServer) serve(c net.Conn) {
	defer c.Close()
	var id uint32
	var n int
	u := ws.Upgrader{
		OnHeader: func(k, v []byte) error {
			if string(k) == "X-Stampede-Client" {
				x, _ := strconv.ParseUint(string(v), 10, 32)
				id = uint32(x)
			}
			return nil
		},
		OnBeforeUpgrade: func() (ws.HandshakeHeader, error) {
			s.mu.Lock()
			s.requests[id]++
			n = s.requests[id]
			host, _, _ := net.SplitHostPort(c.RemoteAddr().String())
			s.remote[id] = host
			s.mu.Unlock()
			if s.reject != nil {
				if status, h := s.reject(id, n); status != 0 && status != 101 {
					return nil, ws.RejectConnectionError(ws.RejectionStatus(status), ws.RejectionHeader(ws.HandshakeHeaderHTTP(h)))
				}
			}
			return ws.HandshakeHeaderString(""), nil
		},
	}
	if _, err := u.Upgrade(c); err != nil {
		return
	}
	s.mu.Lock()
	s.conns[c] = true
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
	}()
	for {
		p, op, err := wsutil.ReadClientData(c)
		if err != nil {
			return
		}
		if s.echo {
			if err := wsutil.WriteServerMessage(c, op, p); err != nil {
				return
			}
		}
	}
}

// dropAll closes every established connection without a close frame.
func (s *testServer) dropAll() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.conns)
	for c := range s.conns {
		c.Close()
		delete(s.conns, c)
	}
	return n
}

// closeAll sends a close frame with code to every connection, then closes
// it.
func (s *testServer) closeAll(code ws.StatusCode) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		_ = ws.WriteFrame(c, ws.NewCloseFrame(ws.NewCloseFrameBody(code, "restart")))
		c.Close()
		delete(s.conns, c)
	}
}

// ping sends a ping to every connection.
func (s *testServer) ping() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		_ = ws.WriteFrame(c, ws.NewPingFrame([]byte("hi")))
	}
}

// waitHeld waits until the server holds n connections: a client may see
// its 101 a moment before the server's goroutine registers the connection.
func (s *testServer) waitHeld(n int) {
	s.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s.mu.Lock()
		held := len(s.conns)
		s.mu.Unlock()
		if held == n {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("server holds %d connections, want %d", held, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// remoteOf returns the source address of client id's last request.
func (s *testServer) remoteOf(id uint32) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.remote[id]
}

// running is a fleet started in the background.
type running struct {
	f      *Fleet
	cancel context.CancelFunc
	done   chan struct{}
	rep    *results.Report
	err    error
}

// start creates and runs a fleet until stop is called (or the test ends).
func start(t *testing.T, cfg Config) *running {
	t.Helper()
	f, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{f: f, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		r.rep, r.err = f.Run(ctx)
	}()
	t.Cleanup(func() { r.stop(t) })
	return r
}

// stop ends the run and returns its report.
func (r *running) stop(t *testing.T) *results.Report {
	t.Helper()
	r.cancel()
	<-r.done
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r.rep
}

// waitFor polls cond until it holds, failing the test after limit.
func waitFor(t *testing.T, limit time.Duration, what string, cond func(Stats) bool, f *Fleet) Stats {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		s := f.Stats()
		if cond(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s; stats %+v", limit, what, s)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
