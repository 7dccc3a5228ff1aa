package loadgen

import (
	"bytes"
	"fmt"
	"math"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gobwas/ws"
	"golang.org/x/sys/unix"

	"github.com/stampede-dev/stampede/connerr"
	"github.com/stampede-dev/stampede/internal/epoll"
	"github.com/stampede-dev/stampede/internal/rawsys"
	"github.com/stampede-dev/stampede/spec"
)

// Reactor sizes.
const (
	readBufSize   = 64 << 10 // the shared read buffer
	writeBufSize  = 4 << 10  // the shared write buffer to start with; a larger frame grows it
	eventBatch    = 256      // epoll events per wait
	firesPerLoop  = 512      // timer firings and ramp starts per loop, so events are not starved
	maxBehind     = 64       // full batches read in a row before the timers fire all the same
	maxReadsPerFD = 16       // full reads of one socket per event before it is revisited
	maxWait       = 10e3     // longest epoll wait in ms, a safety net: a wake-up stops it
	maxFreeExtras = 256      // recycled extras kept per reactor
)

// reactor runs one shard of the fleet on one goroutine: an epoll instance
// for its sockets, a timer heap for its deadlines, one read and one write
// buffer shared by all its clients (the write buffer grows to the largest
// frame sent, 4 KiB to start with: most are pings, pongs and upgrades). Its shard holds the clients whose fleet
// index i satisfies i % nr == r, so every reactor ramps at the same pace.
type reactor struct {
	f       *Fleet
	r, nr   int // this reactor's number and the number of reactors
	clients []client
	timers  timerHeap
	dial    *dialer
	rec     *recorder
	mode    handler
	ka      *keepalives // nil when keepalive pings are off

	ep    *epoll.Poller // the shard's sockets, token (client index, socket number)
	rbuf  []byte
	wbuf  []byte
	pbuf  []byte // scratch for echo payloads being built (MsgSize)
	sbuf  []byte // wss://: records being sealed (tlsdrive.go)
	rd    bytes.Reader
	hdr   [ws.MaxHeaderSize]byte
	aw    appendWriter
	free  []*extras
	again []int32 // sockets with unread data left after maxReadsPerFD reads

	epoch       time.Time // monotonic reference for now()
	startOff    int64     // epoch minus the run's start, ns
	next        int32     // ramp cursor: the first client not started yet
	slotNs      float64   // ns between ramp slots of the fleet, 0 without a ramp
	inflight    int       // attempts connecting or handshaking
	upAtUpgrade bool      // the mode's handler.upAtUpgrade
	maxFirst    int       // MaxInflight's share of this reactor
	retryGap    int64     // ns between retries under MaxAttemptRate (this reactor's share), 0 without
	nextRetry   int64     // the earliest instant the next retry may start
	held        []int32   // retries due but held by MaxAttemptRate, in order

	errConnectTimeout, errHandshakeTimeout error

	// wss:// only (nil tls otherwise): the clients' TLS sides, the clients
	// whose TCP connect completed waiting for a handshake goroutine, and
	// the goroutines' count, bound, reports and end.
	tls       []tlsClient
	tlsQueue  []int32
	tlsBusy   int
	tlsMax    int
	tlsDone   chan tlsDone
	tlsWG     sync.WaitGroup
	waitAbove int // with this many handshakes in progress or queued, they wait for the server to take the connection (math.MaxInt: never, where the kernel cannot say)
	// connections taken over from crypto/tls by the record layer (tests)
	takenOver atomic.Int64
	stopping  atomic.Bool   // stop was called
	stopped   chan struct{} // closed by stop
}

func newReactor(f *Fleet, r, nr int) *reactor {
	n := (f.cfg.Clients - r + nr - 1) / nr
	rc := &reactor{
		f: f, r: r, nr: nr,
		clients:             make([]client, n),
		dial:                newDialer(f.dst, f.cfg.SourceIPs, f.cfg.SynRetries, f.cfg.Mode != spec.ModeNone),
		rec:                 newRecorder(f.cfg.Start, n, f.cfg.HistInterval, f.streamed),
		maxFirst:            max(1, (f.cfg.MaxInflight+nr-1)/nr),
		errConnectTimeout:   fmt.Errorf("dial tcp %s: no connection within %s", f.dst, f.cfg.ConnectTimeout),
		errHandshakeTimeout: fmt.Errorf("no upgrade answer within %s of the TCP connect", f.cfg.HandshakeTimeout),
		stopped:             make(chan struct{}),
	}
	if rate := f.cfg.MaxAttemptRate; rate > 0 {
		rc.retryGap = max(1, int64(float64(nr)*1e9/rate))
	}
	for i := range rc.clients {
		rc.clients[i] = client{fd: -1, timer: noTimer, downAt: noTime}
	}
	rc.timers.clients = rc.clients
	if f.tls != nil {
		rc.tls = make([]tlsClient, n)
		rc.tlsMax = max(1, tlsHandshakers/nr)
		rc.tlsDone = make(chan tlsDone, rc.tlsMax)
		rc.waitAbove = tlsWaitAbove / nr
	}
	if f.cfg.Ramp > 0 {
		rc.slotNs = 1e9 / f.cfg.Ramp
	}
	rc.mode = newHandler(&f.cfg, n, rc.rec)
	rc.ka = newKeepalives(&f.cfg, n)
	rc.upAtUpgrade = rc.mode.upAtUpgrade()
	return rc
}

