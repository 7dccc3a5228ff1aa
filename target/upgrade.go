package target

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gobwas/ws"
	"golang.org/x/sys/unix"
)

// ClientIDHeader is the upgrade request header a stampede client sends its
// id in, so the server can tell clients behind one IP apart when it counts
// early retries.
const ClientIDHeader = "X-Stampede-Client"

var clientIDHeader = []byte(ClientIDHeader)

// upgrade runs the handshake of one accepted connection in a goroutine of
// the bounded upgrade pool: TLS if configured, then the HTTP upgrade with
// admission (reject windows, MaxConns, handshake cost), all within
// HandshakeTimeout. An upgraded connection joins the reactor and the
// goroutine ends. A connection whose client has sent nothing yet gives its
// slot back while it waits (awaitSlot).
func (s *Server) upgrade(tcp *net.TCPConn) {
	defer s.acceptWG.Done()
	if !s.track(tcp, true) {
		s.slots.release()
		tcp.Close()
		return
	}
	defer s.track(tcp, false)
	tcp.SetDeadline(time.Now().Add(s.cfg.HandshakeTimeout))
	if err := s.awaitSlot(tcp); err != nil {
		s.stats.upgradesFailed.Add(1)
		tcp.Close()
		return
	}
	defer s.slots.release()
	conn := net.Conn(tcp)
	if s.tls != nil {
		tc := tls.Server(tcp, s.tls)
		if err := tc.Handshake(); err != nil {
			s.stats.upgradesFailed.Add(1)
			tcp.Close()
			return
		}
		conn = tc
	}
	// A request for the HTTP endpoint leaves the upgrade pool: net/http
	// serves its connection (keep-alive) from here on.
	br := upgradeReaders.Get().(*bufio.Reader)
	br.Reset(conn)
	if line, ok := peekRequestLine(br); ok && isHTTPPath(line) {
		tcp.SetDeadline(time.Time{})
		if !s.http.ln.handoff(&bufferedConn{Conn: conn, r: br}) {
			tcp.Close()
		}
		return
	}
	// A client that gave up while its connection waited in the accept
	// queue has closed its side, its FIN queued behind its request.
	// Upgrading it would spend a handshake, a registration and a teardown
	// on nobody: in a herd whose queues hold connections longer than the
	// clients' handshake timeout, that was most of the target's work.
	if peerClosed(tcp) {
		br.Reset(nil)
		upgradeReaders.Put(br)
		s.stats.upgradesFailed.Add(1)
		tcp.Close()
		return
	}
	hs := handshake{s: s, tcp: tcp, ip: remoteIP(tcp)}
	u := ws.Upgrader{
		OnRequest:       hs.onRequest,
		OnHeader:        hs.onHeader,
		OnBeforeUpgrade: hs.onBeforeUpgrade,
	}
	_, err := u.Upgrade(readWriter{br, conn})
	br.Reset(nil)
	upgradeReaders.Put(br)
	if err != nil {
		switch {
		case hs.rejected:
			// counted when rejected, in onBeforeUpgrade
		case hs.admitted:
			s.live.Add(-1)
			fallthrough
		default:
			s.stats.upgradesFailed.Add(1)
		}
		tcp.Close()
		return
	}
	c := &Conn{srv: s, id: s.nextID.Add(1), clientID: hs.clientID, uri: hs.uri}
	if s.tls != nil {
		tcp.SetDeadline(time.Time{})
		c.tls = &tlsSock{nc: conn, tcp: tcp}
		if c.tls.raw, err = tcp.SyscallConn(); err == nil {
			err = c.tls.raw.Control(func(fd uintptr) { c.sock.fd = int32(fd) })
		}
	} else {
		// The socket leaves the net package: an idle connection keeps
		// only its fd (sock.go).
		c.sock.fd, err = detach(tcp)
	}
	if err != nil {
		s.live.Add(-1)
		s.stats.upgradesFailed.Add(1)
		tcp.Close()
		return
	}
	s.stats.upgradesOK.Add(1)
	s.register(c)
}

// upgradeReaders pools the buffers upgrade requests are read with, so a
// reconnect herd does not leave a 4 KiB buffer of garbage per upgrade.
var upgradeReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4096) }}

// readWriter reads the upgrade request from the reader that peeked at it.
type readWriter struct {
	io.Reader
	io.Writer
}

// track adds (or removes) a connection being upgraded to the set Shutdown
// closes; adding fails once Shutdown began.
func (s *Server) track(nc net.Conn, add bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !add {
		delete(s.pending, nc)
		return true
	}
	if s.stopping {
		return false
	}
	s.pending[nc] = struct{}{}
	return true
}

func remoteIP(c net.Conn) string {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return a.IP.String()
	}
	return c.RemoteAddr().String()
}

// handshake is the state of one upgrade request, filled by the Upgrader's
// callbacks.
type handshake struct {
	s                  *Server
	tcp                *net.TCPConn
	ip                 string
	clientID, uri      string
	admitted, rejected bool
}

func (h *handshake) onRequest(uri []byte) error {
	h.uri = string(uri)
	return nil
}

func (h *handshake) onHeader(k, v []byte) error {
	if bytes.EqualFold(k, clientIDHeader) {
		h.clientID = string(v)
	}
	return nil
}

