package loadgen

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/connerr"
	"github.com/stampede-dev/stampede/session"
	"github.com/stampede-dev/stampede/spec"
)

// tlsServer is a wss:// echo server with a self-signed certificate; its
// handler rejects with status when status is not 0.
type tlsServer struct {
	srv *httptest.Server
	url string
	heldConns
	groups map[tls.CurveID]int // the key exchange group of each upgrade's handshake, under mu
}

func newTLSServer(t *testing.T, status int) *tlsServer {
	return newTLSServerOn(t, status, nil)
}

// newTLSServerOn is newTLSServer whose TCP connections are wrap's, when
// wrap is not nil (under TLS: wrap sees the records).
func newTLSServerOn(t *testing.T, status int, wrap func(net.Conn) net.Conn) *tlsServer {
	s := &tlsServer{groups: map[tls.CurveID]int{}}
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if status != 0 {
			http.Error(w, "no", status)
			return
		}
		c, _, _, err := ws.UpgradeHTTP(r, w)
		if err != nil {
			return
		}
		s.mu.Lock()
		s.groups[r.TLS.CurveID]++
		s.mu.Unlock()
		s.echo(c)
	}))
	s.srv.Config.ErrorLog = log.New(io.Discard, "", 0) // rejected certificates are the point
	if wrap != nil {
		s.srv.Listener = wrapListener{s.srv.Listener, wrap}
	}
	s.srv.StartTLS()
	t.Cleanup(func() {
		s.closeAll()
		s.srv.Close()
	})
	s.url = "wss" + strings.TrimPrefix(s.srv.URL, "https") + "/"
	return s
}

// wrapListener wraps the connections a listener accepts.
type wrapListener struct {
	net.Listener
	wrap func(net.Conn) net.Conn
}

func (l wrapListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return l.wrap(c), nil
}

// heldConns are a test server's upgraded connections: echo serves one,
// held counts them, closeAll sends each a 1001 and closes it.
type heldConns struct {
	mu    sync.Mutex
	conns map[net.Conn]bool
}

// echo holds c and sends back its client's messages until it ends, then
// lets it go.
func (h *heldConns) echo(c net.Conn) {
	h.mu.Lock()
	if h.conns == nil {
		h.conns = map[net.Conn]bool{}
	}
	h.conns[c] = true
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.conns, c)
		h.mu.Unlock()
		c.Close()
	}()
	for {
		p, op, err := wsutil.ReadClientData(c)
		if err != nil || wsutil.WriteServerMessage(c, op, p) != nil {
			return
		}
	}
}

func (h *heldConns) held() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.conns)
}

func (h *heldConns) closeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for c := range h.conns {
		_ = ws.WriteFrame(c, ws.NewCloseFrame(ws.NewCloseFrameBody(ws.StatusGoingAway, "")))
		c.Close()
		delete(h.conns, c)
	}
}

// TestWSS: wss:// clients connect, echo, see a 1001 close and come back.
func TestWSS(t *testing.T) {
	const n = 5
	srv := newTLSServer(t, 0)
	run := start(t, Config{Client: spec.Client{URL: srv.url, Clients: n, Policy: fast, TLSInsecure: true, Mode: spec.ModeEcho, MsgRate: 20}})
	waitFor(t, 10*time.Second, "echoes", func(s Stats) bool { return s.Connected == n && s.MsgDelivered >= n }, run.f)
	for srv.held() != n {
		time.Sleep(5 * time.Millisecond)
	}
	srv.closeAll()
	waitFor(t, 10*time.Second, "reconnects", func(s Stats) bool { return s.Successes == 2*n && s.Connected == n }, run.f)
	rep := run.stop(t)
	b := totals(rep)
	if b.Disconnects[connerr.Closed1001] != n || b.Successes != 2*n || rep.RTT.TotalCount() == 0 {
		t.Errorf("disconnects %v successes %d rtt %d", b.Disconnects, b.Successes, rep.RTT.TotalCount())
	}
	if rep.TTR.TotalCount() != n {
		t.Errorf("TTR samples %d, want %d", rep.TTR.TotalCount(), n)
	}
}

