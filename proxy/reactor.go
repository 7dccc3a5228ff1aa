package proxy

import (
	"errors"
	"fmt"
	"net/netip"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stampede-dev/stampede/internal/epoll"
)

// Reactor sizes.
const (
	proxyReadBuf     = 64 << 10 // the shared read buffer of a reactor
	proxyEventBatch  = 256      // epoll events per wait
	proxyMaxWaitMs   = 1000     // longest epoll wait; a wake-up ends it for a Set or stop
	proxyMaxAccepts  = 64       // accepts per listener event before others are served
	proxyTimersPerGo = 1024     // timer firings per loop
	tokenListener    = -2       // low half of the listener's epoll token
)

// proxyCounters are a reactor's Stats, written by the reactor and read
// by Stats from any goroutine.
type proxyCounters struct {
	active                                      atomic.Int64
	accepted, reset, dropped, blackholed        atomic.Uint64
	refused, bytesUp, bytesDown, swallowedBytes atomic.Uint64
	mirrored                                    atomic.Uint64
}

func (c *proxyCounters) load() Stats {
	return Stats{
		Active: c.active.Load(), Accepted: c.accepted.Load(), Reset: c.reset.Load(),
		Dropped: c.dropped.Load(), Blackholed: c.blackholed.Load(), Refused: c.refused.Load(),
		BytesUp: c.bytesUp.Load(), BytesDown: c.bytesDown.Load(), Swallowed: c.swallowedBytes.Load(),
		Mirrored: c.mirrored.Load(),
	}
}

// reactor relays the links of one listener on one goroutine.
type reactor struct {
	p        *Proxy
	idx      int
	addr     netip.AddrPort // the listener's address
	upstream unix.Sockaddr  // private to this reactor: Sockaddr values are not shareable
	source   unix.Sockaddr  // bind address of upstream sockets, nil for none
	family   int            // of the upstream

	ep         *epoll.Poller // tokens: (slot, side token) of a link, tokenListener, tokenProbe
	lfd        int
	probeFD    int   // the upstream probe while the listener is closed (mirror.go), -1 for none
	probeStart int64 // when the probe's connect started, ns
	probeTimer int64 // when the probe's one live timer fires, ns; 0: none
	probes     atomic.Uint64
	stopping   atomic.Bool

	cur     *faultState // the fault set this reactor applies
	links   []*link     // by slot; a closed link's slot is reused
	free    []int32     // free slots
	live    int         // links not closed
	serial  uint64      // links accepted so far: the key of their draws
	timers  timerHeap
	again   []againEntry // links (or the listener) with unread data after a bounded pump
	paused  bool         // accept hit EMFILE/ENFILE or MaxConns: retry when a link closes
	buf     []byte
	epoch   time.Time
	stats   proxyCounters
	maxLive int
}

// againEntry names a link to pump again (slot -1: the listener).
type againEntry struct {
	slot int32
	gen  uint32
}

func newReactor(p *Proxy, idx int, listen, upstream netip.AddrPort) (*reactor, error) {
	r := &reactor{p: p, idx: idx, lfd: -1, probeFD: -1, cur: p.fault.Load(), epoch: time.Now(),
		maxLive: max(1, p.cfg.MaxConns/p.cfg.Reactors)}
	r.family = unix.AF_INET
	if !upstream.Addr().Unmap().Is4() {
		r.family = unix.AF_INET6
	}
	r.upstream = sockaddrOf(upstream, r.family)
	if p.cfg.SourceIP.IsValid() {
		r.source = sockaddrOf(netip.AddrPortFrom(p.cfg.SourceIP, 0), r.family)
	}
	fail := func(op string, err error) (*reactor, error) {
		r.release()
		return nil, fmt.Errorf("proxy: %s: %w", op, err)
	}
	var err error
	if r.lfd, r.addr, err = listenReusePort(listen, p.cfg.Backlog); err != nil {
		return fail("listen on "+listen.String(), err)
	}
	if r.ep, err = epoll.New(proxyEventBatch); err != nil {
		r.release()
		return nil, fmt.Errorf("proxy: %w", err)
	}
	if err := r.ep.Add(r.lfd, unix.EPOLLIN|unix.EPOLLET, epoll.Pair(tokenListener, 0)); err != nil {
		return fail("epoll_ctl listener", err)
	}
	r.buf = make([]byte, proxyReadBuf)
	return r, nil
}

// listenReusePort opens a non-blocking listener with SO_REUSEPORT (and an
// explicit backlog, which net.Listen does not offer) and returns it with
// its bound address.
func listenReusePort(ap netip.AddrPort, backlog int) (int, netip.AddrPort, error) {
	family := unix.AF_INET
	if !ap.Addr().Unmap().Is4() {
		family = unix.AF_INET6
	}
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, unix.IPPROTO_TCP)
	if err != nil {
		return -1, ap, err
	}
	for _, opt := range []int{unix.SO_REUSEADDR, unix.SO_REUSEPORT} {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, opt, 1); err != nil {
			unix.Close(fd)
			return -1, ap, err
		}
	}
	if err := unix.Bind(fd, sockaddrOf(ap, family)); err != nil {
		unix.Close(fd)
		return -1, ap, err
	}
	if err := unix.Listen(fd, backlog); err != nil {
		unix.Close(fd)
		return -1, ap, err
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		unix.Close(fd)
		return -1, ap, err
	}
	return fd, addrPortOf(sa), nil
}

