package loadgen

import (
	"crypto/tls"
	"io"
	"net"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"

	"github.com/stampede-dev/stampede/spec"
	"github.com/stampede-dev/stampede/tlsconf"
)

// takenOver returns how many connections of f left crypto/tls for the
// reactors' record layer.
func takenOver(f *Fleet) int64 {
	var n int64
	for _, r := range f.reactors {
		n += r.takenOver.Load()
	}
	return n
}

// TestWSSTakeOver: wss:// clients leave crypto/tls once their session
// ticket came (at once without a session cache) and echo both ways on the
// reactor's record layer; closed by the server, they come back, resumed
// with the session crypto/tls took before the take-over, and echo again.
func TestWSSTakeOver(t *testing.T) {
	const n = 6
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
			run := start(t, Config{Client: spec.Client{URL: srv.url, Clients: n, Policy: fast, TLSInsecure: true,
				TLSNoResume: tc.noResume, Mode: spec.ModeEcho, MsgRate: 20, MsgSize: 40_000}})
			waitFor(t, 10*time.Second, "echoes", func(s Stats) bool { return s.Connected == n && s.MsgDelivered >= 2*n }, run.f)
			if got := takenOver(run.f); got != n {
				t.Errorf("%d connections taken over from crypto/tls, want %d", got, n)
			}
			for srv.held() != n {
				time.Sleep(5 * time.Millisecond)
			}
			srv.closeAll()
			waitFor(t, 10*time.Second, "reconnects", func(s Stats) bool { return s.Successes == 2*n && s.Connected == n }, run.f)
			delivered := run.f.Stats().MsgDelivered
			waitFor(t, 10*time.Second, "echoes again", func(s Stats) bool { return s.MsgDelivered >= delivered+2*n }, run.f)
			if got := takenOver(run.f); got != 2*n {
				t.Errorf("%d connections taken over from crypto/tls, want %d", got, 2*n)
			}
			b := totals(run.stop(t))
			if b.TLSResumed != tc.resumed || b.TLSFull != 2*n-tc.resumed || b.FailureCount() != 0 || b.DisconnectCount() != n {
				t.Errorf("%d full and %d resumed handshakes (want %d and %d), failures %v, disconnects %v",
					b.TLSFull, b.TLSResumed, 2*n-tc.resumed, tc.resumed, b.Failures, b.Disconnects)
			}
		})
	}
}

// keyUpdateServer is a wss:// echo server that takes its connections over
// from crypto/tls once the fleet's are (ready), then sends two session
// tickets and a KeyUpdate asking for one back, and echoes under its next
// secrets.
type keyUpdateServer struct {
	ln      net.Listener
	cfg     *tls.Config
	ready   func() bool
	updates atomic.Int64 // the clients' KeyUpdates received
}

func (s *keyUpdateServer) serve(t *testing.T, c net.Conn) {
	defer c.Close()
	log := new(secretLog)
	cfg := s.cfg.Clone()
	cfg.KeyLogWriter = log
	tc := tls.Server(c, cfg)
	if tc.Handshake() != nil {
		return
	}
	if _, err := ws.Upgrade(tc); err != nil {
		return
	}
	for deadline := time.Now().Add(5 * time.Second); !s.ready() && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	raw, err := takeOverServer(c, tc, log)
	if err != nil {
		t.Error(err)
		return
	}
	// Two session tickets in one record after the take-over, as OpenSSL
	// (HAProxy, nginx) sends them, each of a length with bit 2 set.
	ticket := append([]byte{hsNewSessionTicket, 0, 0, 197}, make([]byte, 197)...)
	if raw.write(recordHandshake, append(slices.Clone(ticket), ticket...)) != nil {
		return
	}
	if raw.write(recordHandshake, []byte{hsKeyUpdate, 0, 0, 1, 1}) != nil {
		return
	}
	raw.k.wr.update(raw.k.suite)
	pr, pw := io.Pipe()
	defer pr.Close()
	go s.echo(pr, raw)
	for {
		typ, pt, err := raw.read()
		switch {
		case err != nil:
			pw.CloseWithError(err)
			return
		case typ == recordHandshake && len(pt) == 5 && pt[0] == hsKeyUpdate:
			raw.k.rd.update(raw.k.suite)
			s.updates.Add(1)
		case typ == recordApplication:
			_, _ = pw.Write(pt)
		}
	}
}

