package main

import (
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"
)

// drillServer is a small WebSocket server that restarts as a server behind
// a load balancer looks to its clients: restart closes every connection
// with 1012 (service restart), then answers every upgrade 503 with
// Retry-After for a while (the balancer with no backend up), then accepts
// again. It counts connections open at once, and notes each client's
// upgrades so a test can check nobody came back before its Retry-After.
type drillServer struct {
	ln  net.Listener
	url string

	mu          sync.Mutex
	conns       map[net.Conn]bool
	open, peak  int
	rejectUntil time.Time
	retryAfter  string
	rejected    map[string]time.Time // remote addr's IP+client header -> when last rejected
	early       int                  // upgrades sooner than the Retry-After given
	accepted    int
	lastAccept  time.Time
	auth        string        // the last Authorization header seen
	token       string        // when set, upgrades without this Authorization are answered 401
	pace        time.Duration // > 0: upgrades are answered one per pace, a server of 1/pace accepts a second
	next        time.Time     // the next upgrade's slot under pace
}

// setPace makes the server answer at most one upgrade per d from now on
// (0: as fast as they come), a server whose capacity a herd saturates.
func (s *drillServer) setPace(d time.Duration) {
	s.mu.Lock()
	s.pace = d
	s.mu.Unlock()
}

// slot is how long an upgrade waits for its turn under pace.
func (s *drillServer) slot() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pace <= 0 {
		return 0
	}
	now := time.Now()
	s.next = later(s.next, now).Add(s.pace)
	return s.next.Sub(now) - s.pace
}

// later is the later of two times.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func newDrillServer(t *testing.T) *drillServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return serveDrill(t, ln)
}

// serveDrill is a drillServer on ln (a listener in a namespace host).
func serveDrill(t *testing.T, ln net.Listener) *drillServer {
	s := &drillServer{ln: ln, url: "ws://" + ln.Addr().String() + "/ws", conns: map[net.Conn]bool{}, rejected: map[string]time.Time{}}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go s.serve(c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		s.mu.Lock()
		for c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
	})
	return s
}

func (s *drillServer) serve(c net.Conn) {
	defer c.Close()
	var client, auth string
	u := ws.Upgrader{
		OnHeader: func(k, v []byte) error {
			switch string(k) {
			case "X-Stampede-Client":
				client = string(v)
			case "Authorization":
				auth = string(v)
				s.mu.Lock()
				s.auth = auth
				s.mu.Unlock()
			}
			return nil
		},
		OnBeforeUpgrade: func() (ws.HandshakeHeader, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.token != "" && auth != s.token {
				return nil, ws.RejectConnectionError(ws.RejectionStatus(401))
			}
			now := time.Now()
			if at, ok := s.rejected[client]; ok && now.Sub(at) < time.Second {
				s.early++
			}
			if now.Before(s.rejectUntil) {
				s.rejected[client] = now
				return nil, ws.RejectConnectionError(ws.RejectionStatus(503),
					ws.RejectionHeader(ws.HandshakeHeaderHTTP(http.Header{"Retry-After": {s.retryAfter}})))
			}
			return nil, nil
		},
	}
	time.Sleep(s.slot())
	if _, err := u.Upgrade(c); err != nil {
		return
	}
	s.mu.Lock()
	s.conns[c] = true
	s.open++
	s.peak = max(s.peak, s.open)
	s.accepted++
	s.lastAccept = time.Now()
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.open--
		s.mu.Unlock()
	}()
	for {
		if _, _, err := wsutil.ReadClientData(c); err != nil {
			return
		}
	}
}

// restart closes every connection with code, and answers upgrades 503
// with Retry-After (seconds) for down.
func (s *drillServer) restart(code ws.StatusCode, down time.Duration, retryAfter string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rejectUntil, s.retryAfter = time.Now().Add(down), retryAfter
	for c := range s.conns {
		ws.WriteFrame(c, ws.NewCloseFrame(ws.NewCloseFrameBody(code, "service restart")))
		c.Close()
	}
}

func (s *drillServer) stats() (peak, early, accepted int, last time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peak, s.early, s.accepted, s.lastAccept
}
