package loadgen

import (
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/gobwas/ws"
	"golang.org/x/sys/unix"

	"github.com/stampede-dev/stampede/connerr"
	"github.com/stampede-dev/stampede/internal/rawsys"
)

// Buffer bounds.
const (
	maxOut       = 256 << 10 // unsent bytes per client before pongs and messages are skipped
	keepExtBytes = 4 << 10   // buffers larger than this are not recycled
)

// errClosedNoFrame is an established connection the server ended without
// a close frame.
var errClosedNoFrame = fmt.Errorf("connection closed without a close frame: %w", io.EOF)

// errNoAnswerEOF is an attempt the server ended before its upgrade answer.
var errNoAnswerEOF = fmt.Errorf("%w: %w", errNoAnswer, io.EOF)

// readable reads the shard's j-th client's socket until it is drained. With
// edge-triggered epoll a short read means the queue was empty, unless the
// peer closed: then reading goes on to the end of stream. A wss://
// connection on crypto/tls reads through it (readableTLS); one taken over
// by the record layer reads its records here (records).
func (r *reactor) readable(j int32, events uint32) {
	records := r.tls != nil
	if records && r.tls[j].conn != nil {
		r.readableTLS(j)
		return
	}
	c := &r.clients[j]
	sock := c.sockets
	closing := events&(unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0
	for i := 0; i < maxReadsPerFD; i++ {
		n, errno := rawsys.Read(int(c.fd), r.rbuf)
		now := r.now()
		switch {
		case errno == unix.EAGAIN:
			return
		case errno == unix.EINTR:
			continue
		case errno != 0:
			r.lost(j, r.ioError("read", errno), now)
			return
		case n == 0:
			r.ended(j, now) // a bare FIN; over TLS, a partial record or none
			return
		}
		if records {
			if !r.records(j, r.rbuf[:n], now) {
				return
			}
		} else {
			r.received(j, r.rbuf[:n], now)
			if c.sockets != sock || c.fd < 0 {
				return // the connection ended while its data was handled
			}
		}
		if n < len(r.rbuf) && !closing {
			return
		}
	}
	r.again = append(r.again, j)
}

// received handles bytes read from the shard's j-th client's connection:
// its upgrade answer, or frames.
func (r *reactor) received(j int32, data []byte, now int64) {
	if r.clients[j].state == stHandshaking {
		r.answer(j, data, now)
	} else {
		r.frames(j, data, now)
	}
}

// ended handles the end of stream of the shard's j-th client's connection.
func (r *reactor) ended(j int32, now int64) {
	if r.clients[j].state == stConnected {
		r.lost(j, errClosedNoFrame, now)
	} else {
		r.lost(j, errNoAnswerEOF, now)
	}
}

// ioError describes a failed read or write for a client's last error.
func (r *reactor) ioError(op string, err error) error {
	return &net.OpError{Op: op, Net: "tcp", Addr: r.dstAddr(), Err: os.NewSyscallError(op, err)}
}

// answer handles bytes of the upgrade answer. Answers normally arrive in one
// read; a split one is gathered in the client's extras.
func (r *reactor) answer(j int32, data []byte, now int64) {
	c := &r.clients[j]
	buf := data
	pending := c.ext != nil && len(c.ext.in) > 0
	if pending {
		c.ext.in = append(c.ext.in, data...)
		buf = c.ext.in
	}
	end := headerEnd(buf)
	if end < 0 {
		if len(buf) > maxAnswer {
			r.fail(j, failure{class: connerr.Protocol, err: errAnswerTooLarge}, now)
			return
		}
		if !pending {
			e := r.extOf(j)
			e.in = append(e.in, data...)
		}
		return
	}
	id := r.id(j)
	a, err := r.f.up.parseAnswer(buf[:end], id, c.sockets)
	if err != nil {
		r.fail(j, failure{class: connerr.ClassifyPhase(err, connerr.PhaseHandshake), err: err}, now)
		return
	}
	if a.status != 101 {
		f := failure{class: connerr.ClassifyStatus(a.status), status: a.status, err: ws.StatusError(a.status)}
		if connerr.HonorsRetryAfter(a.status) && len(a.retryAfter) > 0 {
			f.hint, _ = connerr.ParseRetryAfter(string(a.retryAfter), time.Now(), r.f.cfg.RetryAfterCap)
		}
		r.fail(j, f, now)
		return
	}
	rest := buf[end:]
	if pending {
		// rest aliases c.ext.in; frames copies any remainder to the front
		// of the same array (a forward copy, so the overlap is safe).
		c.ext.in = c.ext.in[:0]
	}
	r.connected(j, now)
	if len(rest) > 0 && c.state == stConnected {
		r.frames(j, rest, now)
	} else {
		r.release(j)
	}
}

// backedUp reports whether the client has unsent output.
func (r *reactor) backedUp(j int32) bool {
	e := r.clients[j].ext
	return e != nil && len(e.out) > 0
}

// send writes p to the client's connection (over TLS for wss://),
// queueing what the socket does not take (edge-triggered EPOLLOUT flushes
// it). It reports false when the connection ended.
func (r *reactor) send(j int32, p []byte) bool {
	var err error
	if r.tls != nil {
		err = r.sendTLS(j, p)
	} else {
		err = r.sendRaw(j, p)
	}
	if err != nil {
		r.lost(j, err, r.now())
		return false
	}
	return true
}

// sendRaw writes p to the client's socket, queueing what it does not take.
func (r *reactor) sendRaw(j int32, p []byte) error {
	c := &r.clients[j]
	if e := c.ext; e != nil && len(e.out) > 0 {
		e.out = append(e.out, p...)
		return nil
	}
	n, err := r.write(c.fd, p)
	if err != nil {
		return r.ioError("write", err)
	}
	if n < len(p) {
		e := r.extOf(j)
		e.out = append(e.out, p[n:]...)
	}
	return nil
}

// flush writes queued output; it reports false when the connection ended.
func (r *reactor) flush(j int32) bool {
	c := &r.clients[j]
	e := c.ext
	n, err := r.write(c.fd, e.out)
	if err != nil {
		r.lost(j, r.ioError("write", err), r.now())
		return false
	}
	e.out = e.out[:copy(e.out, e.out[n:])]
	r.release(j)
	return true
}

// write writes what the socket takes; EAGAIN is not an error.
func (r *reactor) write(fd int32, p []byte) (int, error) {
	for {
		n, errno := rawsys.Write(int(fd), p)
		switch errno {
		case 0:
			return n, nil
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return 0, nil
		}
		return 0, errno
	}
}

// extOf returns the client's extras, taking recycled ones first.
func (r *reactor) extOf(j int32) *extras {
	c := &r.clients[j]
	if c.ext == nil {
		if n := len(r.free); n > 0 {
			c.ext = r.free[n-1]
			r.free = r.free[:n-1]
		} else {
			c.ext = &extras{}
		}
	}
	return c.ext
}

// release recycles the client's extras once they hold nothing.
func (r *reactor) release(j int32) {
	c := &r.clients[j]
	if c.ext != nil && c.ext.idle() {
		e := c.ext
		c.ext = nil
		r.recycle(e)
	}
}

func (r *reactor) recycle(e *extras) {
	if cap(e.in) > keepExtBytes {
		e.in = nil
	}
	if cap(e.out) > keepExtBytes {
		e.out = nil
	}
	if len(r.free) < maxFreeExtras {
		r.free = append(r.free, e)
	}
}

// sendLast writes p, best effort, to a connection about to be closed: what
// the socket does not take is lost.
func (r *reactor) sendLast(j int32, p []byte) {
	if r.tls != nil {
		_ = r.sendTLS(j, p)
		return
	}
	_, _ = r.write(r.clients[j].fd, p)
}
