package target

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gobwas/ws"
	"github.com/stampede-dev/stampede/internal/clock"
)

// ErrServerClosed is returned by the runtime controls once Shutdown began.
var ErrServerClosed = errors.New("target: server closed")

// Server is a running target: a listener, an accept loop, a bounded pool of
// upgrading goroutines, and an epoll reactor with a fixed pool of workers
// that serve the connections. Its methods are safe for concurrent use.
type Server struct {
	cfg     Config
	ln      *Listener
	tls     *tls.Config
	reactor *reactor
	clock   clock.Clock

	gate    gate          // when to accept; see accept.go
	retries retryTracker  // Retry-After bookkeeping; see reject.go
	upSem   chan struct{} // one token per upgrade in progress
	work    chan *Conn    // readable connections, from the reactor to workers
	live    atomic.Int64  // connections admitted (upgrading or open), for MaxConns
	nextID  atomic.Uint64
	stats   counters
	proto   *Protocol // the message protocol's handler and store, when Config.Store is set
	http    *httpEndpoint

	mu       sync.RWMutex
	conns    connTable
	pending  map[net.Conn]struct{} // connections being upgraded
	stopping bool
	drained  chan struct{} // closed when conns becomes empty during a graceful shutdown

	readyOnce sync.Once
	ready     chan struct{}
	readyAt   time.Time

	stopOnce sync.Once
	stopCh   chan struct{} // closed when Shutdown begins
	done     chan struct{} // closed when Shutdown is complete
	acceptWG sync.WaitGroup
	wg       sync.WaitGroup // reactor and workers
}

// Start validates cfg, listens, and starts serving. It returns once the
// socket listens; Ready is closed when accepting begins (after Hold). The
// server runs until Shutdown.
func Start(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	proto, err := startProtocol(&cfg)
	if err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	s := &Server{
		cfg:     cfg,
		clock:   cfg.Clock,
		upSem:   make(chan struct{}, cfg.Upgraders),
		work:    make(chan *Conn, cfg.Workers),
		pending: make(map[net.Conn]struct{}),
		ready:   make(chan struct{}),
		stopCh:  make(chan struct{}),
		done:    make(chan struct{}),
		proto:   proto,
	}
	s.retries.init()
	if r := cfg.StartReject; r != nil {
		// Before the first accept: nobody is admitted in the window.
		s.retries.status, s.retries.retryAfter, s.retries.until = r.Status, r.RetryAfter, s.clock.Now().Add(r.For)
	}
	if cfg.TLS {
		if s.tls, err = serverTLS(cfg.CertFile, cfg.KeyFile); err != nil {
			closeProtocol(proto)
			return nil, err
		}
	}
	if s.reactor, err = newReactor(); err != nil {
		closeProtocol(proto)
		return nil, err
	}
	presizeFDTable(s.reactor.ep.FD())
	if s.ln, err = Listen(cfg.Addr, cfg.Backlog); err != nil {
		s.reactor.close()
		closeProtocol(proto)
		return nil, err
	}
	s.gate.init(s.clock.Now(), cfg)
	s.http = newHTTPEndpoint(s)
	go s.http.serve()
	s.wg.Add(1 + cfg.Workers)
	go s.runReactor()
	for range cfg.Workers {
		go s.worker()
	}
	s.acceptWG.Add(1)
	go s.acceptLoop()
	cfg.Logger.Info("target listening", "addr", s.Addr().String(), "backlog", cfg.Backlog, "tls", cfg.TLS, "hold", cfg.Hold)
	return s, nil
}

// Addr returns the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// URL returns the ws:// (or wss://) URL of the server.
func (s *Server) URL() string { return wsURL(s.Addr().String(), s.tls != nil) }

// wsURL is the WebSocket URL of a server at addr.
func wsURL(addr string, tls bool) string {
	if tls {
		return "wss://" + addr + "/"
	}
	return "ws://" + addr + "/"
}

// Ready is closed when the server starts accepting connections.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// ReadyAt returns when the server started accepting (on Config.Clock), or
// the zero time before Ready is closed.
func (s *Server) ReadyAt() time.Time {
	select {
	case <-s.ready:
		return s.readyAt
	default:
		return time.Time{}
	}
}

// Done is closed when Shutdown has completed.
func (s *Server) Done() <-chan struct{} { return s.done }