// onBeforeUpgrade admits the request or rejects it with a status and
// Retry-After, and counts a client that came back before its Retry-After.
// An admitted request pays HandshakeCost; a rejection is cheap, as a real
// server's load shedding is.
func (h *handshake) onBeforeUpgrade() (ws.HandshakeHeader, error) {
	s := h.s
	now := s.clock.Now()
	key := h.ip + "/" + h.clientID
	status, retryAfter, early := s.retries.admit(key, now)
	if early {
		s.stats.earlyRetries.Add(1)
	}
	shed := false
	if status == 0 && s.cfg.Shed > 0 && !s.admit(now) {
		// Over capacity: a cheap 503 now, and a Retry-After drawn from
		// 1..Shed seconds spreads the clients' return over the window.
		status, retryAfter, shed = 503, s.shedRetryAfter(), true
	}
	if status == 0 && !s.reserveSlot() {
		status, retryAfter = 503, s.cfg.RejectRetryAfter
	}
	if status != 0 {
		// Counted at the decision, before the answer is written: a client
		// that has read its 503 sees it in /stats.
		h.rejected = true
		if shed {
			s.stats.upgradesShed.Add(1)
		}
		s.stats.upgradesRejected.Add(1)
		secs := retryAfterSeconds(retryAfter)
		// A client that already gave up (its FIN queued behind the request:
		// a handshake timeout while the request sat in a full queue) never
		// reads this answer, so its next attempt is not bound by it.
		if !peerGone(h.tcp) {
			s.retries.note(key, now.Add(time.Duration(secs)*time.Second), now)
		}
		return nil, ws.RejectConnectionError(
			ws.RejectionStatus(status),
			ws.RejectionHeader(ws.HandshakeHeaderString("Retry-After: "+strconv.FormatInt(secs, 10)+"\r\n")),
			ws.RejectionReason("stampede target: try again later"),
		)
	}
	h.admitted = true
	burn(s.cfg.HandshakeCost)
	return nil, nil
}

// admit takes an admission token of the (ramped) accept rate when
// shedding; false means the server is over capacity.
func (s *Server) admit(now time.Time) bool {
	s.gate.mu.Lock()
	defer s.gate.mu.Unlock()
	return s.gate.admitLocked(now)
}

// shedRetryAfter draws the Retry-After of a shed request: whole seconds,
// uniform in 1..ceil(Shed/1s).
func (s *Server) shedRetryAfter() time.Duration {
	n := retryAfterSeconds(s.cfg.Shed)
	return time.Duration(1+s.rand.int64N(n)) * time.Second
}

// reserveSlot takes one of MaxConns connection slots; it fails when all
// are taken. A slot is released when its connection closes or its upgrade
// fails.
func (s *Server) reserveSlot() bool {
	for {
		n := s.live.Load()
		if s.cfg.MaxConns > 0 && n >= int64(s.cfg.MaxConns) {
			return false
		}
		if s.live.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// retryAfterSeconds is the delay-seconds value sent for d: whole seconds,
// rounded up.
func retryAfterSeconds(d time.Duration) int64 {
	return int64((d + time.Second - 1) / time.Second)
}

// burnSink keeps the busy loop's result alive.
var burnSink atomic.Uint64

// burn spends d of CPU time in a busy loop (wall time on this goroutine's
// thread; on a loaded machine it is also CPU the scheduler had to find).
func burn(d time.Duration) {
	if d <= 0 {
		return
	}
	x := uint64(1)
	for end := time.Now().Add(d); time.Now().Before(end); {
		for range 256 {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	burnSink.Store(x)
}

// awaitSlot keeps the upgrade slot the accept loop took for tcp when the
// client's first bytes are there. Otherwise it gives the slot back while
// it waits for them (or the peer's close, which the read that follows
// finds) up to the connection's deadline, and takes one again before the
// accept loop may (slots); it keeps the slot through the wait when as many
// connections wait as may. On an error it holds no slot.
//
// A connection is often accepted before its request in a herd: the final
// ACK and the request were dropped on the full accept queue, a later
// retransmit of the ACK alone made the connection, and the request comes
// at the client's next data retransmit, seconds later. Held while it
// waits, a slot stops the accept loop: in a herd of 250,000 the 64 slots
// of a process were all held so for seconds at a time while its queue
// was full. Unbounded, the connections accepted and not yet upgraded were
// upgraded after their clients had given up (at a million, 1.5 million
// resets): the slots and the waiters bound them, so a server with more to
// upgrade than its CPU can do leaves the rest in the kernel's queue.
func (s *Server) awaitSlot(tcp *net.TCPConn) error {
	raw, err := tcp.SyscallConn()
	if err != nil {
		s.slots.release()
		return err
	}
	var b [1]byte
	left, tried := false, false
	err = raw.Read(func(fd uintptr) bool {
		_, _, err := unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		if err != unix.EAGAIN && err != unix.EINTR {
			return true
		}
		if !tried {
			tried = true
			left = s.slots.leave()
		}
		return false
	})
	switch {
	case !left && err != nil:
		s.slots.release()
		return err
	case !left:
		return nil
	case err != nil:
		s.slots.drop()
		return err
	case !s.slots.rejoin():
		return ErrServerClosed
	}
	return nil
}

// TCP states of Linux's tcp_states.h that say the peer has closed.
const (
	tcpClose     = 7
	tcpCloseWait = 8
)

// peerClosed says whether the peer of tcp has closed its side (its FIN or
// RST arrived): one getsockopt(TCP_INFO).
func peerClosed(tcp *net.TCPConn) bool {
	raw, err := tcp.SyscallConn()
	if err != nil {
		return false
	}
	var info *unix.TCPInfo
	var ierr error
	if err := raw.Control(func(fd uintptr) {
		info, ierr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
	}); err != nil || ierr != nil {
		return false
	}
	return info.State == tcpCloseWait || info.State == tcpClose
}
