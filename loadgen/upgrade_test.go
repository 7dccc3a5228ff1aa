package loadgen

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gobwas/ws"

	"github.com/stampede-dev/stampede/connerr"
	"github.com/stampede-dev/stampede/spec"
)

func testUpgrade(t *testing.T, protocols ...string) *upgrade {
	t.Helper()
	u, err := url.Parse("ws://127.0.0.1:8080/chat?room=1")
	if err != nil {
		t.Fatal(err)
	}
	return newUpgrade(u, http.Header{"Authorization": {"Bearer x"}}, protocols, 42)
}

// TestRequest: the request is valid HTTP that gobwas's server accepts, and
// the key is the seeded one.
func TestRequest(t *testing.T) {
	g := testUpgrade(t, "v1", "v2")
	req := g.appendRequest(nil, 7, 3)
	r, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(req)))
	if err != nil {
		t.Fatal(err)
	}
	var key [24]byte
	g.key(&key, 7, 3)
	for _, c := range []struct{ name, got, want string }{
		{"path", r.URL.RequestURI(), "/chat?room=1"},
		{"host", r.Host, "127.0.0.1:8080"},
		{"upgrade", r.Header.Get("Upgrade"), "websocket"},
		{"connection", r.Header.Get("Connection"), "Upgrade"},
		{"version", r.Header.Get("Sec-WebSocket-Version"), "13"},
		{"protocols", r.Header.Get("Sec-WebSocket-Protocol"), "v1, v2"},
		{"client", r.Header.Get("X-Stampede-Client"), "7"},
		{"auth", r.Header.Get("Authorization"), "Bearer x"},
		{"key", r.Header.Get("Sec-WebSocket-Key"), string(key[:])},
	} {
		if c.got != c.want {
			t.Errorf("%s: %q, want %q", c.name, c.got, c.want)
		}
	}
	var other [24]byte
	g.key(&other, 7, 4)
	if other == key {
		t.Error("two sockets of one client share a key")
	}
	// gobwas's server upgrades it.
	var out bytes.Buffer
	rw := struct {
		io.Reader
		io.Writer
	}{bytes.NewReader(req), &out}
	if _, err := (ws.Upgrader{Protocol: func(p []byte) bool { return string(p) == "v2" }}).Upgrade(rw); err != nil {
		t.Fatalf("gobwas rejected the request: %v", err)
	}
	a, err := g.parseAnswer(out.Bytes()[:headerEnd(out.Bytes())], 7, 3)
	if err != nil || a.status != 101 {
		t.Fatalf("answer %q: %+v %v", out.String(), a, err)
	}
}

// TestParseAnswer checks answers to client 7's socket 3.
func TestParseAnswer(t *testing.T) {
	g := testUpgrade(t, "v1")
	var key [24]byte
	g.key(&key, 7, 3)
	accept := acceptOf(string(key[:]))
	ok := "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " + accept + "\r\n"
	for _, tc := range []struct {
		name   string
		answer string
		status int
		retry  string
		err    error
	}{
		{"101", ok + "\r\n", 101, "", nil},
		{"101 with tokens in other case", strings.ReplaceAll(strings.ReplaceAll(ok, "websocket", "WebSocket"), "Connection: Upgrade", "connection: keep-alive, upgrade") + "\r\n", 101, "", nil},
		{"101 with the offered subprotocol", ok + "Sec-WebSocket-Protocol: v1\r\n\r\n", 101, "", nil},
		{"101 with another subprotocol", ok + "Sec-WebSocket-Protocol: v9\r\n\r\n", 101, "", ws.ErrHandshakeBadSubProtocol},
		{"101 with an extension", ok + "Sec-WebSocket-Extensions: permessage-deflate\r\n\r\n", 101, "", ws.ErrHandshakeBadExtensions},
		{"101 without upgrade", strings.Replace(ok, "Upgrade: websocket\r\n", "", 1) + "\r\n", 101, "", ws.ErrHandshakeBadUpgrade},
		{"101 without connection", strings.Replace(ok, "Connection: Upgrade\r\n", "", 1) + "\r\n", 101, "", ws.ErrHandshakeBadConnection},
		{"101 with a wrong accept", strings.Replace(ok, accept, acceptOf("x"), 1) + "\r\n", 101, "", ws.ErrHandshakeBadSecAccept},
		{"503 with Retry-After", "HTTP/1.1 503 Service Unavailable\r\nRetry-After:  5 \r\nContent-Length: 0\r\n\r\n", 503, "5", nil},
		{"429 with a date", "HTTP/1.1 429 Too Many Requests\r\nretry-after: Sun, 06 Nov 1994 08:49:37 GMT\r\n\r\n", 429, "Sun, 06 Nov 1994 08:49:37 GMT", nil},
		{"401", "HTTP/1.1 401 Unauthorized\r\n\r\n", 401, "", nil},
		{"status line without reason", "HTTP/1.0 403\r\n\r\n", 403, "", nil},
		{"not HTTP", "SSH-2.0-OpenSSH\r\n\r\n", 0, "", ws.ErrMalformedResponse},
		{"bad status", "HTTP/1.1 1x1 Hm\r\n\r\n", 0, "", ws.ErrMalformedResponse},
		{"header without colon", "HTTP/1.1 101 OK\r\nUpgrade websocket\r\n\r\n", 101, "", ws.ErrMalformedResponse},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := g.parseAnswer([]byte(tc.answer), 7, 3)
			if !errors.Is(err, tc.err) {
				t.Fatalf("error %v, want %v", err, tc.err)
			}
			if err == nil && (a.status != tc.status || string(a.retryAfter) != tc.retry) {
				t.Errorf("status %d retry %q, want %d %q", a.status, a.retryAfter, tc.status, tc.retry)
			}
		})
	}
}

