package target

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"
	"github.com/stampede-dev/stampede/spec"
	"golang.org/x/sys/unix"

	"github.com/stampede-dev/stampede/internal/testenv"
)

// Many idle ws:// connections, held as raw fds, all stay served: after
// they sat idle each one echoes, those the clients drop leave the table,
// and the rest echo again.
func TestManyIdleConnsStayServed(t *testing.T) {
	const n = 500
	s := startServer(t, Config{Server: spec.Server{Backlog: 1024, Workers: 2}})
	conns := make([]net.Conn, n)
	for i := range conns {
		conns[i] = mustDial(t, s.URL())
	}
	eventually(t, "all open", func() bool { return s.Stats().Conns == n })
	echoAll := func(conns []net.Conn, round int) {
		t.Helper()
		for i, c := range conns {
			want := []byte{byte(i), byte(i >> 8), byte(round)}
			if err := wsutil.WriteClientBinary(c, want); err != nil {
				t.Fatalf("conn %d: write: %v", i, err)
			}
		}
		for i, c := range conns {
			want := []byte{byte(i), byte(i >> 8), byte(round)}
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			got, err := wsutil.ReadServerBinary(c)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("conn %d round %d: got %v, %v; want %v", i, round, got, err, want)
			}
		}
	}
	echoAll(conns, 0)
	for _, c := range conns[:n/2] {
		c.Close() // abrupt: no close frame
	}
	eventually(t, "half closed", func() bool { return s.Stats().Conns == n/2 })
	if got := len(s.snapshot()); got != n/2 {
		t.Fatalf("table holds %d connections, want %d", got, n/2)
	}
	// New connections reuse the fd numbers the closed ones freed: each
	// must get its own events, and the old ones none.
	more := make([]net.Conn, n/2)
	for i := range more {
		more[i] = mustDial(t, s.URL())
	}
	eventually(t, "all open again", func() bool { return s.Stats().Conns == n })
	echoAll(append(conns[n/2:], more...), 1)
}

// A message larger than the socket buffers is echoed whole: the write
// waits for room (EAGAIN, poll) while the client reads.
func TestLargeEchoWaitsForRoom(t *testing.T) {
	s := startServer(t, Config{})
	c := mustDial(t, s.URL())
	want := bytes.Repeat([]byte("0123456789abcdef"), (spec.DefaultMaxMessageSize-1024)/16)
	go wsutil.WriteClientBinary(c, want)
	time.Sleep(100 * time.Millisecond) // let the server's send buffer fill before reading
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	got, err := wsutil.ReadServerBinary(c)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("echo of %d bytes: got %d bytes, %v", len(want), len(got), err)
	}
}

// A client that sends half a frame and stalls is closed after
// FrameTimeout, and the worker it held serves the next connection.
func TestPartialFrameTimesOut(t *testing.T) {
	s := startServer(t, Config{Server: spec.Server{Workers: 1, FrameTimeout: 200 * time.Millisecond}})
	stalled := mustDial(t, s.URL())
	// A masked text frame header announcing 10 bytes, then only 3 of them.
	var buf bytes.Buffer
	ws.WriteHeader(&buf, ws.Header{Fin: true, OpCode: ws.OpText, Masked: true, Length: 10})
	buf.Write([]byte{0, 0, 0, 0, 'a', 'b', 'c'})
	if _, err := stalled.Write(buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	stalled.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.ReadAll(stalled); err != nil {
		t.Fatalf("stalled connection: %v, want the server to close it", err)
	}
	eventually(t, "stalled conn gone", func() bool { return s.Stats().Conns == 0 })
	c := mustDial(t, s.URL())
	wsutil.WriteClientText(c, []byte("next"))
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if got, err := wsutil.ReadServerText(c); err != nil || string(got) != "next" {
		t.Fatalf("next connection: %q, %v", got, err)
	}
}

// writeLater is a handler that keeps the connection and lets the test
// write on it from another goroutine after it closed.
type writeLater struct {
	Echo
	opened chan *Conn
	closed chan struct{}
}

func (h writeLater) OnOpen(c *Conn) error { h.opened <- c; return nil }
func (h writeLater) OnClose(*Conn, error) { close(h.closed) }

// Writing on a connection whose socket is closed fails with an error and
// touches no fd: the fd number may belong to another socket by then.
func TestWriteAfterCloseFails(t *testing.T) {
	h := writeLater{opened: make(chan *Conn, 1), closed: make(chan struct{})}
	s := startServer(t, Config{Handler: h})
	c := mustDial(t, s.URL())
	sc := <-h.opened
	if a, ok := sc.RemoteAddr().(*net.TCPAddr); !ok || a.String() != c.LocalAddr().String() {
		t.Errorf("RemoteAddr %v, want the client's %v", sc.RemoteAddr(), c.LocalAddr())
	}
	c.Close()
	<-h.closed
	if err := sc.Write(ws.OpText, []byte("late")); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Write after close: %v, want net.ErrClosed", err)
	}
	if a := sc.RemoteAddr(); a != nil {
		t.Errorf("RemoteAddr after close: %v, want nil", a)
	}
}

