package connerr

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"
	"golang.org/x/sys/unix"
)

// opErr builds the *net.OpError a net.Dialer or a conn Read returns around
// an errno.
func opErr(op string, errno syscall.Errno) error {
	return &net.OpError{Op: op, Net: "tcp", Err: os.NewSyscallError(op, errno)}
}

func TestClassifyPhase(t *testing.T) {
	for _, tc := range []struct {
		name  string
		err   error
		phase Phase
		want  Class
	}{
		{"nil is none", nil, PhaseDial, None},
		{"SO_ERROR 0 is none", syscall.Errno(0), PhaseDial, None},
		{"classified error keeps its class", &Error{Class: TLS, Err: io.EOF}, PhaseEstablished, TLS},
		{"wrapped classified error", fmt.Errorf("attempt 3: %w", &Error{Class: Refused}), PhaseDial, Refused},

		// Resolution.
		{"dns not found", &net.OpError{Op: "dial", Err: &net.DNSError{Err: "no such host", Name: "x.invalid", IsNotFound: true}}, PhaseDial, DNS},
		{"dns timeout is dns, not timeout", &net.DNSError{Err: "i/o timeout", IsTimeout: true}, PhaseDial, DNS},

		// Connect: raw errnos as an epoll loadgen sees them, and net's wrapping.
		{"raw ECONNREFUSED", unix.ECONNREFUSED, PhaseDial, Refused},
		{"dial refused", opErr("connect", syscall.ECONNREFUSED), PhaseDial, Refused},
		{"raw ETIMEDOUT", unix.ETIMEDOUT, PhaseDial, Timeout},
		{"dial deadline", &net.OpError{Op: "dial", Err: os.ErrDeadlineExceeded}, PhaseDial, Timeout},
		{"context deadline in dial", context.DeadlineExceeded, PhaseDial, Timeout},
		{"context cancelled in dial", context.Canceled, PhaseDial, Timeout},
		{"raw EHOSTUNREACH", unix.EHOSTUNREACH, PhaseDial, Refused},
		{"raw ECONNRESET in dial", unix.ECONNRESET, PhaseDial, Reset},
		{"out of ephemeral ports", opErr("connect", syscall.EADDRNOTAVAIL), PhaseDial, Local},
		{"out of file descriptors", opErr("socket", syscall.EMFILE), PhaseDial, Local},
		{"malformed address", &net.AddrError{Err: "missing port in address", Addr: "x"}, PhaseDial, Local},
		{"unknown error in dial", errors.New("something"), PhaseDial, Local},

		// Handshake: TCP connected, waiting for TLS and the 101.
		{"tls unknown authority", &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}, PhaseHandshake, TLS},
		{"x509 hostname", x509.HostnameError{Host: "a"}, PhaseHandshake, TLS},
		{"tls alert received", &net.OpError{Op: "remote error", Err: tls.AlertError(42)}, PhaseHandshake, TLS},
		{"tls to a plain server", tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}, PhaseHandshake, TLS},
		{"upgrade 401", ws.StatusError(401), PhaseHandshake, Handshake4xx},
		{"upgrade 429", ws.StatusError(429), PhaseHandshake, Handshake4xx},
		{"upgrade 503", ws.StatusError(503), PhaseHandshake, HTTP503},
		{"upgrade 200 is protocol", ws.StatusError(200), PhaseHandshake, Protocol},
		{"upgrade 302 is protocol", ws.StatusError(302), PhaseHandshake, Protocol},
		{"bad status without code", ws.ErrHandshakeBadStatus, PhaseHandshake, Protocol},
		{"bad Sec-WebSocket-Accept", ws.ErrHandshakeBadSecAccept, PhaseHandshake, Protocol},
		{"bad subprotocol", ws.ErrHandshakeBadSubProtocol, PhaseHandshake, Protocol},
		{"malformed answer", ws.ErrMalformedResponse, PhaseHandshake, Protocol},
		{"EOF before 101 is reset", io.EOF, PhaseHandshake, Reset},
		{"unexpected EOF before 101", io.ErrUnexpectedEOF, PhaseHandshake, Reset},
		{"reset before 101", opErr("read", syscall.ECONNRESET), PhaseHandshake, Reset},
		{"EPIPE writing the upgrade", opErr("write", syscall.EPIPE), PhaseHandshake, Reset},
		{"read deadline before 101", &net.OpError{Op: "read", Err: os.ErrDeadlineExceeded}, PhaseHandshake, HandshakeTimeout},
		{"context deadline before 101", context.DeadlineExceeded, PhaseHandshake, HandshakeTimeout},
		{"ETIMEDOUT before 101", unix.ETIMEDOUT, PhaseHandshake, HandshakeTimeout},
		{"unknown error in handshake", errors.New("something"), PhaseHandshake, Protocol},

		// Established.
		{"close 1001", wsutil.ClosedError{Code: ws.StatusGoingAway, Reason: "restart"}, PhaseEstablished, Closed1001},
		// A server restarting for a deploy (1012) or shedding load (1013).
		{"close 1012", wsutil.ClosedError{Code: 1012, Reason: "service restart"}, PhaseEstablished, Closed1012},
		{"close 1013", wsutil.ClosedError{Code: 1013, Reason: "try again later"}, PhaseEstablished, Closed1013},
		{"close 1011 is protocol", wsutil.ClosedError{Code: 1011}, PhaseEstablished, Protocol},
		{"close 1000", wsutil.ClosedError{Code: ws.StatusNormalClosure}, PhaseEstablished, Protocol},
		{"close 1011", wsutil.ClosedError{Code: ws.StatusInternalServerError}, PhaseEstablished, Protocol},
		{"synthetic close 1006", wsutil.ClosedError{Code: ws.StatusAbnormalClosure}, PhaseEstablished, Closed1006},
		{"EOF established", io.EOF, PhaseEstablished, Closed1006},
		{"reset established", opErr("read", syscall.ECONNRESET), PhaseEstablished, Closed1006},
		{"ETIMEDOUT established", opErr("read", syscall.ETIMEDOUT), PhaseEstablished, Closed1006},
		{"read deadline established", &net.OpError{Op: "read", Err: os.ErrDeadlineExceeded}, PhaseEstablished, Closed1006},
		{"bad frame", ws.ProtocolError("control frame is fragmented"), PhaseEstablished, Protocol},
		{"invalid utf8", wsutil.ErrInvalidUTF8, PhaseEstablished, Protocol},
		{"unknown error established", errors.New("something"), PhaseEstablished, Closed1006},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ClassifyPhase(tc.err, tc.phase); got != tc.want {
				t.Errorf("ClassifyPhase(%v, %v) = %v, want %v", tc.err, tc.phase, got, tc.want)
			}
		})
	}
}

