package target

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stampede-dev/stampede/internal/epoll"
)

// reactor watches every idle connection's fd in one poller
// (internal/epoll) and hands a readable connection to a worker. Each fd is
// registered EPOLLONESHOT: after it fires it stays disarmed until the
// worker that read it re-arms it, so a connection is served by one worker
// at a time, and level-triggered re-arming fires again at once if bytes
// are still pending.
//
// The event's token carries the connection's key (connTable: its fd and
// id), so an event that was in flight when a connection closed finds
// nothing rather than a new connection that got the same fd number.
type reactor struct {
	ep *epoll.Poller
}

// reactorBatch is the number of epoll events per wait.
const reactorBatch = 256

const armEvents = unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLONESHOT

func newReactor() (*reactor, error) {
	ep, err := epoll.New(reactorBatch)
	if err != nil {
		return nil, fmt.Errorf("target: %w", err)
	}
	return &reactor{ep: ep}, nil
}

// ctl applies an epoll operation to c's fd while the fd is guaranteed open.
func (r *reactor) ctl(op int, c *Conn) error {
	if c.tls == nil {
		if !c.sock.acquire() {
			return errSockClosed
		}
		defer c.sock.release()
		return os.NewSyscallError("epoll_ctl", r.ctlFD(op, int(c.sock.fd), c))
	}
	var cerr error
	err := c.tls.raw.Control(func(fd uintptr) {
		cerr = r.ctlFD(op, int(fd), c)
	})
	return errors.Join(err, cerr)
}

func (r *reactor) ctlFD(op, fd int, c *Conn) error {
	switch op {
	case unix.EPOLL_CTL_ADD:
		return r.ep.Add(fd, armEvents, epoll.Token(c.key()))
	case unix.EPOLL_CTL_MOD:
		return r.ep.Mod(fd, armEvents, epoll.Token(c.key()))
	}
	return r.ep.Del(fd)
}

func (r *reactor) add(c *Conn) error    { return r.ctl(unix.EPOLL_CTL_ADD, c) }
func (r *reactor) rearm(c *Conn) error  { return r.ctl(unix.EPOLL_CTL_MOD, c) }
func (r *reactor) remove(c *Conn) error { return r.ctl(unix.EPOLL_CTL_DEL, c) }

// run waits for events and calls dispatch with each ready connection's key
// until stop is called.
func (r *reactor) run(dispatch func(key uint64)) error {
	for {
		evs, woken, err := r.ep.Wait(-1)
		if err != nil {
			return fmt.Errorf("target: %w", err)
		}
		if woken {
			return nil // stop
		}
		for i := range evs {
			dispatch(uint64(epoll.TokenOf(&evs[i])))
		}
	}
}

// stop makes run return.
func (r *reactor) stop() { r.ep.Wake() }

// close releases the poller; call it after run returned.
func (r *reactor) close() { r.ep.Close() }

// runReactor is the reactor goroutine: it feeds ready connections to the
// workers and closes the work queue when the reactor stops.
func (s *Server) runReactor() {
	defer s.wg.Done()
	defer close(s.work)
	err := s.reactor.run(func(key uint64) {
		s.mu.RLock()
		c := s.conns.lookup(key)
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
var readers = sync.Pool{New: func() any {
	r := new(connReader)
	r.br = bufio.NewReaderSize(nil, 4096)
	return r
}}

// connReader is a worker's read buffer and what it reads a ws://
// connection's socket through.
type connReader struct {
	br *bufio.Reader
	sr sockReader
}

func (r *connReader) put() {
	r.br.Reset(nil)
	r.sr = sockReader{}
	readers.Put(r)
}

// aLongTimeAgo is a deadline in the past, for a read that must not block.
var aLongTimeAgo = time.Unix(1, 0)

// serve reads the messages available on a readable connection, then
// re-arms it. Reading stops when the buffer is empty: for a plain socket,
// epoll fires again if more bytes are pending. Each message must arrive
// within FrameTimeout (a deadline checked while waiting in poll, not a
// timer).
func (s *Server) serve(c *Conn) {
	if c.tls != nil {
		s.serveTLS(c)
		return
	}
	if !c.sock.acquire() {
		s.closeConn(c, errSockClosed)
		return
	}
	rd := readers.Get().(*connReader)
	rd.sr.s = &c.sock
	rd.br.Reset(&rd.sr)
	var err error
	for {
		rd.sr.deadline = time.Now().Add(s.cfg.FrameTimeout)
		if err = s.readMessage(c, rd.br); err != nil || rd.br.Buffered() == 0 {
			break
		}
	}
	rd.put()
	c.sock.release()
	if err == nil {
		err = s.reactor.rearm(c)
	}
	if err != nil {
		s.closeConn(c, err)
	}
}

// serveTLS is serve for a wss:// connection. A *tls.Conn may hold
// decrypted bytes the socket no longer shows, so one non-blocking read (a
// deadline in the past returns what tls.Conn buffered, or a timeout)
// decides whether to go on.
func (s *Server) serveTLS(c *Conn) {
	nc := c.tls.nc
	rd := readers.Get().(*connReader)
	rd.br.Reset(nc)
	defer rd.put()
	for {
		nc.SetReadDeadline(time.Now().Add(s.cfg.FrameTimeout))
		if err := s.readMessage(c, rd.br); err != nil {
			s.closeConn(c, err)
			return
		}
		if rd.br.Buffered() > 0 {
			continue
		}
		nc.SetReadDeadline(aLongTimeAgo)
		if _, err := rd.br.Peek(1); err != nil {
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				s.closeConn(c, err)
				return
			}
			break
		}
	}
	// No deadline stays armed on an idle connection (a runtime timer each).
	nc.SetReadDeadline(time.Time{})
	if err := s.reactor.rearm(c); err != nil {
		s.closeConn(c, err)
	}
}
