package realservers

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"

	"github.com/stampede-dev/stampede/connerr"
	"github.com/stampede-dev/stampede/internal/testenv"
	"github.com/stampede-dev/stampede/session"
)

// The centrifuge-go server serves the centrifuge session protocol's tests
// and the client-library presets. TestCentrifugeServes speaks the
// Centrifuge JSON protocol itself, to show the server does what the
// adapter and the presets rely on.

var (
	cfgOnce sync.Once
	cfgExe  string
	cfgErr  error
)

// startCentrifuge builds centrifuge/ (centrifuge-go from the Go module
// proxy, a module of its own) once per test process and runs it with its
// pings every ping and unauthenticated sockets closed after stale; more
// are its pong timeout.
func startCentrifuge(t *testing.T, ping, stale string, more ...string) *nodeServer {
	t.Helper()
	cfgOnce.Do(func() {
		dir, err := os.MkdirTemp("", "stampede-centrifuge-")
		if err != nil {
			cfgErr = err
			return
		}
		cfgExe = filepath.Join(dir, "centrifuge")
		cmd := exec.Command("go", "build", "-o", cfgExe, ".")
		cmd.Dir = "centrifuge"
		if out, err := cmd.CombinedOutput(); err != nil {
			cfgErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if cfgErr != nil {
		testenv.SkipUnlessRequired(t, "centrifuge-go did not build (the Go module proxy may be out of reach): %v", cfgErr)
	}
	s := &nodeServer{t: t, script: "centrifuge", exe: cfgExe, args: append([]string{ping, stale}, more...), port: freePort(t)}
	s.start()
	t.Cleanup(s.kill)
	return s
}

// cfgClient is one Centrifuge client over WebSocket, JSON protocol.
type cfgClient struct {
	t  *testing.T
	c  net.Conn
	rd *bufio.Reader
}

func dialCentrifuge(t *testing.T, srv *nodeServer) *cfgClient {
	t.Helper()
	c, br, _, err := ws.Dial(context.Background(), srv.url("ws", "/connection/websocket"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if br == nil {
		br = bufio.NewReader(c)
	}
	return &cfgClient{t: t, c: c, rd: br}
}

func (cl *cfgClient) send(cmd string) {
	cl.t.Helper()
	if err := wsutil.WriteClientText(cl.c, []byte(cmd)); err != nil {
		cl.t.Fatal(err)
	}
}

// read returns the next text message, or the close frame's error.
func (cl *cfgClient) read() (string, error) {
	_ = cl.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	b, err := wsutil.ReadServerText(struct {
		io.Reader
		io.Writer
	}{cl.rd, cl.c})
	return string(b), err
}

// TestCentrifugeServes: connect with the token, two subscriptions, the
// server's pings answered for three of them, counted by the server; a
// wrong token is closed 3500.
func TestCentrifugeServes(t *testing.T) {
	t.Parallel()
	srv := startCentrifuge(t, "300ms", "1s")
	cl := dialCentrifuge(t, srv)
	cl.send(`{"id":1,"connect":{"token":"s3cret","name":"stampede"}}`)
	want := []string{`"id":1,"connect":{"client":`, `"id":2,"subscribe":{`, `"id":3,"subscribe":{`}
	cl.send(`{"id":2,"subscribe":{"channel":"room:a"}}`)
	cl.send(`{"id":3,"subscribe":{"channel":"room:b"}}`)
	pings := 0
	for len(want) > 0 || pings < 3 {
		m, err := cl.read()
		if err != nil {
			t.Fatalf("waiting for %q and pings (%d): %v", want, pings, err)
		}
		for _, line := range strings.Split(strings.TrimSpace(m), "\n") {
			if line == "{}" {
				pings++
				cl.send("{}")
				continue
			}
			if len(want) == 0 || !strings.Contains(line, want[0]) {
				t.Fatalf("got %s, want %q", line, want)
			}
			want = want[1:]
		}
	}
	srv.waitStats(context.Background(), 5*time.Second, "the client connected and subscribed", func(m map[string]int) bool {
		return m["joined"] == 1 && m["subscribed"] == 1
	})

	bad := dialCentrifuge(t, srv)
	bad.send(`{"id":1,"connect":{"token":"wrong"}}`)
	_, err := bad.read()
	var ce wsutil.ClosedError
	if !errors.As(err, &ce) || ce.Code != 3500 {
		t.Errorf("a wrong token: %v, want close 3500", err)
	}
}

func centrifugeSession(token string, channels ...string) session.Config {
	return session.Config{Protocol: session.Centrifuge, Centrifuge: session.CentrifugeConfig{
		Token: token, Data: []byte(`{"app":"stampede"}`), Channels: channels, MaxPingDelay: 700 * time.Millisecond,
	}}
}

// TestCentrifugeKillRestart: the server pings every second (its connect
// reply says "ping":1) and wants a pong within 700 ms (else its close
// 3012); the client finds it gone after 1.7 s without a ping. 2.5 s is
// two pings, then a SIGKILL and a start anew.
func TestCentrifugeKillRestart(t *testing.T) {
	t.Parallel()
	srv := startCentrifuge(t, "1s", "1s", "700ms")
	holdKillRestart(t, srv, srv.url("ws", "/connection/websocket"), 40, centrifugeSession("s3cret", "room:a", "room:b"), 2500*time.Millisecond)
}

// TestCentrifugeInvalidToken: close 3500 stops every client as
// session_auth.
func TestCentrifugeInvalidToken(t *testing.T) {
	t.Parallel()
	srv := startCentrifuge(t, "300ms", "1s")
	stopsAs(t, srv.url("ws", "/connection/websocket"), 5, centrifugeSession("wrong", "room:a"), connerr.SessionAuth)
}

// TestCentrifugePermissionDenied: a subscribe error 103 stops every
// client as session_refused.
func TestCentrifugePermissionDenied(t *testing.T) {
	t.Parallel()
	srv := startCentrifuge(t, "300ms", "1s")
	stopsAs(t, srv.url("ws", "/connection/websocket"), 5, centrifugeSession("s3cret", "room:a", "room:forbidden"), connerr.SessionRefused)
}
