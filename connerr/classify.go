package connerr

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"os"
	"syscall"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"
)

// Phase is where in a connection's life an error happened. The same error
// means different things in different phases: io.EOF while waiting for the
// 101 answer is a reset attempt, io.EOF on an established connection is a
// close without a close frame (1006).
type Phase uint8

const (
	// PhaseDial covers name resolution and the TCP connect (SYN sent, no
	// connection yet). A raw errno from a non-blocking connect's SO_ERROR
	// belongs here.
	PhaseDial Phase = iota
	// PhaseHandshake covers a TCP-connected attempt until the 101 answer:
	// the TLS handshake and the HTTP upgrade.
	PhaseHandshake
	// PhaseEstablished covers a WebSocket connection after its 101 answer.
	PhaseEstablished
)

// String returns the phase's name: dial, handshake or established.
func (p Phase) String() string {
	switch p {
	case PhaseDial:
		return "dial"
	case PhaseHandshake:
		return "handshake"
	case PhaseEstablished:
		return "established"
	}
	return "phase(?)"
}

// Classify returns the class of an error from a connection attempt that has
// not connected yet (PhaseDial): ClassifyPhase(err, PhaseDial). It accepts
// Go errors from net, crypto/tls, crypto/x509 and gobwas/ws, and bare errnos
// such as unix.ECONNREFUSED read from SO_ERROR (a zero errno is None).
func Classify(err error) Class {
	return ClassifyPhase(err, PhaseDial)
}

// ClassifyPhase returns the class of err, which happened in phase. The rules,
// first match wins:
//
//	nil, syscall.Errno(0)                          -> None
//	*Error anywhere in the chain                   -> its Class
//	*net.DNSError (also a DNS timeout)             -> DNS
//	x509 / tls verification, alert, record errors  -> TLS
//	ws.StatusError (the upgrade's status)          -> ClassifyStatus
//	wsutil.ClosedError (a close frame)             -> ClassifyClose
//	errno ECONNREFUSED                             -> Refused
//	errno ENETUNREACH, EHOSTUNREACH, EHOSTDOWN,
//	  ENETDOWN, EACCES, EPERM                      -> Refused in dial, else as a reset
//	errno ECONNRESET, EPIPE, ECONNABORTED,
//	  ENOTCONN, ESHUTDOWN                          -> Reset; Closed1006 when established
//	errno ETIMEDOUT                                -> as a timeout (below)
//	errno EADDRNOTAVAIL, EADDRINUSE, EMFILE,
//	  ENFILE, ENOBUFS, ENOMEM, EAGAIN              -> Local
//	timeout (net.Error.Timeout, os.ErrDeadlineExceeded,
//	  context.DeadlineExceeded), context.Canceled  -> Timeout in dial, HandshakeTimeout
//	                                                  in handshake, Closed1006 when established
//	io.EOF, io.ErrUnexpectedEOF, net.ErrClosed     -> Reset; Closed1006 when established
//	WebSocket protocol errors (ws.ProtocolError, bad
//	  101 headers, malformed answer, bad frames)   -> Protocol
//	*net.AddrError, *net.ParseError, unknown
//	  network                                      -> Local
//	anything else                                  -> Local in dial, Protocol in handshake,
//	                                                  Closed1006 when established
//
// A cancelled attempt counts as a timeout of its phase: the attempt gave up
// waiting. An ended established connection is 1006 whatever the transport
// said, because no close frame arrived (FIELD-NOTES: EOF and ECONNRESET both
// mean a server that went away without closing).
func ClassifyPhase(err error, phase Phase) Class {
	if err == nil {
		return None
	}
	var ce *Error
	if errors.As(err, &ce) && ce.Class != None {
		return ce.Class
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return DNS
	}
	if isTLS(err) {
		return TLS
	}
	var status ws.StatusError
	if errors.As(err, &status) {
		return ClassifyStatus(int(status))
	}
	var closed wsutil.ClosedError
	if errors.As(err, &closed) {
		return ClassifyClose(closed.Code)
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		if c, ok := classifyErrno(errno, phase); ok {
			return c
		}
	}
	if isTimeout(err) || errors.Is(err, context.Canceled) {
		return timeoutClass(phase)
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) {
		return endClass(phase)
	}
	if isProtocol(err) {
		return Protocol
	}
	if isAddress(err) {
		return Local
	}
	switch phase {
	case PhaseDial:
		return Local
	case PhaseHandshake:
		return Protocol
	}
	return Closed1006
}

// ClassifyStatus returns the class of an upgrade answered with an HTTP
// status other than 101: Handshake4xx for 400-499; HTTP502, HTTP503 and
// HTTP504 for those three (what a load balancer answers while its backends
// restart), Handshake5xx for every other 500-599; None for 101 itself and Protocol for anything else (a 200 or a redirect is
// not a WebSocket server's answer; redirects are not followed).
func ClassifyStatus(status int) Class {
	switch {
	case status == 101:
		return None
	case status >= 400 && status <= 499:
		return Handshake4xx
	case status == 502:
		return HTTP502
	case status == 503:
		return HTTP503
	case status == 504:
		return HTTP504
	case status >= 500 && status <= 599:
		return Handshake5xx
	}
	return Protocol
}