// markReady closes Ready once, at the first moment the accept loop may
// accept.
func (s *Server) markReady() {
	s.readyOnce.Do(func() {
		s.readyAt = s.clock.Now()
		close(s.ready)
		s.cfg.Logger.Info("target accepting", "addr", s.Addr().String())
	})
}

// register makes an upgraded connection part of the server: the handler
// sees it, then its fd joins the epoll set.
func (s *Server) register(c *Conn) {
	if err := s.cfg.Handler.OnOpen(c); err != nil {
		s.handlerClose(c, err)
		c.closeSocket()
		s.live.Add(-1)
		return
	}
	s.mu.Lock()
	if s.stopping {
		s.mu.Unlock()
		c.closeSocket()
		s.live.Add(-1)
		s.cfg.Handler.OnClose(c, ErrServerClosed)
		return
	}
	s.conns.add(c)
	s.stats.conns.Add(1)
	s.mu.Unlock()
	if err := s.reactor.add(c); err != nil {
		s.closeConn(c, fmt.Errorf("target: epoll add: %w", err))
	}
}

// ShutdownMode is how Shutdown ends the connections.
type ShutdownMode int

const (
	// Graceful sends close 1001 "going away" to every client, waits up to
	// Config.CloseTimeout for their close frames, then closes.
	Graceful ShutdownMode = iota
	// Abrupt closes the listener and every connection without a close
	// frame: clients read EOF (or a reset) and report 1006.
	Abrupt
)

// String returns "graceful" or "abrupt".
func (m ShutdownMode) String() string {
	if m == Abrupt {
		return "abrupt"
	}
	return "graceful"
}

// ParseShutdownMode parses "graceful" or "abrupt".
func ParseShutdownMode(s string) (ShutdownMode, error) {
	switch strings.ToLower(s) {
	case "graceful":
		return Graceful, nil
	case "abrupt":
		return Abrupt, nil
	}
	return 0, fmt.Errorf("target: shutdown mode %q: want graceful or abrupt", s)
}

// Shutdown stops the server: the listener closes at once (new connects are
// refused), upgrades in progress are dropped, and the connections end as
// mode says. It returns when everything is released. Later calls wait for
// the first and return nil.
func (s *Server) Shutdown(mode ShutdownMode) error {
	first := false
	s.stopOnce.Do(func() {
		first = true
		s.shutdown(mode)
	})
	if !first {
		<-s.done
	}
	return nil
}

func (s *Server) shutdown(mode ShutdownMode) {
	s.cfg.Logger.Info("target shutting down", "mode", mode.String())
	s.mu.Lock()
	s.stopping = true
	close(s.stopCh)
	for nc := range s.pending {
		nc.Close()
	}
	s.mu.Unlock()
	s.ln.Close()
	s.acceptWG.Wait() // no upgrade can register from here on
	s.http.srv.Close()

	if mode == Graceful {
		s.goAway()
	}
	for _, c := range s.snapshot() {
		s.closeConn(c, ErrServerClosed)
	}
	s.reactor.stop()
	s.wg.Wait()
	s.reactor.close()
	closeProtocol(s.proto) // after every OnClose: rooms stop, then the store
	close(s.done)
	s.cfg.Logger.Info("target stopped", "mode", mode.String())
}

// goAway sends close 1001 to every connection, then waits until the clients
// have answered (each answer closes its connection) or CloseTimeout passed.
func (s *Server) goAway() {
	s.mu.Lock()
	drained := make(chan struct{})
	if s.conns.n == 0 {
		close(drained)
	} else {
		s.drained = drained
	}
	s.mu.Unlock()
	conns := s.snapshot()
	// A client that does not read can hold a write for WriteTimeout, so the
	// frames go out from several goroutines.
	var wg sync.WaitGroup
	next := make(chan *Conn)
	for range min(len(conns), s.cfg.Workers) {
		wg.Go(func() {
			for c := range next {
				s.sendClose(c, ws.StatusGoingAway, "going away")
			}
		})
	}
	for _, c := range conns {
		next <- c
	}
	close(next)
	wg.Wait()
	select {
	case <-drained:
	case <-s.clock.After(s.cfg.CloseTimeout):
	}
}

// snapshot returns the open connections.
func (s *Server) snapshot() []*Conn {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.conns.all()
}
