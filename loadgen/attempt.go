package loadgen

import (
	"math"
	"net"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/connerr"
	"github.com/stampede-dev/stampede/internal/epoll"
	"github.com/stampede-dev/stampede/internal/rawsys"
)

// epollFlags are set once per socket: edge-triggered, so a socket is never
// modified after it is added (no EPOLL_CTL_MOD on the hot path), and closing
// the socket removes it.
const epollFlags = unix.EPOLLIN | unix.EPOLLOUT | unix.EPOLLRDHUP | unix.EPOLLET

// failure is why an attempt failed or a connection ended.
type failure struct {
	class  connerr.Class
	status int           // HTTP status of a non-101 answer
	hint   time.Duration // Retry-After of a 429, 502, 503 or 504 answer, or the delay of a 1012 or 1013 close
	err    error         // the cause, for the text kept by a stopped client
	conn   backoff.Conn  // what the policy may ask of the connection (its close code, how long it was up)
	// abort closes the socket with a reset (rawsys.Abort): set where the
	// server is gone (it closed first, without a close frame) or never
	// took the connection (the upgrade's answer timed out), so that
	// neither end keeps a closing socket: no FIN_WAIT retransmits to a
	// server that dropped the connection, no TIME_WAIT in the kernel's
	// tables while the herd reconnects.
	abort bool
}

// start begins an attempt of the shard's j-th client: socket, bind,
// non-blocking connect, epoll registration and the connect deadline.
func (r *reactor) start(j int32, now int64) {
	c := &r.clients[j]
	c.sockets++
	c.attemptAt = now
	c.state = stConnecting
	r.inflight++
	r.rec.attempt(now)
	fd, op, errno := r.dial.connect(r.id(j))
	if errno != 0 {
		r.fail(j, r.dialFailure(op, errno), now)
		return
	}
	c.fd = int32(fd)
	if err := r.ep.Add(fd, epollFlags, epoll.Pair(j, int32(c.sockets))); err != nil {
		r.fail(j, r.dialFailure("epoll_ctl", toErrno(err)), now)
		return
	}
	r.timers.schedule(j, addSat(now, r.f.cfg.ConnectTimeout))
}

// dialFailure classifies a failed step of a connect.
func (r *reactor) dialFailure(op string, errno unix.Errno) failure {
	return failure{
		class: connerr.Classify(errno),
		err:   &net.OpError{Op: "dial", Net: "tcp", Addr: r.dstAddr(), Err: os.NewSyscallError(op, errno)},
	}
}

// answered handles client j's connect or upgrade whose deadline came
// while its answer waited unread, and reports whether that moved it on.
// A reactor behind on its events (a restart's herd on a machine it
// shares with the target) holds answers the kernel has already
// reported; poll(2) asks the socket itself (events: unix.POLLOUT for a
// connect, unix.POLLIN for an upgrade), so a deadline fails only an
// attempt the server did not answer in time. The poll is spent on
// expired deadlines alone.
func (r *reactor) answered(j int32, events int16) bool {
	c := &r.clients[j]
	revents, errno := rawsys.Poll(int(c.fd), events)
	if errno != 0 || revents == 0 {
		return false
	}
	sock, state := c.sockets, c.state
	// poll's bits are epoll's (POLLIN, POLLOUT, POLLERR, POLLHUP).
	switch state {
	case stConnecting:
		r.connectDone(j, uint32(revents))
	case stHandshaking:
		r.readable(j, uint32(revents)|unix.EPOLLRDHUP)
	}
	return c.sockets != sock || c.state != state
}

// connectDone handles an event on a connecting socket: the connect either
// failed (SO_ERROR) or completed, and then the upgrade request goes out.
func (r *reactor) connectDone(j int32, events uint32) {
	if events&(unix.EPOLLOUT|unix.EPOLLERR|unix.EPOLLHUP) == 0 {
		return
	}
	c := &r.clients[j]
	now := r.now()
	// A connect that failed raises EPOLLERR or EPOLLHUP; one that succeeded
	// only EPOLLOUT, so the getsockopt is spent on failures alone.
	if events&(unix.EPOLLERR|unix.EPOLLHUP) != 0 {
		if errno := soError(int(c.fd)); errno != 0 {
			r.fail(j, r.dialFailure("connect", errno), now)
			return
		}
	}
	if events&unix.EPOLLOUT == 0 {
		return
	}
	if errno := r.dial.established(int(c.fd)); errno != 0 {
		r.fail(j, r.dialFailure("setsockopt TCP_NODELAY", errno), now)
		return
	}
	if r.tls != nil {
		r.beginTLS(j, now)
		return
	}
	c.state = stHandshaking
	r.timers.schedule(j, addSat(now, r.f.cfg.HandshakeTimeout))
	req := r.f.up.appendRequest(r.wbuf[:0], r.id(j), c.sockets)
	r.wbuf = req[:0] // keep a grown buffer
	r.send(j, req)
}

// connected makes the shard's j-th client established after its 101: the
// attempt succeeded. The client is up at once, or, when its mode says so
// (handler.upAtUpgrade), once the mode reports it caught up (up).
func (r *reactor) connected(j int32, now int64) {
	c := &r.clients[j]
	r.timers.cancel(j)
	c.state = stConnected
	c.seq = 0
	r.inflight--
	r.rec.upgraded(c.attemptAt, now)
	if r.tls != nil {
		r.rec.tlsHandshake(now, r.tls[j].resumed)
	}
	if r.f.cfg.Policy.Resets(0) {
		c.attempt = 0
	}
	if r.ka != nil {
		r.ka.connected(j, now)
	}
	if r.upAtUpgrade {
		r.up(j, now)
	}
	r.mode.connected(r, j, now)
}

