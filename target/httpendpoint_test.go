package target

import (
	"bufio"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/spec"
)

func insecureTLS() *tls.Config { return &tls.Config{InsecureSkipVerify: true} }

// httpDo sends one request to the server's HTTP endpoint on client c and
// returns the status, Retry-After and Idempotent-Replayed headers.
func httpDo(t *testing.T, c *http.Client, s *Server, method, key string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+s.Addr().String()+HTTPPath, strings.NewReader("body"))
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set(IdempotencyKeyHeader, key)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, HTTPPath, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Retry-After"), resp.Header.Get(ReplayedHeader)
}

// TestHTTPEndpointLimit: the token bucket answers 200 while it has tokens
// and the configured status with Retry-After (rounded up to whole
// seconds) above the rate, refilled on the injected clock; all on one
// keep-alive connection, with the WebSocket upgrade still served beside it.
func TestHTTPEndpointLimit(t *testing.T) {
	clk := newFakeClock()
	s := startServer(t, Config{Server: spec.Server{HTTPLimit: 2, HTTPBurst: 2, LimitStatus: 529,
		LimitRetryAfter: 1500 * time.Millisecond}, Clock: clk})
	waitReady(t, s)
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	t.Cleanup(c.CloseIdleConnections)
	type answer struct {
		status           int
		retryAfter, repl string
	}
	steps := []struct {
		name    string
		advance time.Duration
		method  string
		key     string
		want    answer
	}{
		{"burst token 1", 0, "GET", "", answer{200, "", ""}},
		{"burst token 2, key k1 recorded", 0, "POST", "k1", answer{200, "", ""}},
		{"bucket empty: 529 and 2 s", 0, "GET", "", answer{529, "2", ""}},
		{"a limited key is not recorded", 0, "POST", "k2", answer{529, "2", ""}},
		{"half a token 250 ms later", 250 * time.Millisecond, "GET", "", answer{529, "2", ""}},
		{"one token after 500 ms: k1 again is a replay", 250 * time.Millisecond, "POST", "k1", answer{200, "", "true"}},
		{"empty again", 0, "POST", "k2", answer{529, "2", ""}},
		{"refilled: k2 succeeds the first time", time.Second, "POST", "k2", answer{200, "", ""}},
	}
	for _, st := range steps {
		clk.Advance(st.advance)
		code, ra, repl := httpDo(t, c, s, st.method, st.key)
		if got := (answer{code, ra, repl}); got != st.want {
			t.Errorf("%s: got %+v, want %+v", st.name, got, st.want)
		}
	}
	mustDial(t, s.URL()) // the port still upgrades WebSockets
	// The client has its 101 as the server writes it, a moment before the
	// server counts the upgrade.
	eventually(t, "the upgrade counted", func() bool { return s.Stats().UpgradesOK > 0 })
	got := s.Stats()
	if want := map[string]uint64{"200": 4, "529": 4}; !reflect.DeepEqual(got.HTTPStatus, want) {
		t.Errorf("HTTPStatus = %v, want %v", got.HTTPStatus, want)
	}
	if got.IdempotentReplays != 1 {
		t.Errorf("IdempotentReplays = %d, want 1", got.IdempotentReplays)
	}
	if got.Accepted != 2 || got.UpgradesOK != 1 || got.UpgradesFailed != 0 {
		t.Errorf("Accepted %d, UpgradesOK %d, UpgradesFailed %d: want 2 (one keep-alive HTTP connection, one WebSocket), 1, 0",
			got.Accepted, got.UpgradesOK, got.UpgradesFailed)
	}
}

// TestHTTPEndpointUnlimited: without HTTPLimit every request is 200, TLS
// included, and a path that is not the endpoint still goes to the
// upgrader (which refuses a plain GET).
func TestHTTPEndpointUnlimited(t *testing.T) {
	s := startServer(t, Config{Server: spec.Server{TLS: true}})
	waitReady(t, s)
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: insecureTLS()}}
	t.Cleanup(c.CloseIdleConnections)
	for i := range 20 {
		resp, err := c.Get("https://" + s.Addr().String() + HTTPPath + "/x?i=1")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("request %d: status %d", i, resp.StatusCode)
		}
	}
	resp, err := c.Get("https://" + s.Addr().String() + "/other")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == 200 {
		t.Fatalf("GET /other: 200, want the upgrader's refusal")
	}
	if got := s.Stats().HTTPStatus; !reflect.DeepEqual(got, map[string]uint64{"200": 20}) {
		t.Fatalf("HTTPStatus = %v", got)
	}
}

// TestIsHTTPPath: which request lines go to the HTTP endpoint.
func TestIsHTTPPath(t *testing.T) {
	for _, tc := range []struct {
		line string
		want bool
	}{
		{"GET /http HTTP/1.1\r", true},
		{"POST /http?x=1 HTTP/1.1\r", true},
		{"PUT /http/a/b HTTP/1.1\r", true},
		{"GET /https HTTP/1.1\r", false}, // a longer name is not the endpoint
		{"GET / HTTP/1.1\r", false},
		{"GET /room?id=1 HTTP/1.1\r", false},
		{"GET", false},
		{"", false},
	} {
		if got := isHTTPPath([]byte(tc.line)); got != tc.want {
			t.Errorf("isHTTPPath(%q) = %v, want %v", tc.line, got, tc.want)
		}
	}
}

// TestPeekRequestLine: the line is found across several reads and left
// in the reader; a line longer than the buffer is not.
func TestPeekRequestLine(t *testing.T) {
	r := bufio.NewReaderSize(io.MultiReader(strings.NewReader("GET /ht"), strings.NewReader("tp HTTP/1.1\r\nHost: x\r\n\r\n")), 32)
	line, ok := peekRequestLine(r)
	if !ok || string(line) != "GET /http HTTP/1.1\r" {
		t.Fatalf("peek = %q, %v", line, ok)
	}
	if all, _ := io.ReadAll(r); !strings.HasPrefix(string(all), "GET /http HTTP/1.1\r\n") {
		t.Fatalf("the peeked line was consumed: %q", all)
	}
	long := bufio.NewReaderSize(strings.NewReader(strings.Repeat("x", 40)+"\n"), 16)
	if _, ok := peekRequestLine(long); ok {
		t.Fatal("a line longer than the buffer was found")
	}
}

// TestHTTPEndpointLeavesUpgradePool: an idle keep-alive HTTP connection
// holds no upgrade slot (with one slot, a WebSocket still upgrades beside
// it), and Shutdown closes it.
func TestHTTPEndpointLeavesUpgradePool(t *testing.T) {
	s, err := Start(Config{Server: spec.Server{Upgraders: 1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown(Abrupt) })
	waitReady(t, s)
	conn, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	br := bufio.NewReader(conn)
	for range 2 { // two requests on one connection: keep-alive
		io.WriteString(conn, "GET "+HTTPPath+" HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
	}
	mustDial(t, s.URL())
	s.Shutdown(Abrupt)
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := br.ReadByte(); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the idle HTTP connection was not closed by Shutdown: %v", err)
	}
}