// acceptOf computes Sec-WebSocket-Accept the slow, obvious way.
func acceptOf(key string) string {
	var out bytes.Buffer
	req := "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: " + key + "\r\n\r\n"
	rw := struct {
		io.Reader
		io.Writer
	}{bytes.NewReader([]byte(req)), &out}
	if _, err := ws.Upgrade(rw); err != nil {
		return "invalid key"
	}
	r, _ := http.ReadResponse(bufio.NewReader(&out), nil)
	return r.Header.Get("Sec-WebSocket-Accept")
}

// FuzzParseAnswer: no answer makes the parser panic, a 101 is accepted
// only with the right accept value, and a Retry-After hint comes from a
// refusal and waits within the cap.
func FuzzParseAnswer(f *testing.F) {
	f.Add([]byte("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: x\r\n\r\n"))
	f.Add([]byte("HTTP/1.1 503 x\r\nRetry-After: 1\r\n\r\n"))
	f.Add([]byte("HTTP/1.1 429 x\r\nretry-after:  99999999999999999999 \r\n\r\n"))
	f.Add([]byte("HTTP/1.1 503 x\r\nRetry-After: Fri, 31 Dec 9999 23:59:59 GMT\r\n\r\n"))
	f.Add([]byte("HTTP/1.1 101 x\r\nRetry-After: 5\r\n\r\n"))
	f.Add([]byte("HTTP/1.1 \r\n\r\n"))
	f.Add([]byte(":\r\n\r\n"))
	g := newUpgrade(&url.URL{Scheme: "ws", Host: "h", Path: "/"}, nil, nil, 1)
	f.Fuzz(func(t *testing.T, p []byte) {
		end := headerEnd(p)
		if end < 0 {
			return
		}
		a, err := g.parseAnswer(p[:end], 1, 1)
		if err == nil && a.status == 101 && !bytes.Contains(p, []byte(acceptOf(keyOf(g, 1, 1)))) {
			t.Fatalf("accepted a 101 without the right accept: %q", p)
		}
		if err != nil || len(a.retryAfter) == 0 {
			return
		}
		// The Retry-After hint as the client takes it (conn.go): a value
		// of the answer, never a wait outside [0, cap].
		if a.status == 101 || !bytes.Contains(p, a.retryAfter) {
			t.Fatalf("%q: Retry-After %q from a %d answer", p, a.retryAfter, a.status)
		}
		now := time.Date(2026, time.November, 29, 12, 0, 0, 0, time.UTC)
		if h, _ := connerr.ParseRetryAfter(string(a.retryAfter), now, spec.DefaultRetryAfterCap); h < 0 || h > spec.DefaultRetryAfterCap {
			t.Fatalf("%q: Retry-After %q waits %v", p, a.retryAfter, h)
		}
	})
}

func keyOf(g *upgrade, id, s uint32) string {
	var k [24]byte
	g.key(&k, id, s)
	return string(k[:])
}
