package tlsconf

import (
	"crypto/tls"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// The TLS versions a server may be capped at.
const (
	Version12 = "1.2"
	Version13 = "1.3"
)

// ServerOptions configures a Server. The zero value serves a fresh
// ECDSA P-256 certificate, TLS 1.2 and 1.3, with session tickets whose
// keys crypto/tls keeps in memory.
type ServerOptions struct {
	// CertFile and KeyFile are the user's PEM certificate and key; empty:
	// a self-signed certificate of Kind drawn at start.
	CertFile, KeyFile string
	// Kind is the kind of the self-signed certificate. Default ECDSAP256.
	Kind Kind
	// MaxVersion is the highest version offered, Version12 or Version13.
	// Default Version13.
	MaxVersion string
	// NoTickets turns session tickets off: every handshake is full.
	NoTickets bool
	// TicketKeys is a ticket-key file (KeyFile.Path) whose keys survive a
	// restart; empty: keys in memory, lost when the process exits.
	TicketKeys string
	// Rotate is KeyFile.Rotate: 0, never.
	Rotate time.Duration
	// Reload is how often the key file is read again, so a rotation by a
	// sibling or by hand is taken up. Default a minute.
	Reload time.Duration
}

// Server is the TLS side of one server process: its tls.Config and its
// handshake counts.
type Server struct {
	cfg   *tls.Config
	keys  *KeyFile
	stats counters
	stop  chan struct{}
	once  sync.Once
}

// counters is the live form of Stats.
type counters struct {
	full, resumed, fullNS, resumedNS atomic.Uint64
}

// NewServer builds the TLS of a server from o: it loads or draws the
// certificate and reads (creating or rotating) the ticket-key file. Close
// it to stop reading the key file again.
func NewServer(o ServerOptions) (*Server, error) {
	var cert tls.Certificate
	var err error
	if o.CertFile != "" {
		cert, err = tls.LoadX509KeyPair(o.CertFile, o.KeyFile)
	} else {
		if o.Kind == "" {
			o.Kind = ECDSAP256
		}
		cert, err = SelfSigned(o.Kind)
	}
	if err != nil {
		return nil, fmt.Errorf("tls: %w", err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS13, SessionTicketsDisabled: o.NoTickets}
	switch o.MaxVersion {
	case "", Version13:
	case Version12:
		cfg.MaxVersion = tls.VersionTLS12
	default:
		return nil, fmt.Errorf("tls: version %q: want %s or %s", o.MaxVersion, Version12, Version13)
	}
	s := &Server{cfg: cfg, stop: make(chan struct{})}
	if o.TicketKeys != "" && !o.NoTickets {
		s.keys = &KeyFile{Path: o.TicketKeys, Rotate: o.Rotate}
		if err := s.reload(); err != nil {
			return nil, err
		}
		reload := o.Reload
		if reload <= 0 {
			reload = time.Minute
		}
		go s.reloadEvery(reload)
	}
	return s, nil
}

// Config returns the tls.Config to serve with.
func (s *Server) Config() *tls.Config { return s.cfg }

// reload reads the key file into the config.
func (s *Server) reload() error {
	keys, err := s.keys.Refresh()
	if err != nil {
		return fmt.Errorf("tls: %w", err)
	}
	s.cfg.SetSessionTicketKeys(keys)
	return nil
}

// reloadEvery reads the key file every d until Close. A failed read keeps
// the keys it had.
func (s *Server) reloadEvery(d time.Duration) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			s.reload()
		case <-s.stop:
			return
		}
	}
}

// Close stops reading the key file.
func (s *Server) Close() { s.once.Do(func() { close(s.stop) }) }