// up records the shard's j-th client up on its current connection: its Up
// transition and its time to recover since downAt, which runs on across
// connections that ended before they were up. Only the first call of a
// connection counts.
func (r *reactor) up(j int32, now int64) {
	c := &r.clients[j]
	if c.up || c.state != stConnected {
		return
	}
	c.up = true
	r.rec.up(r.id(j), now, c.downAt)
	c.downAt = noTime
}

// fail ends an attempt that did not connect, then retries or stops.
func (r *reactor) fail(j int32, f failure, now int64) {
	r.closeSocket(j, f.abort)
	r.inflight--
	r.rec.failure(f.class, now)
	r.retry(j, f, now)
}

// drop ends an established connection, then retries or stops.
func (r *reactor) drop(j int32, f failure, now int64) {
	c := &r.clients[j]
	f.conn.Dropped, f.conn.Up = true, time.Duration(now-c.attemptAt)
	if c.attempt != 0 && r.f.cfg.Policy.Resets(f.conn.Up) {
		c.attempt = 0 // a preset that resets only after some uptime
	}
	r.closeSocket(j, f.abort)
	r.rec.ended(f.class, now)
	if c.up {
		// A connection that ended before it was up has no Down: the
		// client's time to recover keeps running from its last one.
		r.rec.down(r.id(j), now)
		c.up, c.downAt = false, now
	}
	r.mode.closed(r, j, now)
	r.retry(j, f, now)
}

// lost handles a socket error or end of stream in the handshaking or
// connected state.
// An end of stream (the server closed first) is closed with a reset.
func (r *reactor) lost(j int32, err error, now int64) {
	abort := err == errClosedNoFrame || err == errNoAnswerEOF
	if r.clients[j].state == stConnected {
		r.drop(j, failure{class: r.sessionClass(j, 0, "", now, connerr.Closed1006), err: err, abort: abort}, now)
		return
	}
	r.fail(j, failure{class: connerr.ClassifyPhase(err, connerr.PhaseHandshake), err: err, abort: abort}, now)
}

// retry counts the attempt and schedules the next one, or stops the client
// for good (see nextWait).
func (r *reactor) retry(j int32, f failure, now int64) {
	c := &r.clients[j]
	c.attempt++
	f.conn.SinceAttempt = time.Duration(now - c.attemptAt)
	if c.downAt != noTime {
		f.conn.SinceDrop = time.Duration(now - c.downAt)
	}
	dec := nextWait(&r.f.cfg, r.id(j), int(c.attempt), f, now)
	if dec.Stop != backoff.Continue {
		c.state = stStopped
		r.rec.stop(f.class, f.text(), now, dec.Stop == backoff.Exhausted)
		return
	}
	c.state = stWaiting
	r.timers.schedule(j, addSat(now, dec.Delay))
}

// nextWait decides retry number attempt of client id after failure f at
// offset now (Policy.Next, given f.conn): the policy's delay, or, when longer, the
// server's hint spread upwards: the Retry-After of a 429, 502, 503 or 504,
// or the delay in the reason of a 1012 or 1013 close
// (connerr.ParseCloseHint), never shorter than asked; the policy's delay
// is the floor; ignored with Config.NoRetryAfter. Its Stop is not
// Continue when the client must stop: a class that is not retryable
// (Refused), a close code the policy's library does not retry (Refused),
// or the policy's attempts exhausted (Exhausted). It calls Config.OnRetry.
func nextWait(cfg *Config, id uint32, attempt int, f failure, now int64) backoff.Decision {
	if !f.class.Retryable(f.status) {
		return backoff.Decision{Stop: backoff.Refused}
	}
	dec := cfg.Policy.Next(cfg.Seed, uint64(id), attempt, f.conn)
	if dec.Stop != backoff.Continue {
		return dec
	}
	if f.hint > 0 && connerr.HonorsHint(f.class, f.status) && !cfg.NoRetryAfter {
		dec.Delay = max(dec.Delay, backoff.Hinted(f.hint, backoff.HintSpread, backoff.U(cfg.Seed, backoff.StreamHint, uint64(id), uint64(attempt))))
	}
	if cfg.OnRetry != nil {
		cfg.OnRetry(Retry{Client: id, Attempt: attempt, Class: f.class, Hint: f.hint, Delay: dec.Delay, At: time.Duration(now)})
	}
	return dec
}

// text is the failure as a stopped client's last error.
func (f failure) text() string {
	return (&connerr.Error{Class: f.class, Status: f.status, RetryAfter: f.hint, Err: f.err}).Error()
}

// closeSocket closes the client's socket (which also leaves epoll), with
// a reset when abort is set, and drops its deadline and buffers.
func (r *reactor) closeSocket(j int32, abort bool) {
	c := &r.clients[j]
	if c.fd >= 0 {
		if abort {
			rawsys.Abort(int(c.fd))
		} else {
			rawsys.Close(int(c.fd))
		}
		c.fd = -1
	}
	r.timers.cancel(j)
	if r.tls != nil {
		r.tls[j].reset()
	}
	if c.ext != nil {
		e := c.ext
		c.ext = nil
		e.in, e.out, e.skip = e.in[:0], e.out[:0], 0
		r.recycle(e)
	}
}

// addSat returns now+d without overflowing.
func addSat(now int64, d time.Duration) int64 {
	if d > 0 && now > math.MaxInt64-int64(d) {
		return math.MaxInt64
	}
	return now + int64(d)
}
