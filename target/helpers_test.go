package target

import (
	"bufio"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/gobwas/ws"
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
	var r dialResult
	d := ws.Dialer{
		Timeout:   5 * time.Second,
		TLSConfig: &tls.Config{InsecureSkipVerify: true},
		OnStatusError: func(_ int, _ []byte, resp io.Reader) {
			if hr, err := http.ReadResponse(bufio.NewReader(resp), nil); err == nil {
				r.retryAfter = hr.Header.Get("Retry-After")
			}
		},
	}
	if clientID != "" {
		d.Header = ws.HandshakeHeaderHTTP(http.Header{ClientIDHeader: {clientID}})
	}
	conn, _, _, err := d.Dial(context.Background(), url)
	r.conn, r.err = conn, err
	if se, ok := err.(ws.StatusError); ok {
		r.status = int(se)
	}
	return r
}

// mustDial dials and fails the test on error; the connection is closed at
// the end of the test.
func mustDial(t *testing.T, url string) net.Conn {
	t.Helper()
	r := dialWS(url, "")
	if r.err != nil {
		t.Fatalf("dial %s: %v", url, r.err)
	}
	t.Cleanup(func() { r.conn.Close() })
	return r.conn
}

// eventually polls cond every 5 ms for up to 10 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
