package proxy

import (
	"golang.org/x/sys/unix"

	"github.com/stampede-dev/stampede/internal/epoll"
)

// Per-direction bounds of a link.
const (
	// proxyMaxQueued is how many bytes one direction of a link holds back
	// (a latency or bandwidth fault, a slow reader) before the proxy stops
	// reading its source, so TCP pushes back on the sender.
	proxyMaxQueued = 256 << 10
	// proxyMaxReads bounds the reads of one direction per pump, so one busy
	// link cannot starve the others.
	proxyMaxReads = 16
)

// linkState is where a link is in its life.
type linkState uint8

const (
	stClosed     linkState = iota // the slot is free
	stConnecting                  // the client is accepted, the upstream connect is in progress
	stOpen                        // relaying
	stDead                        // accepted during a blackhole: never connected upstream
)

// link is one relayed connection: the client's socket (side 0) and the
// upstream socket (side 1). Direction 0 reads side 0 and writes side 1
// (client to upstream); direction 1 the reverse.
type link struct {
	slot     int32
	gen      uint32 // bumped when the slot is reused: stale events and timers are skipped
	state    linkState
	fd       [2]int
	key      uint64 // the link's draws: linkKey(proc, reactor, serial)
	readable [2]bool
	writable [2]bool
	hup      [2]bool // the side reported RDHUP, HUP or ERR: read it to the end
	dir      [2]direction
}

// token is the high half of a side's epoll token: the slot's generation and the side.
func (l *link) token(side int) int32 { return int32(l.gen&0x3fffffff)<<1 | int32(side) }

// direction is one direction of a link: bytes read from its source that
// could not be written to its destination yet, in order.
type direction struct {
	q       []chunk
	head    int
	queued  int    // bytes in q
	last    int64  // release time of the last chunk queued: later chunks never overtake it
	n       uint64 // chunks delayed so far: the counter of the jitter draws
	eof     bool   // the source sent FIN
	rst     bool   // the source failed during a blackhole: reset the link once it lifts
	shut    bool   // the destination was shut down for writing
	timerAt int64  // when the timer heap wakes this direction; 0: not scheduled
	bucket  bucket
}

// chunk is bytes waiting for their release time (ns on the reactor clock).
type chunk struct {
	at int64
	b  []byte
}

func (d *direction) push(c chunk) {
	d.q = append(d.q, c)
	d.queued += len(c.b)
}

func (d *direction) pop() {
	d.q[d.head] = chunk{}
	d.head++
	if d.head == len(d.q) {
		d.head = 0
		d.q = d.q[:0]
		if cap(d.q) > 64 {
			d.q = nil // a burst's backlog is not kept for the link's life
		}
	}
}

// alloc returns a free link slot, reset, with a new generation.
func (r *reactor) alloc() *link {
	var l *link
	if n := len(r.free); n > 0 {
		l = r.links[r.free[n-1]]
		r.free = r.free[:n-1]
	} else {
		l = &link{slot: int32(len(r.links))}
		r.links = append(r.links, l)
	}
	*l = link{slot: l.slot, gen: l.gen + 1, fd: [2]int{-1, -1}}
	r.live++
	r.stats.active.Add(1)
	return l
}

