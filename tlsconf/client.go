package tlsconf

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"sync/atomic"
	"syscall"
)

// Session is one client's session cache, as a browser keeps one per site:
// the last session the server gave it, offered at its next handshake (a
// TLS 1.3 PSK or a TLS 1.2 ticket). It holds two pointers, where
// tls.NewLRUClientSessionCache(1) holds a map and a list; a client of a
// fleet talks to one server, so the cache key (the server's name) is not
// kept. A client's TLS 1.3 tickets arrive while it reads, so it may be
// written while the client dials again: the pointers are atomic.
//
// crypto/tls forgets the session (Put with nil) when any handshake that
// offered it fails, a connection the server reset or never answered
// included. A browser keeps its session for a connection that never
// reached the server; so does Session when told of the failure (Failed).
type Session struct {
	st      atomic.Pointer[tls.ClientSessionState]
	dropped atomic.Pointer[tls.ClientSessionState] // the session the last Put(nil) forgot
}

// Get returns the session held, if any.
func (s *Session) Get(string) (*tls.ClientSessionState, bool) {
	st := s.st.Load()
	return st, st != nil
}

// Put holds st (nil: forget the session, until Failed brings it back).
func (s *Session) Put(_ string, st *tls.ClientSessionState) {
	if st == nil {
		if old := s.st.Swap(nil); old != nil {
			s.dropped.Store(old)
		}
		return
	}
	s.dropped.Store(nil)
	s.st.Store(st)
}

// Failed tells the session that a handshake failed with err. A transport
// failure (TransportError: reset, closed or timed out before the server
// answered) brings back the session crypto/tls forgot, as a browser keeps
// it; a TLS failure (an alert, a certificate, a peer not speaking TLS)
// leaves it forgotten, as RFC 5077 asks.
func (s *Session) Failed(err error) {
	d := s.dropped.Swap(nil)
	if d != nil && TransportError(err) {
		s.st.CompareAndSwap(nil, d)
	}
}

// Held reports whether a session is held.
func (s *Session) Held() bool { return s.st.Load() != nil }

// TransportError reports whether err is a failure of the connection under
// TLS rather than of TLS itself: the peer closed or reset it, it was
// refused, or a deadline or context ended the attempt. Alerts received or
// sent (crypto/tls's *net.OpError "remote error" and "local error") are
// not.
func TransportError(err error) bool {
	if err == nil {
		return false
	}
	var op *net.OpError
	if errors.As(err, &op) && (op.Op == "remote error" || op.Op == "local error") {
		return false
	}
	for _, e := range []error{io.EOF, io.ErrUnexpectedEOF, syscall.ECONNRESET, syscall.ECONNREFUSED,
		syscall.ECONNABORTED, syscall.EPIPE, syscall.ETIMEDOUT, os.ErrDeadlineExceeded,
		context.DeadlineExceeded, context.Canceled, net.ErrClosed} {
		if errors.Is(err, e) {
			return true
		}
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
