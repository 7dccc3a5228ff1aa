package proxy_test

import (
	"fmt"
	"io"
	"sync"
	"testing"

	"github.com/stampede-dev/stampede/proxy"
)

// The helpers of the tests that run the proxy the way Run does; the
// TCP ones they share with package proxy's tests are in internal/tcptest.

// startProxy starts a fault proxy in front of upstream, closed at cleanup.
func startProxy(t *testing.T, cfg proxy.Config) *proxy.Proxy {
	t.Helper()
	p, err := proxy.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// syncWriter serialises writes to w, for logs written by several goroutines.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func (s *syncWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Sprint(s.w)
}
