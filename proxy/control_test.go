package proxy_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stampede-dev/stampede/chaos"
	"github.com/stampede-dev/stampede/internal/tcptest"
	"github.com/stampede-dev/stampede/proxy"
)

// TestProxyControlHandler drives the control API of an in-process proxy.
func TestProxyControlHandler(t *testing.T) {
	p := startProxy(t, proxy.Config{Upstream: tcptest.Echo(t)})
	srv := httptest.NewServer(proxy.ControlHandler(proxy.LocalController(p), chaos.ParseProxyFault))
	t.Cleanup(srv.Close)
	do := func(method, path string) (int, string) {
		req, _ := http.NewRequest(method, srv.URL+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(b))
	}
	steps := []struct {
		method, path string
		status       int
		body         string // the answer, or for 204 what GET /fault says next
	}{
		{"GET", "/fault", 200, "off"},
		{"POST", "/fault?latency=200ms&jitter=20ms", 204, "latency=200ms jitter=20ms"},
		{"POST", "/fault?set=loss%3D1%25", 204, "loss=1%"},
		{"POST", "/fault?bandwidth=1MB/s&loss=2%", 204, "bandwidth=1MB/s loss=2%"},
		{"POST", "/fault?reset", 204, "reset"},
		{"POST", "/fault?blackhole=true", 204, "blackhole"},
		{"POST", "/fault?latency=5x", 400, `proxy fault "latency=5x", col 9: expected a duration after "latency=", found "5x"`},
		{"POST", "/fault?reset&latency=1s", 400, `proxy fault "latency=1s reset", col 12: "reset" cannot be combined with other faults (it ends all traffic), found "latency=1s" too`},
		{"POST", "/fault?wobble=1", 400, `proxy fault "wobble=1", col 1: unknown proxy fault "wobble=1": expected latency=, jitter=, bandwidth=, loss=, reset or blackhole`},
		{"DELETE", "/fault", 204, "off"},
		{"POST", "/fault?latency=1s", 204, "latency=1s"},
		{"POST", "/fault", 204, "off"},
	}
	for _, s := range steps {
		status, body := do(s.method, s.path)
		if status != s.status {
			t.Fatalf("%s %s: status %d (%s), want %d", s.method, s.path, status, body, s.status)
		}
		if status == 204 {
			_, body = do("GET", "/fault")
		}
		if body != s.body {
			t.Errorf("%s %s: %q, want %q", s.method, s.path, body, s.body)
		}
	}
	if status, body := do("GET", "/stats"); status != 200 || !strings.Contains(body, `"accepted":0`) {
		t.Errorf("GET /stats: %d %s", status, body)
	}
}