func sockaddrOf(ap netip.AddrPort, family int) unix.Sockaddr {
	if family == unix.AF_INET {
		return &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().Unmap().As4()}
	}
	return &unix.SockaddrInet6{Port: int(ap.Port()), Addr: ap.Addr().As16()}
}

func addrPortOf(sa unix.Sockaddr) netip.AddrPort {
	switch sa := sa.(type) {
	case *unix.SockaddrInet4:
		return netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), uint16(sa.Port))
	case *unix.SockaddrInet6:
		return netip.AddrPortFrom(netip.AddrFrom16(sa.Addr), uint16(sa.Port))
	}
	return netip.AddrPort{}
}

// now returns the reactor's monotonic clock in ns.
func (r *reactor) now() int64 { return int64(time.Since(r.epoch)) }

// wakeUp interrupts epoll_wait; safe from any goroutine.
func (r *reactor) wakeUp() { r.ep.Wake() }

// stop makes run return after closing every link.
func (r *reactor) stop() {
	r.stopping.Store(true)
	r.wakeUp()
}

// release closes the reactor's own descriptors, after run returned.
func (r *reactor) release() {
	for _, fd := range []*int{&r.lfd, &r.probeFD} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
		}
	}
	if r.ep != nil {
		r.ep.Close()
		r.ep = nil
	}
}

// run is the reactor's loop.
func (r *reactor) run() {
	defer r.closeAll()
	for !r.stopping.Load() {
		evs, err := r.wait()
		if err != nil {
			return // the epoll fd is gone: nothing more can be relayed
		}
		// Before the batch: a connection accepted after Set returned must
		// meet the new fault set (Set stores it before waking us).
		if st := r.p.fault.Load(); st != r.cur {
			r.apply(st)
		}
		for i := range evs {
			switch tok := epoll.TokenOf(&evs[i]); tok.Lo() {
			case tokenListener:
				r.accept()
			case tokenProbe:
				r.probeEvent()
			default:
				r.event(tok.Lo(), tok.Hi(), evs[i].Events)
			}
		}
		r.pumpAgain()
		r.fire()
	}
}

// wait returns the next batch of epoll events, blocking in epoll_wait
// until there are some, a wake-up comes (a Set or a stop: run checks both)
// or the earliest timer is due (then it returns none); with links left to
// pump it does not block.
//
// Measured against parking in Go's netpoller instead (the epoll fd made
// pollable through os.NewFile and SyscallConn): that took 4x the futex
// calls and 4x the epoll_wait calls for the same traffic, because every
// wake-up passes through the runtime's own poller and a second thread. A
// thread blocked in epoll_wait is woken by the kernel directly, and the
// runtime keeps its P while other Ps are idle.
func (r *reactor) wait() ([]unix.EpollEvent, error) {
	ms := proxyMaxWaitMs
	switch {
	case len(r.again) > 0:
		ms = 0
	case r.timers.len() > 0:
		d := r.timers.peek().at - r.now()
		ms = int(max(0, min((d+int64(time.Millisecond)-1)/int64(time.Millisecond), proxyMaxWaitMs)))
	}
	evs, _, err := r.ep.Wait(ms)
	return evs, err
}

