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
	"github.com/stampede-dev/stampede/connerr"
	"github.com/stampede-dev/stampede/internal/clock"
	"github.com/stampede-dev/stampede/session/serve"
	"github.com/stampede-dev/stampede/spec"
	"github.com/stampede-dev/stampede/target/listener"
	"github.com/stampede-dev/stampede/tlsconf"
)

// ErrServerClosed is returned by the runtime controls once Shutdown began.
var ErrServerClosed = errors.New("target: server closed")

// Server is a running target: a listener, an accept loop, a bounded pool of
// upgrading goroutines, and an epoll reactor with a fixed pool of workers
// that serve the connections. Its methods are safe for concurrent use.
type Server struct {
	cfg     Config
	ln      *listener.Listener
	tls     *tls.Config
	tlsSrv  *tlsconf.Server // its handshake counts; nil for ws://
	reactor *reactor
	clock   clock.Clock

	gate    gate          // when to accept; see accept.go
	retries retryTracker  // Retry-After bookkeeping; see reject.go
	rand    lockedRand    // seeded draws; see rand.go
	upSem   chan struct{} // one token per upgrade in progress
	work    chan *Conn    // readable connections, from the reactor to workers
	live    atomic.Int64  // connections admitted (upgrading or open), for MaxConns
	nextID  atomic.Uint64
	stats   counters
	proto   *Protocol     // the message protocol's handler and store, when Config.Store is set
	sess    *serve.Server // Config.Session's server, when it names one
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
	stopCh   chan struct{}  // closed when Shutdown begins
	done     chan struct{}  // closed when Shutdown is complete
	acceptWG sync.WaitGroup // the accept loop, upgrade goroutines, the waiting goroutine
	waiting  *waiting       // connections waiting for their requests (inlineUpgrades)
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
	sess, err := startSession(&cfg) // its pings start with a connection
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
		sess:    sess,
	}
	s.retries.init()
	s.rand.init(cfg.Seed)
	if r := cfg.StartReject; r != nil {
		// Before the first accept: nobody is admitted in the window.
		s.retries.status, s.retries.retryAfter, s.retries.until = r.Status, r.RetryAfter, s.clock.Now().Add(r.For)
	}
	if cfg.TLS {
		if s.tlsSrv, err = serverTLS(cfg.Server); err != nil {
			closeProtocol(proto)
			return nil, err
		}
		s.tls = s.tlsSrv.Config()
	}
	if s.reactor, err = newReactor(); err != nil {
		closeProtocol(proto)
		return nil, err
	}
	presizeFDTable(s.reactor.ep.FD())
	if s.ln, err = listener.Listen(cfg.Addr, cfg.Backlog); err != nil {
		s.reactor.close()
		closeProtocol(proto)
		return nil, err
	}
	if err = s.ln.DeferAccept(deferAccept); err != nil {
		s.ln.Close()
		s.reactor.close()
		closeProtocol(proto)
		return nil, err
	}
	if s.inlineUpgrades() {
		if s.waiting, err = newWaiting(); err != nil {
			s.ln.Close()
			s.reactor.close()
			closeProtocol(proto)
			return nil, fmt.Errorf("target: %w", err)
		}
	}
	s.gate.init(s.clock.Now(), cfg)
	s.http = newHTTPEndpoint(s)
	go s.http.serve()
	s.wg.Add(1 + cfg.Workers)
	go s.runReactor()
	for range cfg.Workers {
		go s.worker()
	}
	if s.waiting != nil {
		s.acceptWG.Add(1)
		go s.waitRequests()
	}
	s.acceptWG.Add(1)
	go s.acceptLoop()
	cfg.Logger.Info("target listening", "addr", s.Addr().String(), "backlog", cfg.Backlog, "tls", cfg.TLS, "hold", cfg.Hold)
	return s, nil
}

// Addr returns the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// URL returns the ws:// (or wss://) URL of the server.
func (s *Server) URL() string { return WSURL(s.Addr().String(), s.tls != nil) }

