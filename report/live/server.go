package live

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stampede-dev/stampede/controlapi"
	"github.com/stampede-dev/stampede/report"
)

// CookieName is the cookie the token is exchanged for.
const CookieName = "stampede_live"

// Label is the pprof label (key and value) on every goroutine of the live
// server and its feed: a CPU profile of the run gives the page's share.
var Label = pprof.Labels("stampede", "live")

// Server serves the live page of one run (or of a bench's runs, one after
// the other).
type Server struct {
	cfg             Config
	ln              net.Listener
	srv             *http.Server
	addr            string // as bound: the Host check's
	url             string
	token, session  string
	scheme          string
	served, stopped chan struct{}

	mu      sync.Mutex
	subs    map[*subscriber]struct{}
	last    []byte      // the latest frame, as sent
	run     *report.Run // the run so far, for the page
	seq     uint64
	final   bool
	finalRe string // report.html's path once final
	feed    func() // stops the feed
	feedWG  sync.WaitGroup

	dropped atomic.Uint64
	// finalSent counts the streams that took the last frame, reportServed
	// the report.html fetches that followed: Finish waits for both.
	finalSent, reportServed atomic.Int64
}

// subscriber is one open stream: frames wait in ch until its handler
// writes them.
type subscriber struct{ ch chan msg }

// msg is one encoded frame.
type msg struct {
	b     []byte
	final bool
}

// Start listens on cfg's address, serves the page and announces its URL.
func Start(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	s := &Server{cfg: cfg, token: controlapi.NewToken(), session: controlapi.NewToken(), scheme: "http",
		subs: map[*subscriber]struct{}{}, served: make(chan struct{}), stopped: make(chan struct{})}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("live page: %w", err)
	}
	if cfg.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(cfg.TLSCert, cfg.TLSKey)
		if err != nil {
			ln.Close()
			return nil, fmt.Errorf("live page: %w", err)
		}
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
		s.scheme = "https"
	}
	s.ln, s.addr = ln, ln.Addr().String()
	s.url = s.scheme + "://" + s.addr + "/"
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 5 * time.Second, ErrorLog: nil}
	go pprof.Do(context.Background(), Label, func(context.Context) {
		defer close(s.served)
		s.srv.Serve(ln) // every connection's goroutine inherits the label
	})
	if cfg.Announce != nil {
		cfg.Announce(s.TokenURL())
	}
	return s, nil
}

// StartFed is Start with its feed of snap running and the first frame
// published before the URL is announced: a page opened at once is the
// run's (its kind, its fleet's size), not an empty one's.
func StartFed(cfg Config, snap func() Snapshot) (*Server, error) {
	announce := cfg.Announce
	cfg.Announce = nil
	s, err := Start(cfg)
	if err != nil {
		return nil, err
	}
	s.Publish(snap())
	s.Feed(snap)
	if announce != nil {
		announce(s.TokenURL())
	}
	return s, nil
}

// URL is the page's bare address, without the token.
func (s *Server) URL() string { return s.url }

// TokenURL is the address to open once: the token in it is exchanged for
// the page's cookie.
func (s *Server) TokenURL() string { return s.url + "?token=" + s.token }

// Dropped is the number of frames dropped for subscribers that were
// behind.
func (s *Server) Dropped() uint64 { return s.dropped.Load() }

// Subscribers is the number of open streams.
func (s *Server) Subscribers() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.subs)
}

// Close ends every stream and stops the server.
func (s *Server) Close() error {
	s.stopFeed()
	select {
	case <-s.stopped:
	default:
		close(s.stopped)
	}
	err := s.srv.Close()
	<-s.served
	return err
}

// ServeHTTP answers, after the guard: / (the page; ?token= exchanges the
// token for the cookie), /events (the stream) and /report.html (the
// results folder's, once the run is over).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	if !controlapi.HostAllowed(r.Host, s.addr) {
		http.Error(w, "live page: Host "+fmt.Sprintf("%.64q", r.Host)+" is not this page's address", http.StatusMisdirectedRequest)
		return
	}
	if !controlapi.SameOrigin(r) {
		http.Error(w, "live page: cross-origin requests are refused", http.StatusForbidden)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "live page: GET only", http.StatusMethodNotAllowed)
		return
	}
	if r.URL.Path == "/" && r.URL.Query().Has("token") {
		s.exchange(w, r)
		return
	}
	if c, err := r.Cookie(CookieName); err != nil || subtle.ConstantTimeCompare([]byte(c.Value), []byte(s.session)) != 1 {
		http.Error(w, "live page: open the URL with the token printed at the run's start", http.StatusUnauthorized)
		return
	}
	switch r.URL.Path {
	case "/":
		s.page(w)
	case "/events":
		s.stream(w, r)
	case "/" + report.File:
		s.mu.Lock()
		path := s.finalRe
		s.mu.Unlock()
		if path == "" {
			http.Error(w, "live page: the run is not over", http.StatusNotFound)
			return
		}
		http.ServeFile(w, r, path)
		s.reportServed.Add(1)
	default:
		http.NotFound(w, r)
	}
}

// exchange swaps the token of the printed URL for the cookie and sends the
// browser to the bare URL, so the token stays in no address bar, history
// or later request.
func (s *Server) exchange(w http.ResponseWriter, r *http.Request) {
	if subtle.ConstantTimeCompare([]byte(r.URL.Query().Get("token")), []byte(s.token)) != 1 {
		http.Error(w, "live page: wrong token", http.StatusUnauthorized)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: s.session, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: s.scheme == "https"})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// stream writes frames to one browser as server-sent events until it goes
// away, the run's last frame is sent, or a write stalls.
func (s *Server) stream(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	sub := &subscriber{ch: make(chan msg, s.cfg.Buffer)}
	s.mu.Lock()
	first, final := s.last, s.final
	if !final {
		s.subs[sub] = struct{}{}
	}
	s.mu.Unlock()
	defer s.unsubscribe(sub)
	w.WriteHeader(http.StatusOK)
	send := func(b []byte) bool {
		rc.SetWriteDeadline(time.Now().Add(DefaultWriteTimeout))
		if _, err := w.Write(b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !send([]byte("retry: 1000\n\n")) || (first != nil && !send(first)) {
		return
	}
	if final {
		s.finalSent.Add(1)
		return
	}
	for {
		select {
		case m := <-sub.ch:
			if !send(m.b) {
				return
			}
			if m.final {
				s.finalSent.Add(1)
				return
			}
		case <-r.Context().Done():
			return
		case <-s.stopped:
			return
		}
	}
}

func (s *Server) unsubscribe(sub *subscriber) {
	s.mu.Lock()
	delete(s.subs, sub)
	s.mu.Unlock()
}

// publish sends b to every subscriber that has room, and drops it for the
// others: the run never waits for a browser. The final frame makes room
// by dropping the oldest frame waiting.
func (s *Server) publish(b []byte, final bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.final {
		return
	}
	s.last, s.final = b, final
	m := msg{b, final}
	for sub := range s.subs {
		select {
		case sub.ch <- m:
			continue
		default:
		}
		s.dropped.Add(1)
		if final {
			select {
			case <-sub.ch:
			default:
			}
			select {
			case sub.ch <- m:
			default:
			}
		}
	}
}
