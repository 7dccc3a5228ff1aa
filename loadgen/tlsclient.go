package loadgen

import (
	"crypto/tls"
	"errors"
	"io"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stampede-dev/stampede/connerr"
	"github.com/stampede-dev/stampede/tlsconf"
)

// tlsHandshakers bounds a loadgen process's TLS handshakes in progress:
// each runs on a goroutine of its own (crypto/tls blocks), parked while it
// waits for the server, whose stack and key shares the fleet pays only
// while it runs. Connected clients beyond it wait their turn in order,
// their handshake deadline running. A handshake starts once the server
// took its connection (tlsfirst.go), so the bound is rarely reached: in a
// herd, with the server's accept queue full, the handshakes started at the
// connect held their goroutines for connections the server did not have,
// and with 256 a process (a 100,000-client restart, 2026-12-06) they held
// them all while accepted connections timed out in the queue behind them.
var tlsHandshakers = 4096

// tlsWaitAbove is how many handshakes a loadgen process may have in
// progress or queued before its clients' handshakes wait for the server
// to take their connections (tlsfirst.go): fewer, and a handshake starts
// at the connect, its ClientHello in one piece. At most this many
// handshakes started early hold their key shares for connections the
// server may not have: 24 MiB a process.
var tlsWaitAbove = 1024

// tlsClient is the TLS side of a reactor's wss:// client. The handshake
// runs on a goroutine (handshake) that owns the socket meanwhile; then
// the reactor drives the tls.Conn like a raw socket: it reads when epoll
// says readable, and writes what the socket takes, queueing the rest.
// Once the server's session ticket came, a TLS 1.3 connection leaves
// crypto/tls for the reactor's record layer (tlsswap.go): the client
// then keeps only its record keys, and its session between connections.
type tlsClient struct {
	conn     *tls.Conn               // while crypto/tls runs the current connection, nil otherwise
	fc       *fdConn                 // the socket under conn
	before   *tls.ClientSessionState // while waiting for the server's ticket: the session held before it
	raw      []byte                  // a partial record while one straddles reads (record layer)
	sess     tlsconf.Session         // the client's session cache, unless TLSNoResume
	keys     recordKeys              // the record layer's; suite 0 when none
	deadline int64                   // the handshake's, offset ns
	queued   bool                    // waiting in the reactor's tlsQueue
	waiting  bool                    // waiting for the server to acknowledge the ClientHello's first byte
	first    bool                    // that byte went ahead: the handshake's first write leaves it out
	working  bool                    // a handshake goroutine owns the socket
	resumed  bool                    // the current connection resumed a session
}

// reset drops the client's connection state; its session stays.
func (t *tlsClient) reset() {
	t.conn, t.fc, t.before, t.raw, t.keys = nil, nil, nil, nil, recordKeys{}
	t.waiting, t.first = false, false
}

// tlsDone is a finished handshake, sent by its goroutine to the reactor.
type tlsDone struct {
	j    int32
	sock uint32
	log  *secretLog
	err  error
}

// beginTLS starts the TLS handshake of the shard's j-th client, whose TCP
// connect just completed: once the server has the connection (sendFirst),
// it waits for a handshake goroutine, its handshake deadline
// (HandshakeTimeout, which covers the upgrade too) running.
func (r *reactor) beginTLS(j int32, now int64) {
	c := &r.clients[j]
	t := &r.tls[j]
	c.state = stTLS
	t.deadline = addSat(now, r.f.cfg.HandshakeTimeout)
	r.timers.schedule(j, t.deadline)
	if r.tlsBusy+len(r.tlsQueue) >= r.waitAbove {
		sent, failed := r.sendFirst(j, now)
		if failed {
			return
		}
		if sent {
			t.waiting, t.first = true, true
			return
		}
	}
	r.queueTLS(j)
}

// queueTLS queues a client for a handshake goroutine.
func (r *reactor) queueTLS(j int32) {
	if t := &r.tls[j]; !t.queued {
		t.queued = true
		r.tlsQueue = append(r.tlsQueue, j)
	}
	r.dispatchTLS()
}

// dispatchTLS starts handshakes of queued clients while goroutines are
// free. A client whose deadline passed in the queue has failed already.
func (r *reactor) dispatchTLS() {
	for r.tlsBusy < r.tlsMax && len(r.tlsQueue) > 0 {
		j := r.tlsQueue[0]
		r.tlsQueue = r.tlsQueue[1:]
		c, t := &r.clients[j], &r.tls[j]
		t.queued = false
		if c.state != stTLS {
			continue
		}
		t.working = true
		t.fc = &fdConn{r: r, j: j, fd: c.fd, blocking: true, skip: t.first, wake: make(chan struct{}, 1), deadline: r.epoch.Add(time.Duration(t.deadline - r.startOff))}
		log := new(secretLog)
		t.conn = tls.Client(t.fc, r.clientTLS(j, log))
		r.tlsBusy++
		r.tlsWG.Add(1)
		go r.handshake(t.conn, log, j, c.sockets)
	}
	if len(r.tlsQueue) == 0 {
		r.tlsQueue = r.tlsQueue[:0:0] // let a storm's queue go
	}
}

