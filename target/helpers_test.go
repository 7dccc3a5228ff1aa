package target

import (
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/internal/wstest"
)

// startServer starts a server for one test and shuts it down abruptly at
// the end.
func startServer(t *testing.T, cfg Config) *Server {
	t.Helper()
	s, err := Start(cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { s.Shutdown(Abrupt) })
	return s
}

// waitReady waits for the server to accept.
func waitReady(t *testing.T, s *Server) {
	t.Helper()
	select {
	case <-s.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("server not ready within 10 s")
	}
}

// dialResult is what a WebSocket dial saw.
type dialResult struct {
	conn       net.Conn
	status     int    // the HTTP status of a failed upgrade
	retryAfter string // its Retry-After header
	err        error
}

// dialWS upgrades a connection to url, sending clientID (if any) in the
// X-Stampede-Client header.
func dialWS(url, clientID string) dialResult {
	var h http.Header
	if clientID != "" {
		h = http.Header{ClientIDHeader: {clientID}}
	}
	r := wstest.Dial(url, h)
	return dialResult{conn: r.Conn, status: r.Status, retryAfter: r.RetryAfter, err: r.Err}
}

// Helpers shared with the tests of the target group (internal/wstest).
var (
	mustDial    = wstest.MustDial
	eventually  = wstest.Eventually
	dialTCP     = wstest.DialTCP
	readCloses  = wstest.ReadCloses
	checkHinted = wstest.CheckHinted
)
