package target

import (
	"io"
	"net"
	"os"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stampede-dev/stampede/internal/rawsys"
)

// sock is a plain (ws://) connection's socket once upgraded: a raw,
// non-blocking file descriptor and a count of its users, nothing more.
// The upgrade runs on a *net.TCPConn (deadlines, the HTTP endpoint's
// hand-off); after the 101 the fd is duplicated and the TCPConn closed, so
// an idle connection keeps no netFD, no runtime pollDesc, no TCPAddr pair
// and no timer: about 0.6 KiB less per connection (docs/sizing.md). Reads
// and writes that must wait park in Go's netpoller up to their timeout
// (wait).
//
// The fd number may be closed only when nobody is using it, or another
// connection that gets the same number could be read or written by
// mistake: users hold a reference (acquire/release), and close marks the
// fd closed, wakes users blocked in poll with shutdown(2), and leaves the
// close(2) to the last of them. This is what net's fdMutex does for a
// net.Conn.
type sock struct {
	fd   int32
	refs atomic.Uint32 // users of fd; sockClosed once close was called
}

const sockClosed = 1 << 31

// errSockClosed is the error of I/O on a socket already closed.
var errSockClosed = net.ErrClosed

// acquire takes a reference to the fd; false once it is closed.
func (s *sock) acquire() bool {
	for {
		r := s.refs.Load()
		if r&sockClosed != 0 {
			return false
		}
		if s.refs.CompareAndSwap(r, r+1) {
			return true
		}
	}
}

// release drops a reference; the last one after close closes the fd.
func (s *sock) release() {
	if s.refs.Add(^uint32(0)) == sockClosed {
		rawsys.Close(int(s.fd))
	}
}

// close closes the fd now, or once its users are done (they are woken).
func (s *sock) close() {
	old := s.refs.Or(sockClosed)
	switch {
	case old&sockClosed != 0:
	case old == 0:
		rawsys.Close(int(s.fd))
	default:
		unix.Shutdown(int(s.fd), unix.SHUT_RDWR)
	}
}

// wait blocks until the fd is ready for events (POLLIN or POLLOUT) or the
// deadline passes (os.ErrDeadlineExceeded). The caller holds a reference.
//
// It parks the goroutine in Go's netpoller, not an OS thread in poll(2):
// a room's goroutine writing to a member that does not read, or a worker
// waiting for the rest of a frame, would otherwise hold a thread each for
// up to its timeout, and ten thousand rooms blocked on slow members would
// pass the runtime's limit of 10,000 threads and kill the process. For the
// wait the fd is duplicated and the duplicate handed to the netpoller
// (os.NewFile of a non-blocking fd): a poll record exists only while a
// connection waits, and an idle one still costs nothing. A close wakes
// the waiter (shutdown(2) makes the socket ready).
func (s *sock) wait(events int16, deadline time.Time) error {
	if ready, err := s.ready(events); ready || err != nil {
		return err
	}
	if time.Until(deadline) <= 0 {
		return os.ErrDeadlineExceeded
	}
	dup, err := unix.FcntlInt(uintptr(s.fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return os.NewSyscallError("fcntl", err)
	}
	f := os.NewFile(uintptr(dup), "")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var rerr error
	check := func(uintptr) bool {
		var ready bool
		ready, rerr = s.ready(events)
		return ready || rerr != nil
	}
	if events&unix.POLLOUT != 0 {
		f.SetWriteDeadline(deadline)
		err = rc.Write(check)
	} else {
		f.SetReadDeadline(deadline)
		err = rc.Read(check)
	}
	if err != nil {
		return err // os.ErrDeadlineExceeded, or the file could not be polled
	}
	return rerr
}

// ready reports whether the fd is ready for events now, or has hung up or
// failed (which the next read or write reports): one poll(2) that does not
// wait.
func (s *sock) ready(events int16) (bool, error) {
	for {
		revents, errno := rawsys.Poll(int(s.fd), events)
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 {
			return false, os.NewSyscallError("poll", errno)
		}
		return revents != 0, nil
	}
}

// read reads what is available, waiting up to deadline for the first byte.
// The caller holds a reference.
func (s *sock) read(p []byte, deadline time.Time) (int, error) {
	for {
		n, errno := rawsys.Read(int(s.fd), p)
		switch {
		case errno == 0 && n == 0 && len(p) > 0:
			return 0, io.EOF
		case errno == 0:
			return n, nil
		case errno == unix.EINTR:
			continue
		case errno == unix.EAGAIN:
			if s.refs.Load()&sockClosed != 0 {
				return 0, errSockClosed
			}
			if err := s.wait(unix.POLLIN, deadline); err != nil {
				return 0, err
			}
			continue
		}
		return 0, os.NewSyscallError("read", errno)
	}
}

// writev writes every byte of bufs (one writev while the socket takes
// them), waiting up to deadline for room. It takes its own reference.
func (s *sock) writev(bufs [][]byte, deadline time.Time) error {
	if !s.acquire() {
		return errSockClosed
	}
	defer s.release()
	for len(bufs) > 0 {
		n, errno := rawsys.Writev(int(s.fd), bufs)
		switch {
		case errno == unix.EINTR:
			continue
		case errno == unix.EAGAIN:
			if s.refs.Load()&sockClosed != 0 {
				return errSockClosed
			}
			if err := s.wait(unix.POLLOUT, deadline); err != nil {
				return err
			}
			continue
		case errno != 0:
			return os.NewSyscallError("writev", errno)
		}
		for n > 0 && len(bufs) > 0 {
			if n < len(bufs[0]) {
				bufs[0] = bufs[0][n:]
				n = 0
				break
			}
			n -= len(bufs[0])
			bufs = bufs[1:]
		}
		for len(bufs) > 0 && len(bufs[0]) == 0 {
			bufs = bufs[1:]
		}
	}
	return nil
}

// remoteAddr returns the peer's address, or nil once the socket is closed.
func (s *sock) remoteAddr() net.Addr {
	if !s.acquire() {
		return nil
	}
	defer s.release()
	sa, err := unix.Getpeername(int(s.fd))
	if err != nil {
		return nil
	}
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return &net.TCPAddr{IP: net.IP(a.Addr[:]).To16(), Port: a.Port}
	case *unix.SockaddrInet6:
		return &net.TCPAddr{IP: net.IP(a.Addr[:]), Port: a.Port}
	}
	return nil
}

// sockReader reads a sock with one deadline for the whole message: what a
// worker's pooled bufio.Reader reads from.
type sockReader struct {
	s        *sock
	deadline time.Time
}

func (r *sockReader) Read(p []byte) (int, error) { return r.s.read(p, r.deadline) }

// detach takes an upgraded TCP connection's socket out of the net
// package: the fd is duplicated (close-on-exec, and non-blocking like the
// original, whose open file it shares), then the TCPConn is closed, which
// takes its fd out of the Go runtime's poller and frees its netFD. The
// socket itself stays open through the duplicate, which it returns.
func detach(tcp *net.TCPConn) (int32, error) {
	raw, err := tcp.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd := -1
	var derr error
	if err := raw.Control(func(f uintptr) {
		fd, derr = unix.FcntlInt(f, unix.F_DUPFD_CLOEXEC, 0)
	}); err != nil {
		return -1, err
	}
	if derr != nil {
		return -1, os.NewSyscallError("fcntl", derr)
	}
	tcp.Close()
	return int32(fd), nil
}