// accept takes new connections until the queue is empty (or a bound, so
// established links are served too).
func (r *reactor) accept() {
	if r.lfd < 0 {
		return // closed while the upstream refuses
	}
	for i := 0; i < proxyMaxAccepts; i++ {
		if r.live >= r.maxLive {
			// Above MaxConns: take the connection and reset it, so the
			// client fails fast instead of waiting in a full queue.
			nfd, _, err := unix.Accept4(r.lfd, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
			if err != nil {
				return
			}
			r.stats.refused.Add(1) // before the RST, which a test may be waiting for
			resetFD(nfd)
			continue
		}
		nfd, _, err := unix.Accept4(r.lfd, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
		switch {
		case err == nil:
			r.paused = false
			r.open(nfd)
		case errors.Is(err, unix.EAGAIN):
			return
		case errors.Is(err, unix.EINTR), errors.Is(err, unix.ECONNABORTED):
		case errors.Is(err, unix.EMFILE), errors.Is(err, unix.ENFILE), errors.Is(err, unix.ENOBUFS), errors.Is(err, unix.ENOMEM):
			r.paused = true // retried when a link closes
			return
		default:
			return
		}
	}
	r.again = append(r.again, againEntry{slot: -1})
}

// event handles one epoll event of side (0: client, 1: upstream) of the
// link in slot; events of a link closed earlier in the batch are stale.
func (r *reactor) event(slot, tok int32, ev uint32) {
	l := r.links[slot]
	side := int(tok & 1)
	if l.state == stClosed || l.token(side) != tok {
		return
	}
	if ev&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
		l.readable[side] = true
	}
	if ev&(unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
		l.hup[side] = true
	}
	if ev&(unix.EPOLLOUT|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
		l.writable[side] = true
	}
	switch l.state {
	case stConnecting:
		if side == 1 {
			if ev&(unix.EPOLLOUT|unix.EPOLLERR|unix.EPOLLHUP) != 0 {
				r.connected(l)
			}
		} else if ev&(unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
			r.closeLink(l) // the client gave up before the upstream answered
		}
	case stOpen:
		r.pumpBoth(l)
	case stDead:
		r.swallowDead(l)
	}
}

// pumpAgain pumps the links left with unread data, and retries accepts.
func (r *reactor) pumpAgain() {
	if len(r.again) == 0 {
		return
	}
	again := r.again
	r.again = nil
	for _, a := range again {
		if a.slot < 0 {
			r.accept()
			continue
		}
		if l := r.links[a.slot]; l.gen == a.gen && l.state == stOpen {
			r.pumpBoth(l)
		} else if l.gen == a.gen && l.state == stDead {
			r.swallowDead(l)
		}
	}
}

// fire runs the timers that are due.
func (r *reactor) fire() {
	now := r.now()
	for i := 0; i < proxyTimersPerGo && r.timers.len() > 0 && r.timers.peek().at <= now; i++ {
		t := r.timers.pop()
		if t.kind == timerProbe {
			r.probeTimerFired(t)
			continue
		}
		l := r.links[t.slot]
		if l.gen != t.gen || l.state == stClosed {
			continue
		}
		switch t.kind {
		case timerConnect:
			if l.state == stConnecting {
				r.refuse(l)
			}
		default:
			d := int(t.kind)
			if l.dir[d].timerAt == t.at {
				l.dir[d].timerAt = 0
				if l.state == stOpen {
					r.pumpBoth(l)
				}
			}
		}
	}
}

// schedule makes the timer heap wake direction d of l at `at` (ns), unless
// an earlier wake-up is already due.
func (r *reactor) schedule(l *link, d int, at int64) {
	dir := &l.dir[d]
	if dir.timerAt != 0 && dir.timerAt <= at {
		return
	}
	dir.timerAt = at
	r.timers.push(timer{at: at, slot: l.slot, gen: l.gen, kind: uint8(d)})
}

// apply switches the reactor to fault generation st: reset or draw the
// loss of established links, then pump every link, since the new set may
// release data the old one held.
func (r *reactor) apply(st *faultState) {
	r.cur = st
	f := st.f
	for _, l := range r.links {
		if l.state == stClosed {
			continue
		}
		switch {
		case f.Reset:
			r.stats.reset.Add(1)
			r.resetLink(l)
			continue
		case f.Loss > 0 && lost(r.p.cfg.Seed, l.key, st.gen, f.Loss):
			r.stats.dropped.Add(1)
			r.resetLink(l)
			continue
		}
		if l.state == stOpen {
			r.pumpBoth(l)
		}
	}
}

// closeAll closes every link when the reactor stops.
func (r *reactor) closeAll() {
	for _, l := range r.links {
		if l.state != stClosed {
			r.closeLink(l)
		}
	}
}

// timer kinds: 0 and 1 wake a direction of a link; timerConnect ends an
// upstream connect that took too long.
const timerConnect = 2

// timer is one deadline of a link.
type timer struct {
	at   int64 // ns on the reactor's clock
	slot int32
	gen  uint32
	kind uint8
}

// timerHeap is a binary min-heap of timers by at. Stale entries (a link
// closed, a direction re-scheduled earlier) are skipped when they fire.
type timerHeap struct{ h []timer }

func (t *timerHeap) len() int     { return len(t.h) }
func (t *timerHeap) peek() *timer { return &t.h[0] }

func (t *timerHeap) push(x timer) {
	t.h = append(t.h, x)
	for i := len(t.h) - 1; i > 0; {
		p := (i - 1) / 2
		if t.h[p].at <= t.h[i].at {
			break
		}
		t.h[p], t.h[i] = t.h[i], t.h[p]
		i = p
	}
}

func (t *timerHeap) pop() timer {
	top := t.h[0]
	n := len(t.h) - 1
	t.h[0] = t.h[n]
	t.h = t.h[:n]
	for i := 0; ; {
		c := 2*i + 1
		if c >= n {
			break
		}
		if c+1 < n && t.h[c+1].at < t.h[c].at {
			c++
		}
		if t.h[i].at <= t.h[c].at {
			break
		}
		t.h[i], t.h[c] = t.h[c], t.h[i]
		i = c
	}
	return top
}
