package wsdial

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"
	"golang.org/x/sys/unix"

	"github.com/stampede-dev/stampede/connerr"
)

// dial runs d.Dial with a context bounded at 10 s, so no situation can hang
// the package.
func dial(t *testing.T, d *Dialer, url string) (*Conn, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := d.Dial(ctx, url)
	if c != nil {
		t.Cleanup(func() { c.Close() })
	}
	return c, err
}

// A closed port answers the SYN with RST: refused, retryable.
func TestDialClosedPortRefused(t *testing.T) {
	_, err := dial(t, &Dialer{}, "ws://"+closedPort(t)+"/")
	e := wantClass(t, err, connerr.Refused, true)
	if !errors.Is(e, syscall.ECONNREFUSED) {
		t.Errorf("error %v does not wrap ECONNREFUSED", e)
	}
}

// fullBacklog returns the address of a listener with backlog 1 that never
// accepts, after filling its accept queue: further SYNs are dropped.
func fullBacklog(t *testing.T) string {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(fd, 1); err != nil {
		t.Fatal(err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(sa.(*unix.SockaddrInet4).Port))
	// The queue holds backlog+1 = 2 connections; the first dial that times
	// out proves it is full. Bounded: at most 5 dials of 300 ms.
	for range 5 {
		c, err := net.DialTimeout("tcp", addr, 300*time.Millisecond)
		if err != nil {
			return addr
		}
		t.Cleanup(func() { c.Close() })
	}
	t.Fatal("the accept queue of a backlog-1 listener never filled")
	return ""
}

// A full accept queue drops SYNs; with TCP_SYNCNT=1 the kernel gives up with
// ETIMEDOUT after two SYNs (about 3 s here), before the 8 s ConnectTimeout.
func TestDialFullBacklogSynRetriesTimeout(t *testing.T) {
	addr := fullBacklog(t)
	_, err := dial(t, &Dialer{SynRetries: 1, ConnectTimeout: 8 * time.Second}, "ws://"+addr+"/")
	e := wantClass(t, err, connerr.Timeout, true)
	if !errors.Is(e, syscall.ETIMEDOUT) {
		t.Errorf("error %v does not wrap ETIMEDOUT: the kernel did not give up by TCP_SYNCNT", e)
	}
}

// The same full backlog bounded by ConnectTimeout instead: Go's deadline.
func TestDialFullBacklogConnectTimeout(t *testing.T) {
	addr := fullBacklog(t)
	_, err := dial(t, &Dialer{ConnectTimeout: 500 * time.Millisecond}, "ws://"+addr+"/")
	wantClass(t, err, connerr.Timeout, true)
}

// TCP connects but the upgrade is never answered: handshake_timeout.
func TestDialSilentServerHandshakeTimeout(t *testing.T) {
	addr := tcpServer(t, func(c net.Conn) { io.Copy(io.Discard, c) })
	_, err := dial(t, &Dialer{HandshakeTimeout: 300 * time.Millisecond}, "ws://"+addr+"/")
	e := wantClass(t, err, connerr.HandshakeTimeout, true)
	if !errors.Is(e, os.ErrDeadlineExceeded) {
		t.Errorf("error %v is not the handshake deadline", e)
	}
}

// The caller's context ends before HandshakeTimeout: still handshake_timeout,
// and the error says it was the context.
func TestDialSilentServerContextDeadline(t *testing.T) {
	addr := tcpServer(t, func(c net.Conn) { io.Copy(io.Discard, c) })
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := (&Dialer{}).Dial(ctx, "ws://"+addr+"/")
	e := wantClass(t, err, connerr.HandshakeTimeout, true)
	if !errors.Is(e, context.DeadlineExceeded) {
		t.Errorf("error %v does not wrap context.DeadlineExceeded", e)
	}
}

// RFC 6761 names under .invalid never resolve: dns. The context bounds the
// lookup where no resolver answers at all.
func TestDialInvalidNameDNS(t *testing.T) {
	_, err := dial(t, &Dialer{ConnectTimeout: 3 * time.Second}, "ws://stampede-test.invalid/")
	e := wantClass(t, err, connerr.DNS, true)
	var dnsErr *net.DNSError
	if !errors.As(e, &dnsErr) {
		t.Errorf("error %v does not wrap a *net.DNSError", e)
	}
}

// tlsServer is an httptest TLS server whose handler upgrades to WebSocket,
// sends "hi" and closes with 1001. TLS handshake errors are not logged.
func tlsServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, _, _, err := ws.UpgradeHTTP(r, w)
		if err != nil {
			return
		}
		defer conn.Close()
		wsutil.WriteServerText(conn, []byte("hi"))
		ws.WriteFrame(conn, ws.NewCloseFrame(ws.NewCloseFrameBody(ws.StatusGoingAway, "restart")))
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// A self-signed certificate the client has no root for: tls, not retryable.
func TestDialUntrustedCertificateTLS(t *testing.T) {
	srv := tlsServer(t)
	_, err := dial(t, &Dialer{TLSConfig: &tls.Config{RootCAs: x509.NewCertPool()}}, "wss"+srv.URL[len("https"):]+"/")
	e := wantClass(t, err, connerr.TLS, false)
	var verify *tls.CertificateVerificationError
	if !errors.As(e, &verify) {
		t.Errorf("error %v is not a certificate verification error", e)
	}
}

// The same server with its root trusted: wss works end to end.
func TestDialTrustedCertificate(t *testing.T) {
	srv := tlsServer(t)
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	c, err := dial(t, &Dialer{TLSConfig: &tls.Config{RootCAs: roots}}, "wss"+srv.URL[len("https"):]+"/")
	if err != nil {
		t.Fatal(err)
	}
	p, op, err := c.ReadMessage()
	if err != nil || op != ws.OpText || string(p) != "hi" {
		t.Fatalf("ReadMessage = %q, %v, %v; want \"hi\", text, nil", p, op, err)
	}
	wantClass(t, c.Wait(), connerr.Closed1001, true)
}

// Non-101 answers: the class, retryability, status and Retry-After.
func TestDialStatus(t *testing.T) {
	now := time.Date(2026, time.November, 29, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name       string
		status     int
		retryAfter string
		class      connerr.Class
		retryable  bool
		wait       time.Duration
		text       string
	}{
		{"401 unauthorized stops", 401, "", connerr.Handshake4xx, false, 0, "handshake_4xx: 401 Unauthorized"},
		{"403 forbidden stops", 403, "", connerr.Handshake4xx, false, 0, "handshake_4xx: 403 Forbidden"},
		{"429 is retried", 429, "1", connerr.Handshake4xx, true, time.Second, "handshake_4xx: 429 Too Many Requests (Retry-After 1s)"},
		{"503 delay-seconds", 503, "2", connerr.HTTP503, true, 2 * time.Second, "http_503: 503 Service Unavailable (Retry-After 2s)"},
		{"503 HTTP-date", 503, now.Add(3 * time.Second).Format(http.TimeFormat), connerr.HTTP503, true, 3 * time.Second, "http_503: 503 Service Unavailable (Retry-After 3s)"},
		{"503 huge value capped", 503, "99999999999999999999", connerr.HTTP503, true, time.Minute, "http_503: 503 Service Unavailable (Retry-After 1m0s)"},
		{"503 malformed hint ignored", 503, "soon", connerr.HTTP503, true, 0, "http_503: 503 Service Unavailable"},
		// A load balancer's 502 and 504 carry their hint too.
		{"502 with hint", 502, "2", connerr.HTTP502, true, 2 * time.Second, "http_502: 502 Bad Gateway (Retry-After 2s)"},
		{"504 with hint", 504, "1", connerr.HTTP504, true, time.Second, "http_504: 504 Gateway Timeout (Retry-After 1s)"},
		// Another 5xx's Retry-After is not a hint a client honours.
		{"500 hint not honoured", 500, "2", connerr.Handshake5xx, true, 0, "handshake_5xx: 500 Internal Server Error"},
		{"500 without hint", 500, "", connerr.Handshake5xx, true, 0, "handshake_5xx: 500 Internal Server Error"},
		{"401 hint not carried", 401, "5", connerr.Handshake4xx, false, 0, "handshake_4xx: 401 Unauthorized"},
		{"200 is not an upgrade", 200, "", connerr.Protocol, true, 0, "protocol: 200 OK"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hdr := map[string]string{}
			if tc.retryAfter != "" {
				hdr["Retry-After"] = tc.retryAfter
			}
			url := statusServer(t, tc.status, hdr)
			d := &Dialer{MaxRetryAfter: time.Minute, Now: func() time.Time { return now }}
			_, err := dial(t, d, url)
			e := wantClass(t, err, tc.class, tc.retryable)
			if e.Status != tc.status || e.RetryAfter != tc.wait {
				t.Errorf("Status %d RetryAfter %v, want %d %v", e.Status, e.RetryAfter, tc.status, tc.wait)
			}
			if e.Error() != tc.text {
				t.Errorf("text %q, want %q", e.Error(), tc.text)
			}
		})
	}
}