// id returns the ID of the shard's j-th client.
func (r *reactor) id(j int32) uint32 { return r.f.cfg.FirstID + uint32(int(j)*r.nr+r.r) }

// now returns the time from the run's start in ns.
func (r *reactor) now() int64 { return int64(time.Since(r.epoch)) + r.startOff }

// slot returns the ramp slot of the shard's j-th client, ns from the start.
func (r *reactor) slot(j int32) int64 {
	return int64(float64(int(j)*r.nr+r.r) * r.slotNs)
}

// open creates the reactor's poller.
func (r *reactor) open(epoch time.Time, start time.Time) error {
	r.epoch, r.startOff = epoch, int64(epoch.Sub(start))
	var err error
	if r.ep, err = epoll.New(eventBatch); err != nil {
		return fmt.Errorf("loadgen: %w", err)
	}
	r.rbuf = make([]byte, readBufSize)
	r.wbuf = make([]byte, 0, writeBufSize)
	if r.f.cfg.Mode == spec.ModeEcho {
		r.pbuf = make([]byte, r.f.cfg.MsgSize)
	}
	return nil
}

// stop wakes the reactor so it returns; safe from any goroutine. Its TLS
// handshake goroutines see stopping and give up.
func (r *reactor) stop() {
	if r.stopping.CompareAndSwap(false, true) {
		close(r.stopped)
	}
	r.ep.Wake()
}

// run is the reactor's loop. It returns when stop is called, after closing
// every socket.
func (r *reactor) run() error {
	defer r.shutdown()
	behind := 0
	for {
		stop, err := r.loop(&behind)
		if stop || err != nil {
			return err
		}
	}
}

// loop is one turn of the reactor: a wait, its events, then the timers.
// A full batch of events means more wait in the kernel: they are read
// first, for up to maxBehind batches in a row (behind counts them), and
// the timers fire after. Timers start attempts, so a reactor behind on
// its events would otherwise start more work before it has seen the last
// finish: its new SYNs go to an accept queue its unread answers say is
// full. A restart's herd is such a flood (a process's every connection
// ends at once), and a loadgen sharing its cores with the target falls
// behind; a deadline that fires meanwhile asks the socket (answered).
// The keepalive sweep waits until the reactor has caught up, for up to a
// ping interval: a silence it has not read past may be a close, and a
// ping to a closed connection is a write and a reset for nothing.
func (r *reactor) loop(behind *int) (stop bool, err error) {
	evs, woken, err := r.ep.Wait(r.waitMs())
	if err != nil {
		return false, fmt.Errorf("loadgen: %w", err)
	}
	if woken && r.stopping.Load() {
		return true, nil
	}
	for i := range evs {
		tok := epoll.TokenOf(&evs[i])
		r.event(tok.Lo(), uint32(tok.Hi()), evs[i].Events)
	}
	if r.tls != nil {
		r.tlsFinished()
	}
	r.readAgain()
	full := len(evs) == eventBatch
	if k := r.ka; k != nil {
		if now := r.now(); now >= k.next && (!full || now >= k.next+k.interval) {
			r.sweep(now)
		}
	}
	if full && *behind < maxBehind {
		*behind++
		return false, nil
	}
	*behind = 0
	r.fire()
	return false, nil
}

// waitMs returns how long epoll_wait may block: until the earliest
// deadline or ramp slot, rounded up to whole milliseconds.
func (r *reactor) waitMs() int {
	if len(r.again) > 0 {
		return 0
	}
	next := int64(math.MaxInt64)
	if r.timers.len() > 0 {
		next = r.timers.peek().at
	}
	if int(r.next) < len(r.clients) && r.inflight < r.maxFirst {
		next = min(next, r.slot(r.next))
	}
	if r.ka != nil {
		next = min(next, r.ka.next)
	}
	if len(r.held) > 0 {
		next = min(next, r.nextRetry)
	}
	if next == math.MaxInt64 {
		return maxWait
	}
	d := next - r.now()
	if d <= 0 {
		return 0
	}
	return int(min((d+int64(time.Millisecond)-1)/int64(time.Millisecond), maxWait))
}

