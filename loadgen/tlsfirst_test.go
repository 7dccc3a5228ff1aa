package loadgen

import (
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"golang.org/x/sys/unix"

	"github.com/stampede-dev/stampede/spec"
)

// slowListener accepts a connection every gap, counting them.
type slowListener struct {
	net.Listener
	gap      time.Duration
	accepted *atomic.Int64
}

func (l slowListener) Accept() (net.Conn, error) {
	time.Sleep(l.gap)
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepted.Add(1)
	}
	return c, err
}

// handshakesRunning counts the handshake goroutines of the process.
func handshakesRunning(buf []byte) int {
	n := runtime.Stack(buf, true)
	return strings.Count(string(buf[:n]), "loadgen.(*reactor).handshake(")
}

// TestWSSHandshakeAfterServerTookIt: a herd against a server whose accept
// queue holds one connection and that accepts one every 30 ms. The SYNs
// the full queue dropped come back together, all are answered, and the
// queue takes one of their last ACKs: the rest are connected on the
// client's side only. None of them starts a handshake: at every moment the
// handshakes running are at most the connections the server accepted,
// plus the one its queue holds and the one being accepted.
func TestWSSHandshakeAfterServerTookIt(t *testing.T) {
	defer func(n int) { tlsWaitAbove = n }(tlsWaitAbove)
	tlsWaitAbove = 0 // every handshake waits
	const n = 40
	var (
		accepted atomic.Int64
		held     heldConns
	)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c, _, _, err := ws.UpgradeHTTP(r, w); err == nil {
			held.echo(c)
		}
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	fd, err := unix.Dup(listenBacklog0(t)) // the test's end closes the socket; f, its copy
	if err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fd), "listener")
	ln, err := net.FileListener(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	srv.Listener = slowListener{ln, 30 * time.Millisecond, &accepted}
	srv.StartTLS()
	t.Cleanup(func() {
		held.closeAll()
		srv.Close()
	})
	run := start(t, Config{Client: spec.Client{URL: "wss" + strings.TrimPrefix(srv.URL, "https") + "/", Clients: n,
		Policy: fast, TLSInsecure: true, HandshakeTimeout: 60 * time.Second, ConnectTimeout: 60 * time.Second}})
	buf := make([]byte, 1<<20)
	most, over := 0, 0
	for end := time.Now().Add(6 * time.Second); time.Now().Before(end); {
		h := handshakesRunning(buf)
		a := int(accepted.Load()) // read after: it only grows
		most = max(most, h)
		if h > a+2 {
			over = max(over, h-a)
		}
		time.Sleep(2 * time.Millisecond)
	}
	st := run.f.Stats()
	b := totals(run.stop(t))
	t.Logf("%d connected, %d accepted, at most %d handshakes running", st.Connected, accepted.Load(), most)
	if b.Successes < 3 || most == 0 {
		t.Fatalf("%d of %d connected, at most %d handshakes running: the test saw nothing", b.Successes, n, most)
	}
	if over > 0 {
		t.Errorf("%d handshakes running beyond the connections the server took", over)
	}
}