// The server resets (SO_LINGER 0) after reading the upgrade request: reset.
func TestDialResetDuringHandshake(t *testing.T) {
	addr := tcpServer(t, func(c net.Conn) {
		c.Read(make([]byte, 4096))
		c.(*net.TCPConn).SetLinger(0)
	})
	_, err := dial(t, &Dialer{}, "ws://"+addr+"/")
	e := wantClass(t, err, connerr.Reset, true)
	if !errors.Is(e, syscall.ECONNRESET) {
		t.Errorf("error %v does not wrap ECONNRESET", e)
	}
}

// The server closes (FIN) without answering the upgrade: also reset.
func TestDialEOFDuringHandshake(t *testing.T) {
	addr := tcpServer(t, func(c net.Conn) { c.Read(make([]byte, 4096)) })
	_, err := dial(t, &Dialer{}, "ws://"+addr+"/")
	wantClass(t, err, connerr.Reset, true)
}

// A bad URL or Dialer fails before any socket: local, with the reason.
func TestDialBadInput(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    Dialer
		url  string
	}{
		{"http scheme", Dialer{}, "http://127.0.0.1:1/"},
		{"no host", Dialer{}, "ws:///path"},
		{"not a URL", Dialer{}, "127.0.0.1:1"},
		{"invalid dialer", Dialer{SynRetries: -1}, "ws://127.0.0.1:1/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := dial(t, &tc.d, tc.url)
			wantClass(t, err, connerr.Local, true)
		})
	}
}