// WSURL is the WebSocket URL of a server at addr, wss:// with tls.
func WSURL(addr string, tls bool) string {
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
		s.gate.mu.Lock()
		s.gate.startRampLocked(s.readyAt)
		s.gate.mu.Unlock()
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

// ShutdownOptions says how Shutdown ends the connections.
type ShutdownOptions struct {
	// Mode is Graceful (close frames) or Abrupt (none).
	Mode ShutdownMode
	// Spread, graceful only, sends the close frames spread evenly over
	// it, in a seeded random order (Config.Seed): the first at once, the
	// last after Spread. 0 sends them all at once.
	Spread time.Duration
	// Hint, graceful only, closes each client with 1013 (try again later)
	// and a delay in the reason (connerr.CloseHintReason) drawn uniformly
	// from [HintAfter, HintAfter+Hint), so the fleet comes back spread over
	// the window. 0 closes with 1001 "going away".
	Hint time.Duration
	// HintAfter is the least delay hinted (a restart's down time).
	HintAfter time.Duration
}

// Validate reports a negative duration or a spread or hint of an abrupt
// shutdown, naming the control parameter.
func (o ShutdownOptions) Validate() error {
	switch {
	case o.Spread < 0:
		return spec.Errorf("spread", "must not be negative")
	case o.Hint < 0:
		return spec.Errorf("hint", "must not be negative")
	case o.HintAfter < 0:
		return spec.Errorf("hint_after", "must not be negative")
	case o.Mode == Abrupt && (o.Spread > 0 || o.Hint > 0):
		return spec.Errorf("mode", "spread and hint shape close frames, which only a graceful shutdown sends")
	}
	return nil
}

// Shutdown stops the server: the listener closes at once (new connects are
// refused), upgrades in progress are dropped, and the connections end as
// mode says. It returns when everything is released. Later calls wait for
// the first and return nil.
func (s *Server) Shutdown(mode ShutdownMode) error {
	return s.ShutdownWith(ShutdownOptions{Mode: mode})
}

// ShutdownWith is Shutdown with the close frames shaped by o: spread over
// o.Spread, and with o.Hint a 1013 whose reason tells each client when to
// come back. It returns an error, and does nothing, for invalid options.
func (s *Server) ShutdownWith(o ShutdownOptions) error {
	if err := o.Validate(); err != nil {
		return err
	}
	first := false
	s.stopOnce.Do(func() {
		first = true
		s.shutdown(o)
	})
	if !first {
		<-s.done
	}
	return nil
}

func (s *Server) shutdown(o ShutdownOptions) {
	mode := o.Mode
	s.cfg.Logger.Info("target shutting down", "mode", mode.String(), "spread", o.Spread, "hint", o.Hint)
	s.mu.Lock()
	s.stopping = true
	close(s.stopCh)
	for nc := range s.pending {
		nc.Close()
	}
	s.mu.Unlock()
	s.ln.Close()
	if s.waiting != nil {
		s.waiting.ep.Wake()
	}
	s.acceptWG.Wait() // no upgrade can register from here on
	if s.waiting != nil {
		s.stopWaiting()
	}
	s.http.srv.Close()

	if mode == Graceful {
		s.goAway(o)
	}
	for _, c := range s.snapshot() {
		s.closeConn(c, ErrServerClosed)
	}
	s.reactor.stop()
	s.wg.Wait()
	s.reactor.close()
	closeProtocol(s.proto) // after every OnClose: rooms stop, then the store
	if s.tlsSrv != nil {
		s.tlsSrv.Close()
	}
	if s.sess != nil {
		s.sess.Close()
	}
	close(s.done)
	s.cfg.Logger.Info("target stopped", "mode", mode.String())
}

// goAway sends a close frame to every connection (1001, or 1013 with a
// return hint), spread over o.Spread, then waits until the clients have
// answered (each answer closes its connection) or CloseTimeout passed.
func (s *Server) goAway(o ShutdownOptions) {
	s.mu.Lock()
	drained := make(chan struct{})
	if s.conns.n == 0 {
		close(drained)
	} else {
		s.drained = drained
	}
	s.mu.Unlock()
	conns := s.snapshot()
	if o.Spread > 0 {
		s.rand.shuffle(len(conns), func(i, j int) { conns[i], conns[j] = conns[j], conns[i] })
	}
	// A client that does not read can hold a write for WriteTimeout, so the
	// frames go out from several goroutines.
	var wg sync.WaitGroup
	next := make(chan *Conn)
	for range min(len(conns), s.cfg.Workers) {
		wg.Go(func() {
			for c := range next {
				if o.Hint > 0 {
					u := s.rand.float64()
					d := o.HintAfter + time.Duration(u*float64(o.Hint))
					s.sendClose(c, closeTryAgainLater, connerr.CloseHintReason(d))
					continue
				}
				s.sendClose(c, ws.StatusGoingAway, "going away")
			}
		})
	}
	start := s.clock.Now()
	for i, c := range conns {
		if o.Spread > 0 && i > 0 {
			due := start.Add(spreadAt(o.Spread, i, len(conns)))
			if w := due.Sub(s.clock.Now()); w > 0 {
				<-s.clock.After(w)
			}
		}
		next <- c
	}
	close(next)
	wg.Wait()
	select {
	case <-drained:
	case <-s.clock.After(s.cfg.CloseTimeout):
	}
}

// closeTryAgainLater is close code 1013, "try again later" (RFC 6455's
// registry), which a server that sheds load closes with.
const closeTryAgainLater ws.StatusCode = 1013

// spreadAt is when, after the first, the i-th of n close frames spread
// evenly over spread goes out: 0 for the first, spread for the last.
func spreadAt(spread time.Duration, i, n int) time.Duration {
	if n <= 1 {
		return 0
	}
	return time.Duration(float64(spread) * float64(i) / float64(n-1))
}

// snapshot returns the open connections.
func (s *Server) snapshot() []*Conn {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.conns.all()
}
