package wstest

import (
	"bufio"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/gobwas/ws"

	"github.com/stampede-dev/stampede/connerr"
)

// DialResult is what a WebSocket dial saw.
type DialResult struct {
	Conn       net.Conn
	Status     int    // the HTTP status of a failed upgrade
	RetryAfter string // its Retry-After header
	Err        error
}

// Dial upgrades a connection to url with the extra request headers h (nil:
// none); a wss:// server's certificate is not checked.
func Dial(url string, h http.Header) DialResult {
	var r DialResult
	d := ws.Dialer{
		Timeout:   5 * time.Second,
		TLSConfig: &tls.Config{InsecureSkipVerify: true},
		OnStatusError: func(_ int, _ []byte, resp io.Reader) {
			if hr, err := http.ReadResponse(bufio.NewReader(resp), nil); err == nil {
				r.RetryAfter = hr.Header.Get("Retry-After")
			}
		},
	}
	if h != nil {
		d.Header = ws.HandshakeHeaderHTTP(h)
	}
	conn, _, _, err := d.Dial(context.Background(), url)
	r.Conn, r.Err = conn, err
	if se, ok := err.(ws.StatusError); ok {
		r.Status = int(se)
	}
	return r
}

// MustDial dials and fails the test on error; the connection is closed at
// the end of the test.
func MustDial(t testing.TB, url string) net.Conn {
	t.Helper()
	r := Dial(url, nil)
	if r.Err != nil {
		t.Fatalf("dial %s: %v", url, r.Err)
	}
	t.Cleanup(func() { r.Conn.Close() })
	return r.Conn
}

// Eventually polls cond every 5 ms for up to 10 s.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// DialTCP makes n TCP connections at once, each allowed timeout, and
// returns how many completed. Each sends a byte once connected, as a
// client sends its request: the target's listener defers a connection
// until its first bytes (TCP_DEFER_ACCEPT), and only then does it take a
// place in the accept queue.
func DialTCP(t testing.TB, addr string, n int, timeout time.Duration) int {
	t.Helper()
	var mu sync.Mutex
	var wg sync.WaitGroup
	done := 0
	for range n {
		wg.Go(func() {
			c, err := net.DialTimeout("tcp", addr, timeout)
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
			if _, err := c.Write([]byte{'G'}); err != nil {
				return
			}
			mu.Lock()
			done++
			mu.Unlock()
		})
	}
	wg.Wait()
	return done
}

// CloseSeen is a close frame a client read, and when; Err is why none
// was read, if none was.
type CloseSeen struct {
	Code   ws.StatusCode
	Reason string
	At     time.Time
	Err    error
}

// ReadCloses reads the close frame of every conn concurrently, each within
// 15 s, and answers it.
func ReadCloses(conns []net.Conn) []CloseSeen {
	for _, c := range conns {
		c.SetReadDeadline(time.Now().Add(15 * time.Second))
	}
	return ReadAll(conns)
}

// ReadAll reads every conn's close frame (or error) concurrently, within
// the deadlines the caller set, and answers it. (wsutil refuses 1012 and
// 1013, which gobwas/ws does not know, as a protocol error.)
func ReadAll(conns []net.Conn) []CloseSeen {
	out := make([]CloseSeen, len(conns))
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Go(func() {
			for {
				f, err := ReadFrame(c)
				if err != nil {
					out[i] = CloseSeen{Err: err}
					return
				}
				if f.Header.OpCode != ws.OpClose {
					continue
				}
				code, reason := ws.ParseCloseFrameData(f.Payload)
				out[i] = CloseSeen{Code: code, Reason: reason, At: time.Now()}
				body := ws.NewCloseFrameBody(code, "")
				ws.WriteFrame(c, ws.MaskFrameInPlace(ws.NewCloseFrame(body)))
				return
			}
		})
	}
	wg.Wait()
	return out
}

// CheckHinted checks that every close is 1013 with a delay in
// [after, after+hint] and returns the first and last arrival.
func CheckHinted(t testing.TB, seen []CloseSeen, after, hint time.Duration) (first, last time.Time) {
	t.Helper()
	for i, c := range seen {
		if c.Err != nil {
			t.Fatalf("client %d: %v", i, c.Err)
		}
		d, ok := connerr.ParseCloseHint(c.Reason, 0)
		if c.Code != 1013 || !ok || d < after || d > after+hint {
			t.Fatalf("client %d: close %d %q; want 1013 with a delay in [%v, %v]", i, c.Code, c.Reason, after, after+hint)
		}
		if first.IsZero() || c.At.Before(first) {
			first = c.At
		}
		if c.At.After(last) {
			last = c.At
		}
	}
	return first, last
}
