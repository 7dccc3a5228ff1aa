package target

import (
	"bytes"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"

	"github.com/stampede-dev/stampede/internal/testenv"
	"github.com/stampede-dev/stampede/spec"
)

// Above MaxConns an upgrade is answered 503 with Retry-After; a slot frees
// when a connection closes.
func TestMaxConns(t *testing.T) {
	s := startServer(t, Config{Server: spec.Server{MaxConns: 2, RejectRetryAfter: 2500 * time.Millisecond}})
	first := mustDial(t, s.URL())
	mustDial(t, s.URL())
	r := dialWS(s.URL(), "")
	if r.status != 503 || r.retryAfter != "3" {
		t.Fatalf("third dial: status %d, Retry-After %q, err %v; want 503, \"3\"", r.status, r.retryAfter, r.err)
	}
	// The clients have their 101s a moment before the server counts the
	// upgrades and registers the connections.
	eventually(t, "2 upgrades counted", func() bool { st := s.Stats(); return st.UpgradesOK == 2 && st.Conns == 2 })
	if st := s.Stats(); st.UpgradesRejected != 1 || st.UpgradesOK != 2 || st.Conns != 2 {
		t.Fatalf("stats = %+v; want 2 ok, 1 rejected, 2 conns", st)
	}
	first.Close()
	eventually(t, "a free slot", func() bool { return s.Stats().Conns == 1 })
	mustDial(t, s.URL())
}

// A Reject window answers every upgrade with its status and Retry-After;
// a client (IP and X-Stampede-Client) that returns before its Retry-After
// is an early retry.
func TestRejectEarlyRetries(t *testing.T) {
	clk := newFakeClock()
	s := startServer(t, Config{Clock: clk})
	waitReady(t, s)
	if err := s.Reject(429, 2*time.Second, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name      string
		advance   time.Duration
		client    string
		want      int // status; 101 = upgraded
		wantEarly uint64
	}{
		{name: "first attempt is told 2 s", client: "a", want: 429, wantEarly: 0},
		{name: "a again at once is early", client: "a", want: 429, wantEarly: 1},
		{name: "another client is not", client: "b", want: 429, wantEarly: 1},
		{name: "a after exactly 2 s is on time", advance: 2 * time.Second, client: "a", want: 429, wantEarly: 1},
		{name: "a after 1 s more is early again", advance: time.Second, client: "a", want: 429, wantEarly: 2},
		{name: "window over", advance: 8 * time.Second, client: "a", want: 101, wantEarly: 2},
		{name: "b long after its hint", client: "b", want: 101, wantEarly: 2},
	}
	for _, st := range steps {
		clk.Advance(st.advance)
		r := dialWS(s.URL(), st.client)
		got := 101
		if r.err != nil {
			got = r.status
		} else {
			r.conn.Close()
		}
		if got != st.want {
			t.Fatalf("%s: status %d (err %v); want %d", st.name, got, r.err, st.want)
		}
		if got == 429 && r.retryAfter != "2" {
			t.Fatalf("%s: Retry-After %q; want \"2\"", st.name, r.retryAfter)
		}
		if e := s.Stats().EarlyRetries; e != st.wantEarly {
			t.Fatalf("%s: early retries %d; want %d", st.name, e, st.wantEarly)
		}
	}
	if err := s.Reject(200, time.Second, time.Second); err == nil {
		t.Fatal("Reject(200) succeeded")
	}
}

func TestRetryAfterSeconds(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want int64
	}{
		{0, 0},
		{time.Nanosecond, 1},
		{time.Second, 1},
		{1500 * time.Millisecond, 2},
		{time.Minute, 60},
	}
	for _, tc := range tests {
		if got := retryAfterSeconds(tc.d); got != tc.want {
			t.Errorf("retryAfterSeconds(%v) = %d; want %d", tc.d, got, tc.want)
		}
	}
}

