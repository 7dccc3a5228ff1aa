package loadgen

import (
	"errors"
	"io"
	"math"

	"golang.org/x/sys/unix"

	"github.com/stampede-dev/stampede/connerr"
	"github.com/stampede-dev/stampede/internal/rawsys"
)

// In a herd, a wss:// client's handshake starts once the server holds its
// connection. There, a client's connect completes when the server's
// kernel answers its SYN, but the server drops the connection's last ACK
// while its accept queue is full: the client's side is up, the server has
// no socket for it and takes it only when its queue has room, seconds
// later. A handshake started at the connect holds its key shares and its
// goroutine all that time (about 24 KB with the post-quantum share, 13 KB
// without; lab/records). So the client first sends the ClientHello's
// first byte, the record type, which is always the same, and asks the
// kernel to report the server's acknowledgement of it (rawsys.SendAcked):
// the server's kernel acknowledges data only on a socket it made, which
// sits in the accept queue or was accepted. The handshake then starts, and
// its first write leaves that byte out (fdConn.skip). TCP is a stream: the
// server's TLS reads the record whatever the segments. This costs the
// server a wakeup more for the ClientHello, and a server that defers its
// accepts until data comes (TCP_DEFER_ACCEPT) an accepted connection
// waiting for it: so only a herd pays it, when a loadgen process has
// tlsWaitAbove handshakes in progress or queued.

// helloFirst is the first byte of every ClientHello: a TLS record of
// handshake messages.
const helloFirst = 0x16

// errHelloFirst is a first handshake write that does not begin with the
// byte sent ahead of it: crypto/tls wrote something else than a record of
// handshake messages.
var errHelloFirst = errors.New("the first TLS record is not a handshake record")

// sendFirst sends the ClientHello's first byte of the shard's j-th client
// and asks for the server's acknowledgement. It reports false when the
// kernel cannot say (then the reactor stops asking: handshakes start at
// the connect), or fails the attempt.
func (r *reactor) sendFirst(j int32, now int64) (sent, failed bool) {
	fd := int(r.clients[j].fd)
	// The report holds no copy of the byte, whatever net.core.tstamp_allow_data says.
	errno := rawsys.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPING, unix.SOF_TIMESTAMPING_OPT_TSONLY)
	if errno == 0 {
		errno = rawsys.SendAcked(fd, helloFirst)
	}
	switch errno {
	case 0:
		return true, false
	case unix.EINVAL, unix.ENOPROTOOPT, unix.EOPNOTSUPP:
		r.waitAbove = math.MaxInt
		return false, false
	}
	r.failFirst(j, r.ioError("sendmsg", errno), now)
	return false, true
}

// firstEdge handles an epoll edge of a client waiting for the server to
// take its connection: the acknowledgement's report starts its handshake;
// a reset or the server's close before it fails the attempt.
func (r *reactor) firstEdge(j int32, events uint32) {
	c, t := &r.clients[j], &r.tls[j]
	if events&unix.EPOLLERR != 0 {
		acked, errno := rawsys.AckReported(int(c.fd))
		if acked {
			t.waiting = false
			r.queueTLS(j)
			return
		}
		if errno == unix.EAGAIN {
			errno = soError(int(c.fd))
		}
		if errno != 0 {
			r.failFirst(j, r.ioError("read", errno), r.now())
			return
		}
	}
	if events&(unix.EPOLLHUP|unix.EPOLLRDHUP) != 0 {
		r.failFirst(j, io.ErrUnexpectedEOF, r.now())
	}
}

// failFirst fails a client's attempt before its handshake started.
func (r *reactor) failFirst(j int32, err error, now int64) {
	r.fail(j, failure{class: connerr.ClassifyPhase(err, connerr.PhaseHandshake), err: err, abort: true}, now)
}
