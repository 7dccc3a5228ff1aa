package tlsconf

import (
	"crypto/tls"
	"sync/atomic"
)

// Session is one client's session cache, as a browser keeps one per site:
// the last session the server gave it, offered at its next handshake (a
// TLS 1.3 PSK or a TLS 1.2 ticket). It holds one pointer, where
// tls.NewLRUClientSessionCache(1) holds a map and a list; a client of a
// fleet talks to one server, so the cache key (the server's name) is not
// kept. A client's TLS 1.3 tickets arrive while it reads, so it may be
// written while the client dials again: the pointer is atomic.
type Session struct {
	st atomic.Pointer[tls.ClientSessionState]
}

// Get returns the session held, if any.
func (s *Session) Get(string) (*tls.ClientSessionState, bool) {
	st := s.st.Load()
	return st, st != nil
}

// Put holds st (nil: forget the session).
func (s *Session) Put(_ string, st *tls.ClientSessionState) { s.st.Store(st) }

// Held reports whether a session is held.
func (s *Session) Held() bool { return s.st.Load() != nil }
