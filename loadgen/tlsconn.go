package loadgen

import (
	"errors"
	"io"
	"net"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stampede-dev/stampede/internal/rawsys"
)

// errWouldBlock is a reactor-driven fdConn's EAGAIN: a temporary net.Error,
// which crypto/tls does not keep (its readRecordOrCCS makes only other read
// errors sticky), so tls.Conn.Read may be called again at the next epoll
// edge and goes on with the partial record it holds.
var errWouldBlock error = wouldBlock{}

type wouldBlock struct{}

func (wouldBlock) Error() string   { return "resource temporarily unavailable" }
func (wouldBlock) Timeout() bool   { return false }
func (wouldBlock) Temporary() bool { return true }

// errRunEnded ends a handshake the end of the run interrupted.
var errRunEnded = errors.New("the run ended during the TLS handshake")

// fdConn is the net.Conn a wss:// client's tls.Conn runs on: the reactor's
// raw non-blocking socket. While a handshake goroutine owns it (blocking),
// Read and Write wait, until the handshake's deadline, for a token on wake,
// which the reactor sends at each epoll edge of the socket: the goroutine
// parks, no OS thread blocks. Once the reactor owns it, Read returns
// errWouldBlock when the socket is empty, and Write never waits: what the
// socket does not take joins the client's queued output, which the reactor
// flushes at the next EPOLLOUT edge, as it does for ws:// frames.
type fdConn struct {
	r        *reactor
	j        int32
	fd       int32
	blocking bool
	skip     bool          // the first write's first byte went ahead (sendFirst): left out
	wake     chan struct{} // while blocking: a token per edge, kept until taken
	deadline time.Time     // the handshake's, while blocking
}

func (c *fdConn) Read(p []byte) (int, error) {
	for {
		n, errno := rawsys.Read(int(c.fd), p)
		switch {
		case errno == 0 && n == 0:
			return 0, io.EOF
		case errno == 0:
			return n, nil
		case errno == unix.EINTR:
		case errno == unix.EAGAIN && !c.blocking:
			return 0, errWouldBlock
		case errno == unix.EAGAIN:
			if err := c.wait(); err != nil {
				return 0, err
			}
		default:
			return 0, c.r.ioError("read", errno)
		}
	}
}

func (c *fdConn) Write(p []byte) (int, error) {
	if c.skip && len(p) > 0 {
		if p[0] != helloFirst {
			return 0, errHelloFirst
		}
		c.skip = false
		n, err := c.Write(p[1:])
		return n + 1, err
	}
	if !c.blocking {
		if err := c.r.sendRaw(c.j, p); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	for done := 0; done < len(p); {
		n, errno := rawsys.Write(int(c.fd), p[done:])
		switch errno {
		case 0:
			done += n
		case unix.EINTR:
		case unix.EAGAIN:
			if err := c.wait(); err != nil {
				return done, err
			}
		default:
			return done, c.r.ioError("write", errno)
		}
	}
	return len(p), nil
}

// wait blocks until an edge of the socket (it may be ready), the deadline
// (os.ErrDeadlineExceeded) or the end of the run.
func (c *fdConn) wait() error {
	left := time.Until(c.deadline)
	if left <= 0 {
		return os.ErrDeadlineExceeded
	}
	t := time.NewTimer(left)
	defer t.Stop()
	select {
	case <-c.wake:
		return nil
	case <-t.C:
		return os.ErrDeadlineExceeded
	case <-c.r.stopped:
		return errRunEnded
	}
}

// Close does nothing: the reactor closes the socket (closeSocket).
func (c *fdConn) Close() error { return nil }

func (c *fdConn) LocalAddr() net.Addr  { return nil }
func (c *fdConn) RemoteAddr() net.Addr { return c.r.dstAddr() }

// SetDeadline and its kin do nothing: the handshake's deadline is set by
// the reactor, and the reactor's reads never block.
func (c *fdConn) SetDeadline(time.Time) error      { return nil }
func (c *fdConn) SetReadDeadline(time.Time) error  { return nil }
func (c *fdConn) SetWriteDeadline(time.Time) error { return nil }