// TestWSSStops: a rejected certificate and a 403 stop the client.
func TestWSSStops(t *testing.T) {
	for _, tc := range []struct {
		name     string
		status   int
		insecure bool
		class    string
		text     string
	}{
		{"certificate", 0, false, "tls", "certificate"},
		{"forbidden", 403, true, "handshake_4xx", "handshake_4xx: 403 Forbidden"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newTLSServer(t, tc.status)
			run := start(t, Config{Client: spec.Client{URL: srv.url, Clients: 2, Policy: fast, TLSInsecure: tc.insecure}})
			waitFor(t, 10*time.Second, "stopped", func(s Stats) bool { return s.StoppedCount() == 2 }, run.f)
			rep := run.stop(t)
			st := rep.Stopped[tc.class]
			if st.Count != 2 || !strings.Contains(st.LastError, tc.text) || totals(rep).Attempts != 2 {
				t.Errorf("stopped %+v attempts %d", rep.Stopped, totals(rep).Attempts)
			}
		})
	}
}

// TestWSSCloseHint: a wss:// client closed with 1013 "retry after 1.5s"
// waits at least that before it attempts again.
func TestWSSCloseHint(t *testing.T) {
	const n = 3
	const hint = 1500 * time.Millisecond
	srv := newTLSServer(t, 0)
	var rs retries
	run := start(t, Config{Client: spec.Client{URL: srv.url, Clients: n, Policy: fast, TLSInsecure: true}, OnRetry: rs.add})
	waitFor(t, 10*time.Second, "connected", func(s Stats) bool { return s.Connected == n }, run.f)
	for srv.held() != n {
		time.Sleep(5 * time.Millisecond)
	}
	srv.mu.Lock()
	for c := range srv.conns {
		_ = ws.WriteFrame(c, ws.NewCloseFrame(ws.NewCloseFrameBody(1013, connerr.CloseHintReason(hint))))
		c.Close()
		delete(srv.conns, c)
	}
	srv.mu.Unlock()
	waitFor(t, 10*time.Second, "disconnects", func(s Stats) bool { return s.DisconnectCount() == n }, run.f)
	for id := range uint32(n) {
		waitFor(t, 10*time.Second, "a retry", func(Stats) bool { return len(rs.of(id)) > 0 }, run.f)
		r := rs.of(id)[0]
		if r.Class != connerr.Closed1013 || r.Hint != hint || r.Delay < hint {
			t.Errorf("client %d: retry %+v; want closed_1013 with hint %v, waiting at least that", id, r, hint)
		}
	}
}

// TestWSSPresetCloseCodes: a library preset's close-code rules hold over
// wss:// as over ws://: graphql-ws reconnects at once after a 1000 and
// stops on a 4400 instead of waiting its backoff.
func TestWSSPresetCloseCodes(t *testing.T) {
	const n = 4
	srv := newTLSServer(t, 0)
	closeAll := func(code ws.StatusCode) {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		for c := range srv.conns {
			_ = ws.WriteFrame(c, ws.NewCloseFrame(ws.NewCloseFrameBody(code, "")))
			c.Close()
			delete(srv.conns, c)
		}
	}
	run := start(t, Config{Client: spec.Client{URL: srv.url, Clients: n, Policy: backoff.MustParse("graphql-ws"), Seed: 1, TLSInsecure: true}})
	waitFor(t, 10*time.Second, "connected", func(s Stats) bool { return s.Connected == n }, run.f)
	for srv.held() != n {
		time.Sleep(5 * time.Millisecond)
	}
	closeAll(1000)
	// At once: well inside graphql-ws's shortest wait of 1.3 s.
	waitFor(t, time.Second, "all back after 1000", func(s Stats) bool { return s.Successes == 2*n && s.Connected == n }, run.f)
	for srv.held() != n {
		time.Sleep(5 * time.Millisecond)
	}
	closeAll(4400)
	s := waitFor(t, time.Second, "all stopped after 4400", func(s Stats) bool { return s.StoppedCount() == n }, run.f)
	if s.Successes != 2*n {
		t.Errorf("%d successes; a client reconnected after 4400", s.Successes)
	}
}

