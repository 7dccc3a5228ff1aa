package target

import (
	"bufio"
	"bytes"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// HTTPPath is the path of the target's plain HTTP endpoint: a request to
// it (any method, any query, or a path below it) is answered as HTTP on a
// keep-alive connection instead of being taken for a WebSocket upgrade. See
// docs/cli.md, "The target's HTTP endpoint".
const HTTPPath = "/http"

// The headers of the HTTP endpoint's idempotency bookkeeping.
const (
	// IdempotencyKeyHeader names a logical request: the endpoint records
	// each key that was answered 2xx.
	IdempotencyKeyHeader = "Idempotency-Key"
	// ReplayedHeader is set to "true" on a 2xx answer to a key that had
	// already been answered 2xx: the backend saw it as a success before.
	ReplayedHeader = "Idempotent-Replayed"
)

// httpEndpoint serves HTTPPath: 200 while the token bucket has a token,
// else Config.LimitStatus with Retry-After. Connections reach it from the
// upgrade goroutines through a handoffListener, so net/http runs the
// keep-alive loop and an HTTP client does not hold an upgrade slot.
type httpEndpoint struct {
	srv        *http.Server
	ln         *handoffListener
	now        func() time.Time
	status     int
	retryAfter string // whole seconds

	mu     sync.Mutex
	bucket bucket              // rate 0 = unlimited
	keys   map[string]struct{} // idempotency keys answered 2xx
	counts map[int]uint64      // answers per status
	replay uint64              // 2xx answers to a key seen before
}

func newHTTPEndpoint(s *Server) *httpEndpoint {
	cfg := s.cfg
	e := &httpEndpoint{
		ln:         newHandoffListener(s.ln.Addr()),
		now:        s.clock.Now,
		status:     cfg.LimitStatus,
		retryAfter: strconv.FormatInt(retryAfterSeconds(cfg.LimitRetryAfter), 10),
		keys:       make(map[string]struct{}),
		counts:     make(map[int]uint64),
	}
	e.bucket.reset(s.clock.Now(), cfg.HTTPLimit, cfg.HTTPBurst)
	e.srv = &http.Server{
		Handler:           e,
		ReadHeaderTimeout: cfg.HandshakeTimeout,
		IdleTimeout:       time.Minute,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	return e
}

// ServeHTTP answers one request; the body, if any, is read and dropped.
func (e *httpEndpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, io.LimitReader(r.Body, 1<<20))
	key := r.Header.Get(IdempotencyKeyHeader)
	now := e.now()
	e.mu.Lock()
	status, replayed := http.StatusOK, false
	if e.bucket.wait(now) > 0 {
		status = e.status
	} else {
		e.bucket.take(now)
		if key != "" {
			if _, replayed = e.keys[key]; replayed {
				e.replay++
			} else {
				e.keys[key] = struct{}{}
			}
		}
	}
	e.counts[status]++
	e.mu.Unlock()
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	if status != http.StatusOK {
		h.Set("Retry-After", e.retryAfter)
		w.WriteHeader(status)
		io.WriteString(w, "stampede target: rate limited\n")
		return
	}
	if replayed {
		h.Set(ReplayedHeader, "true")
	}
	io.WriteString(w, "ok\n")
}

// stats returns the answers per status (as "200", "429", ...) and the
// idempotent replays.
func (e *httpEndpoint) stats() (map[string]uint64, uint64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.counts) == 0 {
		return nil, e.replay
	}
	m := make(map[string]uint64, len(e.counts))
	for st, n := range e.counts {
		m[strconv.Itoa(st)] = n
	}
	return m, e.replay
}

// isHTTPPath says whether a request line is for the HTTP endpoint: its
// target is HTTPPath, or begins with HTTPPath followed by '?' or '/'.
func isHTTPPath(line []byte) bool {
	_, rest, ok := bytes.Cut(line, []byte(" "))
	if !ok {
		return false
	}
	uri, _, _ := bytes.Cut(rest, []byte(" "))
	p, ok := bytes.CutPrefix(uri, []byte(HTTPPath))
	return ok && (len(p) == 0 || p[0] == '?' || p[0] == '/')
}

// peekRequestLine returns the first line of the request buffered in br
// without consuming it; ok is false when none arrived or it does not fit
// the buffer (the upgrader then reads and answers it).
func peekRequestLine(br *bufio.Reader) (line []byte, ok bool) {
	for {
		b, _ := br.Peek(br.Buffered())
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			return b[:i], true
		}
		if len(b) >= br.Size() {
			return nil, false
		}
		// Everything buffered was looked at: wait for more.
		if _, err := br.Peek(len(b) + 1); err != nil {
			b, _ = br.Peek(br.Buffered())
			i := bytes.IndexByte(b, '\n')
			return b[:max(i, 0)], i >= 0
		}
	}
}

// bufferedConn is a net.Conn whose first bytes come from a bufio.Reader
// that peeked at them.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// handoffListener is a net.Listener whose connections are handed to it by
// the upgrade goroutines instead of accepted from a socket.
type handoffListener struct {
	addr  net.Addr
	ch    chan net.Conn
	once  sync.Once
	close chan struct{}
}

func newHandoffListener(addr net.Addr) *handoffListener {
	return &handoffListener{addr: addr, ch: make(chan net.Conn), close: make(chan struct{})}
}

// handoff gives c to the listener's Accept; false once it is closed.
func (l *handoffListener) handoff(c net.Conn) bool {
	select {
	case l.ch <- c:
		return true
	case <-l.close:
		return false
	}
}

func (l *handoffListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.close:
		return nil, net.ErrClosed
	}
}

func (l *handoffListener) Close() error {
	l.once.Do(func() { close(l.close) })
	return nil
}

func (l *handoffListener) Addr() net.Addr { return l.addr }

// serve runs the endpoint until shutdown closes it.
func (e *httpEndpoint) serve() { e.srv.Serve(e.ln) }
