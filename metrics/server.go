package metrics

import (
	"context"
	"errors"
	"github.com/stampede-dev/stampede/spec"
	"net"
	"net/http"
	"time"
)

// Path is where a Server serves the metrics.
const Path = "/metrics"

// Server serves an exporter's metrics over HTTP on Path.
type Server struct {
	ln   net.Listener
	srv  *http.Server
	done chan struct{}
}

// Listen binds addr (host:port; port 0 picks a free one) and serves e's
// metrics on Path until Close. The error names the --metrics-addr flag.
func Listen(addr string, e *Exporter) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, spec.Errorf("Metrics.Addr", "%w", err)
	}
	mux := http.NewServeMux()
	mux.Handle(Path, e.Handler())
	s := &Server{ln: ln, done: make(chan struct{}),
		srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln) // ErrServerClosed after Close
	}()
	return s, nil
}

// Addr returns the address the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// URL returns the metrics URL, e.g. http://127.0.0.1:9100/metrics.
func (s *Server) URL() string { return "http://" + s.Addr() + Path }

// Close stops the server, letting a scrape under way finish for up to a
// second.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	<-s.done
	if errors.Is(err, context.DeadlineExceeded) {
		err = s.srv.Close()
	}
	return err
}