// A connection that never finishes its upgrade request is dropped after
// HandshakeTimeout and counted as a failed upgrade. (One that sends
// nothing is never accepted: DeferAccept.)
func TestHandshakeTimeout(t *testing.T) {
	s := startServer(t, Config{Server: spec.Server{HandshakeTimeout: 200 * time.Millisecond}})
	c, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\n"); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := c.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Fatalf("read = %d, %v; want the server to close", n, err)
	}
	eventually(t, "a failed upgrade", func() bool { return s.Stats().UpgradesFailed == 1 })
}

// HandshakeCost is paid by admitted upgrades; the upgrade still succeeds.
func TestHandshakeCost(t *testing.T) {
	s := startServer(t, Config{Server: spec.Server{HandshakeCost: 20 * time.Millisecond}})
	start := time.Now()
	mustDial(t, s.URL())
	if el := time.Since(start); el < 20*time.Millisecond {
		t.Fatalf("upgrade took %v; want at least the 20 ms handshake cost", el)
	}
}

func TestTLS(t *testing.T) {
	s := startServer(t, Config{Server: spec.Server{TLS: true}})
	if !strings.HasPrefix(s.URL(), "wss://") {
		t.Fatalf("URL = %s; want wss://", s.URL())
	}
	conn := mustDial(t, s.URL())
	// Twenty messages in one write become TLS records larger than a read
	// buffer: what tls.Conn buffers must be served without a new epoll event.
	var buf bytes.Buffer
	for i := range 20 {
		wsutil.WriteClientText(&buf, bytes.Repeat([]byte{'a' + byte(i)}, 700))
	}
	if _, err := conn.Write(buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	for i := range 20 {
		got, err := wsutil.ReadServerText(conn)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if len(got) != 700 || got[0] != 'a'+byte(i) {
			t.Fatalf("message %d: %d bytes of %q", i, len(got), got[:1])
		}
	}
	if err := ws.WriteFrame(conn, ws.MaskFrame(ws.NewPingFrame([]byte("tls")))); err != nil {
		t.Fatal(err)
	}
	if f, err := readFrame(conn); err != nil || f.Header.OpCode != ws.OpPong {
		t.Fatalf("ping over TLS: %v %v", f.Header.OpCode, err)
	}
}

func TestIPv6(t *testing.T) {
	if ln, err := net.Listen("tcp6", "[::1]:0"); err != nil {
		testenv.SkipUnlessRequired(t, "no IPv6 loopback: %v", err)
	} else {
		ln.Close()
	}
	s := startServer(t, Config{Server: spec.Server{Addr: "[::1]:0"}})
	if !strings.HasPrefix(s.Addr().String(), "[::1]:") {
		t.Fatalf("Addr = %s", s.Addr())
	}
	conn := mustDial(t, s.URL())
	wsutil.WriteClientText(conn, []byte("six"))
	if got, err := wsutil.ReadServerText(conn); err != nil || string(got) != "six" {
		t.Fatalf("echo over IPv6 = %q, %v", got, err)
	}
}

// A server started with StartReject is in the window from its first
// accept: no client is admitted until it ends (a process restarted during
// a reject joins it before anyone is at the door).
func TestStartReject(t *testing.T) {
	clk := newFakeClock()
	s := startServer(t, Config{Server: spec.Server{StartReject: &Rejection{Status: 503, RetryAfter: 2 * time.Second, For: 5 * time.Second}}, Clock: clk})
	waitReady(t, s)
	if r := dialWS(s.URL(), "a"); r.status != 503 || r.retryAfter != "2" {
		t.Fatalf("first upgrade: status %d, Retry-After %q, %v; want 503 with 2", r.status, r.retryAfter, r.err)
	}
	clk.Advance(5 * time.Second)
	if r := dialWS(s.URL(), "b"); r.err != nil || r.status != 0 {
		t.Fatalf("after the window: status %d, %v; want upgraded", r.status, r.err)
	}
	if err := (Config{Server: spec.Server{StartReject: &Rejection{Status: 200}}}).Validate(); err == nil {
		t.Fatal("StartReject with status 200 validated")
	}
}
