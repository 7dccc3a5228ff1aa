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
// HandshakeTimeout. prefix is what the accept loop already read of the
// request (upgradeInline), read again here before the socket. An
// upgraded connection joins the reactor and the goroutine ends.
func (s *Server) upgrade(tcp *net.TCPConn, prefix []byte) {
	defer func() {
		<-s.upSem
		s.acceptWG.Done()
	}()
	if !s.track(tcp, true) {
		tcp.Close()
		return
	}
	defer s.track(tcp, false)
	tcp.SetDeadline(time.Now().Add(s.cfg.HandshakeTimeout))
	conn := net.Conn(tcp)
	if s.tls != nil {
		tc := tls.Server(tcp, s.tls)
		if err := s.tlsSrv.Handshake(tc); err != nil {
			s.stats.upgradesFailed.Add(1)
			tcp.Close()
			return
		}
		conn = tc
	}
	// A request for the HTTP endpoint leaves the upgrade pool: net/http
	// serves its connection (keep-alive) from here on.
	br := upgradeReaders.Get().(*bufio.Reader)
	if prefix != nil {
		br.Reset(io.MultiReader(bytes.NewReader(prefix), conn))
	} else {
		br.Reset(conn)
	}
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
	hs := handshake{s: s, tcp: tcp, fd: -1, ip: remoteIP(tcp)}
	err := hs.upgrade(readWriter{br, conn})
	br.Reset(nil)
	upgradeReaders.Put(br)
	if err != nil {
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
	tcp                *net.TCPConn // the connection, or
	fd                 int          // its bare socket (upgradeInline; -1 with tcp)
	ip                 string
	clientID, uri      string
	admitted, rejected bool
}

// upgrade reads the request from rw and answers it: 101, or the rejection
// admission decided. A failure is counted here; the caller closes the
// connection.
func (h *handshake) upgrade(rw io.ReadWriter) error {
	u := ws.Upgrader{
		OnRequest:       h.onRequest,
		OnHeader:        h.onHeader,
		OnBeforeUpgrade: h.onBeforeUpgrade,
	}
	_, err := u.Upgrade(rw)
	if err != nil {
		switch {
		case h.rejected:
			// counted when rejected, in onBeforeUpgrade
		case h.admitted:
			h.s.live.Add(-1)
			fallthrough
		default:
			h.s.stats.upgradesFailed.Add(1)
		}
	}
	return err
}

// peerGone reports whether the client already closed its side.
func (h *handshake) peerGone() bool {
	if h.tcp != nil {
		return peerGone(h.tcp)
	}
	return fdPeerGone(h.fd)
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
		if !h.peerGone() {
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