// Writers racing a shutdown: every write either completes or fails, none
// panics or hangs, and the race detector sees the fd handed over cleanly.
func TestWritesRaceShutdown(t *testing.T) {
	opened := make(chan *Conn, 16)
	s, err := Start(Config{Handler: recordOpen{opened}})
	if err != nil {
		t.Fatal(err)
	}
	var conns []*Conn
	for range 8 {
		mustDial(t, s.URL())
		conns = append(conns, <-opened)
	}
	done := make(chan struct{})
	for _, c := range conns {
		go func() {
			defer func() { done <- struct{}{} }()
			for range 200 {
				if c.Write(ws.OpText, []byte("x")) != nil {
					return
				}
				runtime.Gosched()
			}
		}()
	}
	s.Shutdown(Abrupt)
	for range conns {
		<-done
	}
}

// recordOpen is Echo that hands each opened connection to a channel.
type recordOpen struct{ opened chan *Conn }

func (h recordOpen) OnOpen(c *Conn) error                          { h.opened <- c; return nil }
func (recordOpen) OnMessage(c *Conn, op ws.OpCode, p []byte) error { return nil }
func (recordOpen) OnClose(*Conn, error)                            {}

// Writes blocked on clients that do not read hold no OS thread each: they
// wait in Go's netpoller. Blocked in poll(2) instead, 300 writers would
// take 300 threads, and ten thousand rooms blocked on slow members would
// pass the runtime's 10,000-thread limit and kill the process.
func TestBlockedWritesHoldNoThread(t *testing.T) {
	const n = 300
	s := startServer(t, Config{Server: spec.Server{Backlog: 1024, WriteTimeout: 20 * time.Second}})
	for range n {
		c := mustDial(t, s.URL()) // never read
		c.(*net.TCPConn).SetReadBuffer(4096)
	}
	eventually(t, "all open", func() bool { return s.Stats().Conns == n })
	before := threads(t)
	done := make(chan error, n)
	for _, c := range s.snapshot() {
		if c.tls != nil {
			t.Fatal("a ws:// connection kept its net.Conn")
		}
		unix.SetsockoptInt(int(c.sock.fd), unix.SOL_SOCKET, unix.SO_SNDBUF, 4096)
		go func() { done <- c.Write(ws.OpBinary, make([]byte, 1<<20)) }()
	}
	// Every writer is blocked once the kernel took all it will: its send
	// queue stays put.
	time.Sleep(500 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("a 1 MiB write to a client that does not read returned: %v", err)
	default:
	}
	if got := threads(t); got > before+50 {
		t.Errorf("%d OS threads with %d writes blocked (%d before): blocked writes hold threads", got, n, before)
	}
	// Closing the connections wakes every writer with an error.
	for _, c := range s.snapshot() {
		s.closeConn(c, ErrServerClosed)
	}
	for range n {
		select {
		case err := <-done:
			if err == nil {
				t.Errorf("a blocked write to a closed connection succeeded")
			}
		case <-time.After(15 * time.Second):
			t.Fatal("blocked writes were not woken by the close")
		}
	}
}

// threads returns this process's OS threads (/proc/self/status).
func threads(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		testenv.SkipUnlessRequired(t, "%v", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Threads:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	testenv.SkipUnlessRequired(t, "no Threads line in /proc/self/status")
	return 0
}
