package target

import (
	"bytes"
	"io"
	"net"
	"net/netip"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stampede-dev/stampede/internal/rawsys"
)

// The inline upgrade: the accept loop of a plain (ws://) server without a
// handshake cost accepts a bare fd (listener.Listener.AcceptFD) and, when the
// client's whole request is already there, upgrades it itself with raw
// calls that never block:
//
//	accept4 ─> read the request ─> peek: closed? ─> parse, admit ─> write 101 ─> reactor
//	             │  │ nothing yet (a SYN cookie's: the listener defers others
//	             │  │ until their request comes, DeferAccept)
//	             │  └─> waiting: its own epoll set, read again when readable
//	             └ a part, or the HTTP endpoint's ─> net.Conn ─> upgrade goroutine
//
// A connection upgraded so never becomes a net.Conn: no runtime poller
// registration, no goroutine, deadline or duplicated fd, and no call that
// enters the runtime's syscall state. Through net each upgrade made about
// nine such calls, and in a million-client herd, with more runnable
// threads than cores, a thread preempted inside one had sysmon take its P
// and start another thread: the targets spent a sixth of their CPU in
// sysmon and its thread hand-offs (lab/records/measurements.md). With TLS the
// handshake may wait for the client, and a handshake cost is spent by the
// pool's goroutines side by side, so those servers upgrade in goroutines.

// inlineUpgrades says whether the accept loop upgrades plain connections
// itself.
func (s *Server) inlineUpgrades() bool { return s.tls == nil && s.cfg.HandshakeCost == 0 }

// requestBufs pools the buffers an inline upgrade reads its request into.
var requestBufs = sync.Pool{New: func() any { b := make([]byte, 4096); return &b }}

// headersEnd ends an HTTP request's header block.
var headersEnd = []byte("\r\n\r\n")

// upgradeInline upgrades the connection fd of peer that the accept loop
// took, holding an upgrade slot: when its request is all there, at once,
// and the slot is given back. One whose request has not come waits for
// it with the slot (waiting) until deadline (zero: HandshakeTimeout from
// now); one whose request came in part, or is for the HTTP endpoint, is
// handed with the slot and what was read of it to an upgrading goroutine
// (handOff).
func (s *Server) upgradeInline(fd int, peer netip.AddrPort, deadline time.Time) {
	bp := requestBufs.Get().(*[]byte)
	defer requestBufs.Put(bp)
	n, errno := readRequest(fd, *bp)
	if errno == unix.EAGAIN {
		if deadline.IsZero() {
			deadline = time.Now().Add(s.cfg.HandshakeTimeout)
		}
		if !s.waiting.add(fd, peer, deadline) {
			s.dropWaiting([]int{fd})
		}
		return
	}
	req := (*bp)[:max(n, 0)]
	line, _, _ := bytes.Cut(req, []byte("\n"))
	if n > 0 && (!bytes.Contains(req, headersEnd) || isHTTPPath(line)) {
		s.handOff(fd, bytes.Clone(req))
		return
	}
	defer func() { <-s.upSem }()
	// A client that reset or closed it before sending anything, or that
	// gave up while its connection waited in the accept queue (its FIN
	// behind its request, see upgrade), is not upgraded.
	if n <= 0 || fdPeerGone(fd) {
		rawsys.Close(fd)
		s.stats.upgradesFailed.Add(1)
		return
	}
	hs := handshake{s: s, fd: fd, ip: peer.Addr().Unmap().String()}
	if err := hs.upgrade(readWriter{bytes.NewReader(req), fdWriter(fd)}); err != nil {
		rawsys.Close(fd)
		return
	}
	c := &Conn{srv: s, id: s.nextID.Add(1), clientID: hs.clientID, uri: hs.uri}
	c.sock.fd = int32(fd)
	s.stats.upgradesOK.Add(1)
	s.stats.inline.Add(1)
	s.register(c)
}

// readRequest reads what the client sent of its request into p.
func readRequest(fd int, p []byte) (int, unix.Errno) {
	for {
		n, errno := rawsys.Read(fd, p)
		if errno != unix.EINTR {
			return n, errno
		}
	}
}

// handOff makes fd a *net.TCPConn and upgrades it in a goroutine of the
// pool, which takes over the accept loop's upgrade slot; prefix is what
// was read of its request.
func (s *Server) handOff(fd int, prefix []byte) {
	f := os.NewFile(uintptr(fd), "")
	nc, err := net.FileConn(f) // a duplicate of fd, in the runtime's poller
	f.Close()
	tcp, ok := nc.(*net.TCPConn)
	if err != nil || !ok {
		if nc != nil {
			nc.Close()
		}
		s.stats.upgradesFailed.Add(1)
		<-s.upSem
		return
	}
	tcp.SetKeepAlive(false) // FileConn turns it on; see listener.Listener
	s.acceptWG.Add(1)
	go s.upgrade(tcp, prefix)
}

// fdPeerGone reports whether the client of fd, whose request was read
// out, has closed its side: its FIN (or a reset) is what is left.
func fdPeerGone(fd int) bool {
	var b [1]byte
	n, errno := rawsys.Recv(fd, b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
	return n == 0 && errno == 0 || errno == unix.ECONNRESET
}

// fdWriter writes an inline upgrade's answer to its socket: a few hundred
// bytes to a socket that has sent nothing yet, which its send buffer
// takes whole.
type fdWriter int

func (w fdWriter) Write(p []byte) (int, error) {
	for {
		n, errno := rawsys.Write(int(w), p)
		switch {
		case errno == unix.EINTR:
			continue
		case errno != 0:
			return 0, os.NewSyscallError("write", errno)
		case n < len(p):
			return n, io.ErrShortWrite
		}
		return n, nil
	}
}