// echo sends back the client's messages, sealed by raw.
func (s *keyUpdateServer) echo(r io.Reader, raw *rawTLS) {
	w := writerFunc(func(p []byte) (int, error) { return len(p), raw.write(recordApplication, p) })
	rw := struct {
		io.Reader
		io.Writer
	}{r, w}
	for {
		p, op, err := wsutil.ReadClientData(rw)
		if err != nil || wsutil.WriteServerMessage(w, op, p) != nil {
			return
		}
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestWSSKeyUpdate: a server's KeyUpdate asking for one back, after the
// take-over: each client moves its read secret, answers with a KeyUpdate
// of its own, moves its write secret, and echoes go on both ways.
func TestWSSKeyUpdate(t *testing.T) {
	const n = 3
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var fleet atomic.Pointer[Fleet]
	s := &keyUpdateServer{ln: ln, cfg: serverConfig(t, nil),
		ready: func() bool { f := fleet.Load(); return f != nil && takenOver(f) == n }}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go s.serve(t, c)
		}
	}()
	run := start(t, Config{Client: spec.Client{URL: "wss://" + ln.Addr().String() + "/", Clients: n, Policy: fast,
		TLSInsecure: true, Mode: spec.ModeEcho, MsgRate: 20}})
	fleet.Store(run.f)
	waitFor(t, 10*time.Second, "connected", func(s Stats) bool { return s.Connected == n }, run.f)
	for deadline := time.Now().Add(10 * time.Second); s.updates.Load() != n && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	delivered := run.f.Stats().MsgDelivered
	waitFor(t, 10*time.Second, "echoes after the KeyUpdates", func(s Stats) bool { return s.MsgDelivered >= delivered+2*n }, run.f)
	b := totals(run.stop(t))
	if s.updates.Load() != n || b.FailureCount() != 0 || b.DisconnectCount() != 0 {
		t.Errorf("%d KeyUpdates from the clients (want %d), failures %v, disconnects %v", s.updates.Load(), n, b.Failures, b.Disconnects)
	}
}

// optsServer is a wss:// echo server of tlsconf's with opts; closeAll
// sends its connections a 1001 and closes them.
type optsServer struct {
	url string
	heldConns
}

func newOptsServer(t *testing.T, opts tlsconf.ServerOptions) *optsServer {
	srv, err := tlsconf.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &optsServer{url: "wss://" + ln.Addr().String() + "/"}
	t.Cleanup(func() { ln.Close(); s.closeAll(); srv.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go s.serve(srv, c)
		}
	}()
	return s
}

func (s *optsServer) serve(srv *tlsconf.Server, c net.Conn) {
	defer c.Close()
	tc := tls.Server(c, srv.Config())
	if srv.Handshake(tc) != nil {
		return
	}
	if _, err := ws.Upgrade(tc); err != nil {
		return
	}
	s.echo(tc)
}

// TestWSSTakeOverServers: against a TLS 1.3 server that sends no session
// ticket, clients leave crypto/tls at the upgrade answer; against a TLS
// 1.2 server they stay on it, and resume with its tickets. Echoes go both
// ways either way, before and after a reconnect.
func TestWSSTakeOverServers(t *testing.T) {
	const n = 4
	for _, tc := range []struct {
		name      string
		opts      tlsconf.ServerOptions
		takenOver int64
		resumed   uint32
	}{
		{"TLS 1.3 without tickets", tlsconf.ServerOptions{NoTickets: true}, 2 * n, 0},
		{"TLS 1.2", tlsconf.ServerOptions{MaxVersion: tlsconf.Version12}, 0, n},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newOptsServer(t, tc.opts)
			run := start(t, Config{Client: spec.Client{URL: srv.url, Clients: n, Policy: fast, TLSInsecure: true,
				Mode: spec.ModeEcho, MsgRate: 20}})
			waitFor(t, 10*time.Second, "echoes", func(s Stats) bool { return s.Connected == n && s.MsgDelivered >= n }, run.f)
			for deadline := time.Now().Add(10 * time.Second); srv.held() != n && time.Now().Before(deadline); {
				time.Sleep(5 * time.Millisecond)
			}
			srv.closeAll()
			waitFor(t, 10*time.Second, "reconnects", func(s Stats) bool { return s.Successes >= 2*n && s.Connected == n }, run.f)
			delivered := run.f.Stats().MsgDelivered
			waitFor(t, 10*time.Second, "echoes again", func(s Stats) bool { return s.MsgDelivered >= delivered+n }, run.f)
			got := takenOver(run.f)
			b := totals(run.stop(t))
			if got != tc.takenOver || b.TLSResumed != tc.resumed || b.Successes != 2*n || b.FailureCount() != 0 {
				t.Errorf("%d taken over (want %d), %d resumed (want %d), %d successes, failures %v", got, tc.takenOver, b.TLSResumed, tc.resumed, b.Successes, b.Failures)
			}
		})
	}
}