// ClassifyClose returns the class of a connection the peer ended with a
// close frame carrying code: Closed1001 for 1001 (going away, what a server
// sends before a restart), Closed1012 for 1012 (service restart) and
// Closed1013 for 1013 (try again later), Closed1006 for 1006 (never sent on the wire, but
// an application may synthesise it for a lost connection) and Protocol for
// every other code, 1000 and 1005 included: a fleet expects to stay
// connected, and the code itself is kept in the error text.
func ClassifyClose(code ws.StatusCode) Class {
	switch code {
	case ws.StatusGoingAway:
		return Closed1001
	case 1012:
		return Closed1012
	case 1013:
		return Closed1013
	case ws.StatusAbnormalClosure:
		return Closed1006
	}
	return Protocol
}

// classifyErrno maps a raw errno; ok is false for errnos left to the later
// rules.
func classifyErrno(errno syscall.Errno, phase Phase) (Class, bool) {
	switch errno {
	case 0:
		return None, true
	case syscall.ECONNREFUSED:
		return Refused, true
	case syscall.ENETUNREACH, syscall.EHOSTUNREACH, syscall.EHOSTDOWN, syscall.ENETDOWN,
		syscall.EACCES, syscall.EPERM:
		if phase == PhaseDial {
			return Refused, true
		}
		return endClass(phase), true
	case syscall.ECONNRESET, syscall.EPIPE, syscall.ECONNABORTED, syscall.ENOTCONN, syscall.ESHUTDOWN:
		return endClass(phase), true
	case syscall.ETIMEDOUT:
		return timeoutClass(phase), true
	case syscall.EADDRNOTAVAIL, syscall.EADDRINUSE, syscall.EMFILE, syscall.ENFILE,
		syscall.ENOBUFS, syscall.ENOMEM, syscall.EAGAIN:
		return Local, true
	}
	return None, false
}

// timeoutClass is the class of a wait that ran out in phase.
func timeoutClass(phase Phase) Class {
	switch phase {
	case PhaseDial:
		return Timeout
	case PhaseHandshake:
		return HandshakeTimeout
	}
	return Closed1006
}

// endClass is the class of a connection that ended (EOF, reset) in phase.
func endClass(phase Phase) Class {
	if phase == PhaseEstablished {
		return Closed1006
	}
	return Reset
}

// isTimeout reports a deadline that passed: a net.Error with Timeout (which
// covers os.ErrDeadlineExceeded and context.DeadlineExceeded).
func isTimeout(err error) bool {
	if errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// isTLS reports a TLS failure: a certificate the client rejected, an alert
// either side sent (crypto/tls wraps alerts in a *net.OpError whose Op is
// "remote error" or "local error"), or a peer that does not speak TLS.
func isTLS(err error) bool {
	// A walk of the chain with a type switch, as errors.As would find
	// them: errors.As with a local target moves it to the heap, and nine
	// of them cost every classified failure about 200 bytes of garbage
	// (most of a loadgen's in a reconnect herd).
	var op *net.OpError // the first in the chain, as errors.As finds it
	tlsErr := inChain(err, func(e error) bool {
		switch e := e.(type) {
		case *tls.CertificateVerificationError, tls.AlertError, tls.RecordHeaderError, *tls.ECHRejectionError,
			x509.UnknownAuthorityError, x509.HostnameError, x509.CertificateInvalidError, x509.SystemRootsError,
			x509.InsecureAlgorithmError:
			return true
		case *net.OpError:
			if op == nil {
				op = e
			}
		}
		return false
	})
	if tlsErr {
		return true
	}
	return op != nil && (op.Op == "remote error" || op.Op == "local error")
}

// inChain reports whether match is true of err or an error it wraps,
// depth first through Unwrap() error and Unwrap() []error, in the order
// errors.As visits them.
func inChain(err error, match func(error) bool) bool {
	for err != nil {
		if match(err) {
			return true
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if inChain(e, match) {
					return true
				}
			}
			return false
		default:
			return false
		}
	}
	return false
}

// protocolErrors are gobwas/ws sentinels for a peer that broke the protocol.
var protocolErrors = []error{
	ws.ErrHandshakeBadStatus,
	ws.ErrHandshakeBadSubProtocol,
	ws.ErrHandshakeBadExtensions,
	ws.ErrMalformedResponse,
	ws.ErrHeaderLengthMSB,
	ws.ErrHeaderLengthUnexpected,
	wsutil.ErrInvalidUTF8,
	wsutil.ErrFrameTooLarge,
	wsutil.ErrMessageTooLarge,
	wsutil.ErrNotControlFrame,
}

// isProtocol reports a WebSocket protocol violation: a bad frame, a bad 101
// answer (gobwas returns its *ws.ConnectionRejectedError values, such as
// ErrHandshakeBadUpgrade, on the client side too) or a malformed response.
func isProtocol(err error) bool {
	var (
		pe  ws.ProtocolError
		rej *ws.ConnectionRejectedError
	)
	if errors.As(err, &pe) || errors.As(err, &rej) {
		return true
	}
	for _, target := range protocolErrors {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

// isAddress reports an address this host could not use: a malformed host or
// port, or an unknown network.
func isAddress(err error) bool {
	var (
		addr    *net.AddrError
		parse   *net.ParseError
		network net.UnknownNetworkError
	)
	return errors.As(err, &addr) || errors.As(err, &parse) || errors.As(err, &network)
}