func TestClassifyIsDialPhase(t *testing.T) {
	if got := Classify(io.EOF); got != Reset {
		t.Errorf("Classify(EOF) = %v, want reset", got)
	}
	if got := Classify(unix.ETIMEDOUT); got != Timeout {
		t.Errorf("Classify(ETIMEDOUT) = %v, want timeout", got)
	}
}

func TestClassifyStatus(t *testing.T) {
	for _, tc := range []struct {
		status int
		want   Class
	}{
		{101, None}, {200, Protocol}, {301, Protocol}, {400, Handshake4xx}, {401, Handshake4xx},
		{429, Handshake4xx}, {499, Handshake4xx}, {500, Handshake5xx}, {501, Handshake5xx},
		// A load balancer's answers while its backends restart: one class each.
		{502, HTTP502}, {503, HTTP503}, {504, HTTP504}, {505, Handshake5xx},
		{599, Handshake5xx}, {600, Protocol}, {0, Protocol},
	} {
		if got := ClassifyStatus(tc.status); got != tc.want {
			t.Errorf("ClassifyStatus(%d) = %v, want %v", tc.status, got, tc.want)
		}
	}
}

func TestErrorText(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp",
		Addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9},
		Err:  os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	for _, tc := range []struct {
		name      string
		err       *Error
		want      string
		retryable bool
	}{
		{"refused", Wrap(refused, PhaseDial), "refused: dial tcp 127.0.0.1:9: connect: connection refused", true},
		{"503 with hint", &Error{Class: HTTP503, Status: 503, RetryAfter: 2 * time.Second, Err: ws.StatusError(503)},
			"http_503: 503 Service Unavailable (Retry-After 2s)", true},
		{"401", Wrap(ws.StatusError(401), PhaseHandshake), "handshake_4xx: 401 Unauthorized", false},
		{"429", Wrap(ws.StatusError(429), PhaseHandshake), "handshake_4xx: 429 Too Many Requests", true},
		{"unknown status text", Wrap(ws.StatusError(499), PhaseHandshake), "handshake_4xx: 499", false},
		{"tls", Wrap(x509.UnknownAuthorityError{}, PhaseHandshake), "tls: x509: certificate signed by unknown authority", false},
		{"close 1001", Wrap(wsutil.ClosedError{Code: 1001, Reason: "bye"}, PhaseEstablished), "closed_1001: ws closed: 1001 bye", true},
		{"class only", &Error{Class: Closed1006}, "closed_1006", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.err.Error(); got != tc.want {
				t.Errorf("Error() = %q, want %q", got, tc.want)
			}
			if got := tc.err.Retryable(); got != tc.retryable {
				t.Errorf("Retryable() = %v, want %v", got, tc.retryable)
			}
		})
	}
}

func TestWrap(t *testing.T) {
	if Wrap(nil, PhaseDial) != nil {
		t.Fatal("Wrap(nil) is not nil")
	}
	inner := &Error{Class: Timeout}
	if got := Wrap(&url.Error{Op: "Get", URL: "http://x", Err: inner}, PhaseDial); got != inner {
		t.Errorf("Wrap did not return the carried *Error: %v", got)
	}
	e := Wrap(fmt.Errorf("upgrade: %w", ws.StatusError(503)), PhaseHandshake)
	if e.Class != HTTP503 || e.Status != 503 {
		t.Errorf("Wrap(503) = %+v", e)
	}
	if !errors.Is(Wrap(io.EOF, PhaseEstablished), io.EOF) {
		t.Error("Unwrap lost io.EOF")
	}
}

// TestClassifyAllocs: classifying a refused connect, what a reconnect herd
// does thousands of times a second, allocates little; the TLS check alone
// used to allocate nine times (errors.As targets moved to the heap).
func TestClassifyAllocs(t *testing.T) {
	err := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	if n := testing.AllocsPerRun(100, func() { ClassifyPhase(err, PhaseDial) }); n > 6 {
		t.Errorf("ClassifyPhase allocated %v times", n)
	}
}