// TestWSSResume: after a 1001 close, clients reconnecting to the same
// server resume their TLS sessions, counted per bucket; with TLSNoResume
// every handshake is full.
func TestWSSResume(t *testing.T) {
	const n = 20
	for _, tc := range []struct {
		name     string
		noResume bool
		resumed  uint32
	}{
		{"session cache", false, n},
		{"--tls-resume=false", true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newTLSServer(t, 0)
			run := start(t, Config{Client: spec.Client{URL: srv.url, Clients: n, Policy: fast, TLSInsecure: true, TLSNoResume: tc.noResume}})
			waitFor(t, 10*time.Second, "connected", func(s Stats) bool { return s.Connected == n }, run.f)
			for srv.held() != n {
				time.Sleep(5 * time.Millisecond)
			}
			srv.closeAll()
			waitFor(t, 10*time.Second, "reconnects", func(s Stats) bool { return s.Successes == 2*n && s.Connected == n }, run.f)
			b := totals(run.stop(t))
			if b.TLSResumed != tc.resumed || b.TLSFull != 2*n-tc.resumed {
				t.Errorf("%d full and %d resumed handshakes, want %d and %d", b.TLSFull, b.TLSResumed, 2*n-tc.resumed, tc.resumed)
			}
		})
	}
}

// TestWSSGroups: the clients offer the key exchange groups asked, and
// crypto/tls's default (the hybrid post-quantum one first) without.
func TestWSSGroups(t *testing.T) {
	const n = 4
	for _, tc := range []struct {
		groups []string
		want   tls.CurveID
	}{
		{nil, tls.X25519MLKEM768},
		{[]string{"secp256r1"}, tls.CurveP256},
		{[]string{"X25519", "secp384r1"}, tls.X25519},
	} {
		t.Run(fmt.Sprint(tc.groups), func(t *testing.T) {
			srv := newTLSServer(t, 0)
			run := start(t, Config{Client: spec.Client{URL: srv.url, Clients: n, Policy: fast, TLSInsecure: true, TLSGroups: tc.groups}})
			waitFor(t, 10*time.Second, "connected", func(s Stats) bool { return s.Connected == n }, run.f)
			run.stop(t)
			srv.mu.Lock()
			defer srv.mu.Unlock()
			if srv.groups[tc.want] != n || len(srv.groups) != 1 {
				t.Errorf("groups of the handshakes %v, want %d of %v", srv.groups, n, tc.want)
			}
		})
	}
	_, err := New(Config{Client: spec.Client{URL: "wss://127.0.0.1:1/", Clients: 1, TLSGroups: []string{"x448"}}})
	var fe *spec.FieldError
	if !errors.As(err, &fe) || fe.Field != "Client.TLSGroups" {
		t.Errorf("an unknown group: %v, want a field error of Client.TLSGroups", err)
	}
}

// TestWSSSessionTimer: wss:// clients speaking ActionCable to a server
// that never welcomes them: each client's timer ends its session after
// StaleAfter (heartbeat_timeout), and none is ever up.
func TestWSSSessionTimer(t *testing.T) {
	const n = 3
	srv := newTLSServer(t, 0)
	sc := session.Config{Protocol: session.ActionCable, ActionCable: session.ActionCableConfig{StaleAfter: 300 * time.Millisecond}}
	run := start(t, Config{Client: spec.Client{URL: srv.url, Clients: n, Policy: fast, TLSInsecure: true, Session: sc}})
	waitFor(t, 10*time.Second, "heartbeat timeouts", func(s Stats) bool { return s.Disconnects[connerr.HeartbeatTimeout] >= 2*n }, run.f)
	rep := run.stop(t)
	for _, tr := range rep.Transitions {
		if tr.Up {
			t.Fatalf("client %d up at %s, never welcomed", tr.Client, tr.At)
		}
	}
	if b := totals(rep); b.Successes < 2*n {
		t.Errorf("successes %d, want at least %d", b.Successes, 2*n)
	}
}