// open takes a just-accepted client socket: it applies the faults that act
// on new connections, then connects the upstream.
func (r *reactor) open(cfd int) {
	// The accept loop may drain connections that arrived after a Set
	// during this batch: they meet the fault set of their time too.
	if st := r.p.fault.Load(); st != r.cur {
		r.apply(st)
	}
	r.stats.accepted.Add(1)
	key := linkKey(r.p.cfg.Proc, r.idx, r.serial)
	r.serial++
	f := &r.cur.f
	switch {
	case f.Reset:
		r.stats.reset.Add(1)
		resetFD(cfd)
		return
	case f.Loss > 0 && lost(r.p.cfg.Seed, key, r.cur.gen, f.Loss):
		r.stats.dropped.Add(1)
		resetFD(cfd)
		return
	}
	unix.SetsockoptInt(cfd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	l := r.alloc()
	l.key, l.fd[0] = key, cfd
	if f.Blackhole {
		r.stats.blackholed.Add(1)
		l.state = stDead
		if !r.register(l, 0) {
			r.closeLink(l)
		}
		return
	}
	ufd, err := r.dial()
	if err != nil {
		if err == unix.ECONNREFUSED {
			r.upstreamRefused() // first: the reset client may retry at once
		}
		r.refuse(l)
		return
	}
	l.fd[1], l.state = ufd, stConnecting
	if !r.register(l, 0) || !r.register(l, 1) {
		r.closeLink(l)
		return
	}
	r.timers.push(timer{at: r.now() + int64(r.p.cfg.ConnectTimeout), slot: l.slot, gen: l.gen, kind: timerConnect})
}

// register adds side of l to the epoll set, edge-triggered.
func (r *reactor) register(l *link, side int) bool {
	return r.ep.Add(l.fd[side], unix.EPOLLIN|unix.EPOLLOUT|unix.EPOLLRDHUP|unix.EPOLLET, epoll.Pair(l.slot, l.token(side))) == nil
}

// dial opens a non-blocking upstream socket and starts its connect.
func (r *reactor) dial() (int, error) {
	fd, err := unix.Socket(r.family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, unix.IPPROTO_TCP)
	if err != nil {
		return -1, err
	}
	unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	if r.source != nil {
		// Without IP_BIND_ADDRESS_NO_PORT the bind would take a port for
		// every destination (FIELD-NOTES).
		unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_BIND_ADDRESS_NO_PORT, 1)
		if err := unix.Bind(fd, r.source); err != nil {
			unix.Close(fd)
			return -1, err
		}
	}
	if err := unix.Connect(fd, r.upstream); err != nil && err != unix.EINPROGRESS {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// connected finishes the upstream connect of l.
func (r *reactor) connected(l *link) {
	if soErr, err := unix.GetsockoptInt(l.fd[1], unix.SOL_SOCKET, unix.SO_ERROR); err != nil || soErr != 0 {
		if unix.Errno(soErr) == unix.ECONNREFUSED {
			r.upstreamRefused() // first: the reset client may retry at once
		}
		r.refuse(l)
		return
	}
	l.state = stOpen
	r.pumpBoth(l)
}

// refuse ends a link whose upstream could not be reached: the client is
// reset, the closest a relay that has already accepted can come to a
// refused connect.
func (r *reactor) refuse(l *link) {
	r.stats.refused.Add(1)
	r.resetLink(l)
}

// closeLink closes both sockets of l and frees its slot.
func (r *reactor) closeLink(l *link) {
	for i, fd := range l.fd {
		if fd >= 0 {
			unix.Close(fd) // also leaves the epoll set
			l.fd[i] = -1
		}
	}
	l.state = stClosed
	l.dir = [2]direction{}
	r.free = append(r.free, l.slot)
	r.live--
	r.stats.active.Add(-1)
	if r.paused {
		r.paused = false
		r.again = append(r.again, againEntry{slot: -1})
	}
}

// pumpBoth moves what it can in both directions of an open link.
func (r *reactor) pumpBoth(l *link) {
	r.pump(l, 0)
	if l.state == stOpen {
		r.pump(l, 1)
	}
}

// pump moves direction d of l: it writes what is due, reads the source
// while it has data and the queue has room, and passes an end of stream on
// once everything before it was written.
func (r *reactor) pump(l *link, d int) {
	dir := &l.dir[d]
	hole := r.cur.f.Blackhole
	for reads := 0; ; reads++ {
		if !hole && !r.flush(l, d) {
			return
		}
		if !l.readable[d] || dir.eof || dir.queued >= proxyMaxQueued {
			break
		}
		if reads == proxyMaxReads {
			r.again = append(r.again, againEntry{slot: l.slot, gen: l.gen})
			break
		}
		n, err := unix.Read(l.fd[d], r.buf)
		switch {
		case err == unix.EAGAIN:
			l.readable[d] = false
		case err == unix.EINTR:
		case err != nil:
			if hole {
				dir.eof, dir.rst, l.readable[d] = true, true, false
				break
			}
			r.resetLink(l)
			return
		case n == 0:
			dir.eof, l.readable[d] = true, false
		default:
			if n < len(r.buf) && !l.hup[d] {
				// A short read emptied the receive queue: data arriving
				// after it raises a new edge, so the read that would
				// only say EAGAIN is saved (a third of the syscalls of a
				// small message). An end of stream is always read to.
				l.readable[d] = false
			}
			r.count(d, n)
			if hole {
				swallow(r, n)
			} else if !r.forward(l, d, r.buf[:n]) {
				return
			}
		}
	}
	if hole || !dir.eof || dir.queued > 0 || dir.shut {
		return
	}
	if dir.rst {
		r.resetLink(l)
		return
	}
	unix.Shutdown(l.fd[1-d], unix.SHUT_WR)
	dir.shut = true
	if l.dir[1-d].shut {
		r.closeLink(l)
	}
}

func (r *reactor) count(d, n int) {
	if d == 0 {
		r.stats.bytesUp.Add(uint64(n))
	} else {
		r.stats.bytesDown.Add(uint64(n))
	}
}

// forward passes bytes just read on direction d: written at once when no
// fault holds them and nothing is queued before them (the fast path: the
// shared buffer straight to the socket), queued with a release time
// otherwise. It returns false when the link was reset.
func (r *reactor) forward(l *link, d int, p []byte) bool {
	f := &r.cur.f
	dir := &l.dir[d]
	if dir.queued == 0 && f.Latency == 0 && f.Bandwidth == 0 {
		for len(p) > 0 && l.writable[1-d] {
			n, err := unix.Write(l.fd[1-d], p)
			switch {
			case err == unix.EAGAIN:
				l.writable[1-d] = false
			case err == unix.EINTR:
			case err != nil:
				r.resetLink(l)
				return false
			default:
				p = p[n:]
			}
		}
		if len(p) == 0 {
			return true
		}
	}
	at := r.now()
	if f.Latency > 0 {
		at = releaseAt(at, f.Latency, f.Jitter, jitterDraw(r.p.cfg.Seed, l.key, d, dir.n))
		dir.n++
	}
	at = max(at, dir.last) // order is kept per direction, whatever the jitter
	dir.last = at
	dir.push(chunk{at: at, b: append([]byte(nil), p...)})
	return true
}

// flush writes the queued chunks of direction d that are due, as far as
// the destination and the bandwidth allow, and schedules a wake-up for the
// rest. It returns false when the link was reset.
func (r *reactor) flush(l *link, d int) bool {
	dir := &l.dir[d]
	rate := r.cur.f.Bandwidth
	for dir.queued > 0 {
		if !l.writable[1-d] {
			return true // the next EPOLLOUT edge resumes it
		}
		c := &dir.q[dir.head]
		now := r.now()
		if c.at > now {
			r.schedule(l, d, c.at)
			return true
		}
		p := c.b
		if rate > 0 {
			n, wait := dir.bucket.take(now, rate, r.cur.gen, len(p))
			if n == 0 {
				r.schedule(l, d, now+wait)
				return true
			}
			p = p[:n]
		}
		w, err := unix.Write(l.fd[1-d], p)
		switch {
		case err == unix.EAGAIN || err == unix.EINTR:
			w = 0
			if err == unix.EAGAIN {
				l.writable[1-d] = false
			}
		case err != nil:
			r.resetLink(l)
			return false
		}
		if rate > 0 {
			dir.bucket.refund(len(p) - w)
		}
		c.b = c.b[w:]
		dir.queued -= w
		if len(c.b) == 0 {
			dir.pop()
		}
	}
	return true
}
