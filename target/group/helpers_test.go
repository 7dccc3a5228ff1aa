package group

import (
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/internal/wstest"
	"github.com/stampede-dev/stampede/target"
)

// Helpers shared with the target's own tests (internal/wstest).
var (
	mustDial    = wstest.MustDial
	eventually  = wstest.Eventually
	dialTCP     = wstest.DialTCP
	readCloses  = wstest.ReadCloses
	checkHinted = wstest.CheckHinted
)

// dialResult is what a WebSocket dial saw.
type dialResult struct {
	conn       net.Conn
	status     int    // the HTTP status of a failed upgrade
	retryAfter string // its Retry-After header
	err        error
}

// dialWS upgrades a connection to url, sending clientID (if any) in the
// target.ClientIDHeader header.
func dialWS(url, clientID string) dialResult {
	var h http.Header
	if clientID != "" {
		h = http.Header{target.ClientIDHeader: {clientID}}
	}
	r := wstest.Dial(url, h)
	return dialResult{conn: r.Conn, status: r.Status, retryAfter: r.RetryAfter, err: r.Err}
}

// readFrame reads one frame with a bounded payload (wstest.ReadFrame).
var readFrame = wstest.ReadFrame

// pclient is a test client of the message protocol.
type pclient = wstest.ProtoClient

// startServer starts a server in this process for one test and shuts it
// down abruptly at the end.
func startServer(t *testing.T, cfg target.Config) *target.Server {
	t.Helper()
	s, err := target.Start(cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { s.Shutdown(target.Abrupt) })
	return s
}

// waitReady waits for the server to accept.
func waitReady(t *testing.T, s *target.Server) {
	t.Helper()
	select {
	case <-s.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("server not ready within 10 s")
	}
}