// handshake runs on its own goroutine, which owns the client's socket until
// it reports to the reactor.
func (r *reactor) handshake(tc *tls.Conn, log *secretLog, j int32, sock uint32) {
	defer r.tlsWG.Done()
	err := tc.Handshake()
	r.tlsDone <- tlsDone{j: j, sock: sock, log: log, err: err}
	r.ep.Wake()
}

// clientTLS returns the config of one handshake of the shard's j-th
// client: a copy of the fleet's, let go after the handshake, whose key
// log takes the traffic secrets and whose session cache is the client's
// (unless TLSNoResume).
func (r *reactor) clientTLS(j int32, log *secretLog) *tls.Config {
	cfg := r.f.tls.Clone()
	cfg.KeyLogWriter = log
	if !r.f.cfg.TLSNoResume {
		cfg.ClientSessionCache = &r.tls[j].sess
	}
	return cfg
}

// tlsEdge passes an epoll edge of a client's socket to its handshake
// goroutine, if one owns it (a token already there stands for this one),
// or to the wait for the server's acknowledgement.
func (r *reactor) tlsEdge(j int32, events uint32) {
	t := &r.tls[j]
	if t.waiting {
		r.firstEdge(j, events)
		return
	}
	if t.working {
		select {
		case t.fc.wake <- struct{}{}:
		default:
		}
	}
}

// tlsFinished takes the handshakes the goroutines finished, then starts
// queued ones.
func (r *reactor) tlsFinished() {
	for {
		select {
		case d := <-r.tlsDone:
			if r.stopping.Load() {
				return // the run ended: what the goroutines saw of it is no outcome
			}
			r.tlsBusy--
			r.handshook(d)
		default:
			r.dispatchTLS()
			return
		}
	}
}

// handshook hands a finished handshake's socket to the reactor: it fails
// the attempt, or sends the upgrade request over TLS and reads what
// arrived while the goroutine held the socket (no edge will come for it).
func (r *reactor) handshook(d tlsDone) {
	j := d.j
	c, t := &r.clients[j], &r.tls[j]
	t.working = false
	now := r.now()
	if d.err != nil {
		if !r.f.cfg.TLSNoResume { // a transport failure keeps the session crypto/tls forgot
			t.sess.Failed(d.err)
		}
		r.fail(j, failure{class: connerr.ClassifyPhase(d.err, connerr.PhaseHandshake), err: d.err, abort: tlsAbort(d.err)}, now)
		return
	}
	t.fc.blocking = false
	st := t.conn.ConnectionState()
	t.resumed = st.DidResume
	t.keys = d.log.keys(st)
	t.before, _ = t.sess.Get("")
	releaseTLSBuffers(t.conn)
	c.state = stHandshaking
	r.timers.schedule(j, t.deadline)
	if r.takeOverDue(j) && !r.takeOver(j, now) {
		return
	}
	req := r.f.up.appendRequest(r.wbuf[:0], r.id(j), c.sockets)
	r.wbuf = req[:0] // keep a grown buffer
	if r.send(j, req) {
		r.readable(j, 0)
	}
}

// tlsTimeout handles a client's handshake deadline in the TLS state: a
// queued client fails; a goroutine's handshake has the same deadline and
// reports it.
func (r *reactor) tlsTimeout(j int32, now int64) {
	if r.tls[j].working {
		return
	}
	r.fail(j, failure{class: connerr.HandshakeTimeout, err: r.errHandshakeTimeout, abort: true}, now)
}

// tlsAbort reports whether a failed handshake closes its socket with a
// reset: the server went away or never answered (see failure.abort).
func tlsAbort(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || connerr.ClassifyPhase(err, connerr.PhaseHandshake) == connerr.HandshakeTimeout
}

// readableTLS reads a wss:// client's tls.Conn until the socket is
// drained: each Read decrypts one record, keeping a partial one for the
// next edge (errWouldBlock). Once the connection may leave crypto/tls
// (takeOverDue), the record layer reads on.
func (r *reactor) readableTLS(j int32) {
	c := &r.clients[j]
	sock := c.sockets
	tc := r.tls[j].conn
	for i := 0; i < maxReadsPerFD; i++ {
		n, err := tc.Read(r.rbuf)
		now := r.now()
		if n > 0 {
			r.received(j, r.rbuf[:n], now)
			if c.sockets != sock || c.fd < 0 {
				return // the connection ended while its data was handled
			}
		}
		switch {
		case err == nil:
		case err == errWouldBlock:
			if r.takeOverDue(j) && (!r.takeOver(j, now) || r.tls[j].conn == nil) {
				return // ended, or on the record layer
			}
			releaseTLSBuffers(tc)
			return
		case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
			r.ended(j, now) // end of stream or close_notify: no close frame
			return
		default:
			r.lost(j, err, now)
			return
		}
		if r.takeOverDue(j) {
			if !r.takeOver(j, now) {
				return
			}
			if r.tls[j].conn == nil {
				r.readable(j, unix.EPOLLRDHUP) // to EAGAIN: this edge is taken
				return
			}
		}
	}
	r.again = append(r.again, j)
}
