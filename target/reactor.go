package target

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// reactor watches every idle connection's fd in one epoll set and hands a
// readable connection to a worker. Each fd is registered EPOLLONESHOT: after
// it fires it stays disarmed until the worker that read it re-arms it, so a
// connection is served by one worker at a time, and level-triggered re-arming
// fires again at once if bytes are still pending.
//
// The event's 64-bit data carries the connection's id, never reused, so an
// event that was in flight when a connection closed finds nothing rather
// than a new connection that got the same fd number.
type reactor struct {
	epfd   int
	wakefd int // eventfd: a write wakes EpollWait to stop the loop
}

const armEvents = unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLONESHOT

func newReactor() (*reactor, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("target: epoll_create1: %w", err)
	}
	wakefd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(epfd)
		return nil, fmt.Errorf("target: eventfd: %w", err)
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN}
	setID(&ev, 0) // id 0 is never a connection's
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, wakefd, &ev); err != nil {
		unix.Close(epfd)
		unix.Close(wakefd)
		return nil, fmt.Errorf("target: epoll_ctl: %w", err)
	}
	return &reactor{epfd: epfd, wakefd: wakefd}, nil
}

func setID(ev *unix.EpollEvent, id uint64) {
	ev.Fd, ev.Pad = int32(uint32(id)), int32(uint32(id>>32))
}

func eventID(ev *unix.EpollEvent) uint64 {
	return uint64(uint32(ev.Fd)) | uint64(uint32(ev.Pad))<<32
}

// ctl applies an epoll operation to c's fd while the fd is guaranteed open.
func (r *reactor) ctl(op int, c *Conn) error {
	var cerr error
	err := c.raw.Control(func(fd uintptr) {
		ev := unix.EpollEvent{Events: armEvents}
		setID(&ev, c.id)
		cerr = unix.EpollCtl(r.epfd, op, int(fd), &ev)
	})
	return errors.Join(err, cerr)
}

func (r *reactor) add(c *Conn) error    { return r.ctl(unix.EPOLL_CTL_ADD, c) }
func (r *reactor) rearm(c *Conn) error  { return r.ctl(unix.EPOLL_CTL_MOD, c) }
func (r *reactor) remove(c *Conn) error { return r.ctl(unix.EPOLL_CTL_DEL, c) }

// run waits for events and calls dispatch with each ready connection's id
// until stop is called.
func (r *reactor) run(dispatch func(id uint64)) error {
	events := make([]unix.EpollEvent, 256)
	for {
		n, err := unix.EpollWait(r.epfd, events, -1)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("target: epoll_wait: %w", err)
		}
		for i := range events[:n] {
			id := eventID(&events[i])
			if id == 0 {
				return nil // stop
			}
			dispatch(id)
		}
	}
}

// stop makes run return.
func (r *reactor) stop() {
	var one = [8]byte{1}
	unix.Write(r.wakefd, one[:])
}

// close releases the epoll set; call it after run returned.
func (r *reactor) close() {
	unix.Close(r.epfd)
	unix.Close(r.wakefd)
}

// runReactor is the reactor goroutine: it feeds ready connections to the
// workers and closes the work queue when the reactor stops.
func (s *Server) runReactor() {
	defer s.wg.Done()
	defer close(s.work)
	err := s.reactor.run(func(id uint64) {
		s.mu.RLock()
		c := s.conns[id]
		s.mu.RUnlock()
		if c != nil {
			s.work <- c
		}
	})
	if err != nil {
		s.cfg.Logger.Error("reactor stopped", "err", err)
	}
}

// worker serves readable connections until the work queue closes.
func (s *Server) worker() {
	defer s.wg.Done()
	for c := range s.work {
		s.serve(c)
	}
}

// readers pools the read buffers: a buffer is held only while a worker
// reads a connection, never by an idle one.
var readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4096) }}

// aLongTimeAgo is a deadline in the past, for a read that must not block.
var aLongTimeAgo = time.Unix(1, 0)

// serve reads the messages available on a readable connection, then
// re-arms it. Reading stops when the buffer is empty: for a plain socket,
// epoll fires again if more bytes are pending. A *tls.Conn may hold
// decrypted bytes the socket no longer shows, so for TLS one non-blocking
// read (a deadline in the past returns what tls.Conn buffered, or a timeout)
// decides whether to go on.
func (s *Server) serve(c *Conn) {
	br := readers.Get().(*bufio.Reader)
	br.Reset(c.nc)
	defer func() {
		br.Reset(nil)
		readers.Put(br)
	}()
	for {
		c.nc.SetReadDeadline(time.Now().Add(s.cfg.FrameTimeout))
		if err := s.readMessage(c, br); err != nil {
			s.closeConn(c, err)
			return
		}
		if br.Buffered() > 0 {
			continue
		}
		if !c.isTLS {
			break
		}
		c.nc.SetReadDeadline(aLongTimeAgo)
		if _, err := br.Peek(1); err != nil {
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				s.closeConn(c, err)
				return
			}
			break
		}
	}
	// No deadline stays armed on an idle connection (a runtime timer each).
	c.nc.SetReadDeadline(time.Time{})
	if err := s.reactor.rearm(c); err != nil {
		s.closeConn(c, err)
	}
}
