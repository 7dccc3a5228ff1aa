package wsdial

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/stampede-dev/stampede/connerr"
)

// tcpServer listens on 127.0.0.1:0 and runs handle on each accepted
// connection in its own goroutine; the cleanup closes the listener, waits for
// the handlers and closes their connections.
func tcpServer(t *testing.T, handle func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer conn.Close()
				handle(conn)
			})
		}
	})
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	return ln.Addr().String()
}

// wsServer is a tcpServer that upgrades each connection with gobwas
// ws.Upgrade before calling handle. A bounded deadline keeps a handler from
// outliving a failed test.
func wsServer(t *testing.T, handle func(net.Conn)) string {
	t.Helper()
	return "ws://" + tcpServer(t, func(conn net.Conn) {
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := ws.Upgrade(conn); err != nil {
			return
		}
		handle(conn)
	})
}

// statusServer answers every upgrade with status and the given headers.
func statusServer(t *testing.T, status int, header map[string]string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		for k, v := range header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	return "ws" + srv.URL[len("http"):]
}

// closedPort returns an address on which nothing listens: a listener's port
// just after it was closed.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// wantClass checks that err is a *connerr.Error of class want with the given
// retryability, and returns it.
func wantClass(t *testing.T, err error, want connerr.Class, retryable bool) *connerr.Error {
	t.Helper()
	var ce *connerr.Error
	if !errors.As(err, &ce) {
		t.Fatalf("error %v (%T) is not a *connerr.Error", err, err)
	}
	if ce.Class != want {
		t.Fatalf("class %v, want %v (error: %v)", ce.Class, want, ce)
	}
	if ce.Retryable() != retryable {
		t.Fatalf("Retryable() = %v, want %v (error: %v)", ce.Retryable(), retryable, ce)
	}
	return ce
}