// event handles one epoll event of the shard's j-th client's socket number
// sock; events of a socket closed earlier in the batch are stale.
func (r *reactor) event(j int32, sock uint32, events uint32) {
	c := &r.clients[j]
	if c.sockets != sock || c.fd < 0 {
		return
	}
	switch c.state {
	case stConnecting:
		r.connectDone(j, events)
	case stTLS:
		r.tlsEdge(j, events)
	case stHandshaking, stConnected:
		if events&unix.EPOLLOUT != 0 && c.ext != nil && len(c.ext.out) > 0 {
			if !r.flush(j) {
				return
			}
		}
		if events&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
			r.readable(j, events)
		}
	}
}

// readAgain reads sockets that had more data than maxReadsPerFD reads took.
func (r *reactor) readAgain() {
	if len(r.again) == 0 {
		return
	}
	again := r.again
	r.again = nil
	for _, j := range again {
		if s := r.clients[j].state; s == stHandshaking || s == stConnected {
			r.readable(j, unix.EPOLLRDHUP) // read to EAGAIN: no edge will come for this data
		}
	}
	if r.again == nil {
		r.again = again[:0]
	}
}

// fire runs due deadlines and ramp starts, at most firesPerLoop of them so a
// burst of starts does not delay the events of connects already under way.
func (r *reactor) fire() {
	for budget := firesPerLoop; budget > 0; budget-- {
		now := r.now()
		if len(r.held) > 0 && now >= r.nextRetry {
			j := r.held[0]
			r.held = r.held[1:]
			r.nextRetry = max(now, r.nextRetry) + r.retryGap
			if r.clients[j].state == stWaiting {
				r.start(j, now)
			}
			continue
		}
		if int(r.next) < len(r.clients) && r.inflight < r.maxFirst && r.slot(r.next) <= now {
			j := r.next
			r.next++
			r.start(j, now)
			continue
		}
		if r.timers.len() == 0 || r.timers.peek().at > now {
			return
		}
		e := r.timers.pop()
		switch r.clients[e.c].state {
		case stWaiting:
			if r.retryGap > 0 && (now < r.nextRetry || len(r.held) > 0) {
				r.held = append(r.held, e.c) // started in turn by releaseHeld
				continue
			}
			r.nextRetry = now + r.retryGap
			r.start(e.c, now)
		case stConnecting:
			if !r.answered(e.c, unix.POLLOUT) {
				r.fail(e.c, failure{class: connerr.Timeout, err: r.errConnectTimeout}, now)
			}
		case stHandshaking:
			if !r.answered(e.c, unix.POLLIN) {
				r.fail(e.c, failure{class: connerr.HandshakeTimeout, err: r.errHandshakeTimeout, abort: true}, now)
			}
		case stTLS:
			r.tlsTimeout(e.c, now)
		case stConnected:
			r.mode.timer(r, e.c, e.at, now)
		}
	}
}

// shutdown closes every socket at the end of the run. Connections closed
// here are not disconnects, and the live counters keep their values at the
// end of the run (Connected is how many were connected when it ended).
func (r *reactor) shutdown() {
	r.tlsWG.Wait() // they own their sockets until they return
	r.mode.finish(r)
	for j := range r.clients {
		c := &r.clients[j]
		if c.fd >= 0 {
			rawsys.Close(int(c.fd))
			c.fd = -1
		}
		c.ext = nil
	}
	r.free, r.tls = nil, nil
}

// dropClients drops the shard's client state and buffers once run has
// returned (NewStreamed's fleets: nothing reads them after Run); its
// recorder stays for the last drains.
func (r *reactor) dropClients() {
	r.clients, r.timers, r.ka, r.mode = nil, timerHeap{}, nil, nil
	r.rbuf, r.wbuf, r.pbuf, r.sbuf, r.free, r.again = nil, nil, nil, nil, nil, nil
}

// close releases the poller, once run has returned and no stop can come.
func (r *reactor) close() {
	if r.ep != nil {
		r.ep.Close()
		r.ep = nil
	}
}

// dstAddr is the target as a net.Addr, for error texts.
func (r *reactor) dstAddr() net.Addr { return net.TCPAddrFromAddrPort(r.f.dst) }

// appendWriter is an io.Writer that appends to a byte slice, for gobwas's
// header writer.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}
