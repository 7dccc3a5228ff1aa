package target

import (
	"net/netip"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stampede-dev/stampede/internal/epoll"
	"github.com/stampede-dev/stampede/internal/rawsys"
)

// waiting holds the bare connections the accept loop took before their
// requests came: the kernel defers a connection until its first bytes
// (listener.Listener.DeferAccept), but one made by a SYN cookie (the SYN queue was
// full, as it is in a herd) is made at the client's ACK, and its request
// comes when the client's process writes it, or, when the full accept
// queue dropped it, at the client's next retransmit. Each waits, holding
// its upgrade slot, in an epoll set of its own, and the waiting goroutine
// upgrades it when its request is readable (upgradeInline), or closes it
// at HandshakeTimeout. Such a connection costs an fd, an entry and its
// slot: no net.Conn, no goroutine.
//
// It keeps its slot, so the accept loop stops when every slot waits, as
// it did when each waited in a goroutine: given back, the loop took in a
// 250,000-client herd's cookie connections as fast as they came, most of
// their requests seconds away behind backed-off retransmits, and closed
// those beyond what it could hold: 477,245 attempts ended reset, and the
// herd took 41 s to bring back nine in ten (lab/records/measurements.md).
type waiting struct {
	ep    *epoll.Poller
	mu    sync.Mutex
	conns map[int32]waiter // by fd
	gen   int32            // the last token generation given
}

// waiter is one waiting connection.
type waiter struct {
	peer     netip.AddrPort
	deadline time.Time
	gen      int32 // its registration's, against a stale event for a reused fd
}

// waitingSweep bounds how late a waiting connection is closed after its
// deadline: the waiting goroutine looks at the deadlines this often.
const waitingSweep = 100 * time.Millisecond

func newWaiting() (*waiting, error) {
	ep, err := epoll.New(64)
	if err != nil {
		return nil, err
	}
	return &waiting{ep: ep, conns: make(map[int32]waiter)}, nil
}

// add makes fd wait for its request until deadline; false when it could
// not be registered (the caller closes it).
func (w *waiting) add(fd int, peer netip.AddrPort, deadline time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.gen++
	if w.ep.Add(fd, unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLONESHOT, epoll.Pair(int32(fd), w.gen)) != nil {
		return false
	}
	w.conns[int32(fd)] = waiter{peer: peer, deadline: deadline, gen: w.gen}
	return true
}

// take removes the connection an event with token t is for, if it still
// waits.
func (w *waiting) take(t epoll.Token) (fd int, wt waiter, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	wt, ok = w.conns[t.Lo()]
	if !ok || wt.gen != t.Hi() {
		return -1, wt, false
	}
	delete(w.conns, t.Lo())
	w.ep.Del(int(t.Lo()))
	return int(t.Lo()), wt, true
}

// expired removes and returns the connections whose deadline is before
// now (all of them when now is zero).
func (w *waiting) expired(now time.Time) []int {
	w.mu.Lock()
	defer w.mu.Unlock()
	var fds []int
	for fd, wt := range w.conns {
		if now.IsZero() || wt.deadline.Before(now) {
			delete(w.conns, fd)
			w.ep.Del(int(fd))
			fds = append(fds, int(fd))
		}
	}
	return fds
}

// waitRequests is the waiting goroutine: it upgrades each waiting
// connection whose request came, and closes those past their deadline,
// until the server stops (which closes every one left, stopWaiting).
func (s *Server) waitRequests() {
	defer s.acceptWG.Done()
	w := s.waiting
	for {
		evs, woken, err := w.ep.Wait(int(waitingSweep / time.Millisecond))
		if woken {
			return
		}
		if err != nil {
			s.cfg.Logger.Error("connections waiting for their requests: stopped", "err", err)
			s.dropWaiting(w.expired(time.Time{}))
			<-s.stopCh
			return
		}
		for i := range evs {
			if fd, wt, ok := w.take(epoll.TokenOf(&evs[i])); ok {
				s.upgradeInline(fd, wt.peer, wt.deadline)
			}
		}
		s.dropWaiting(w.expired(time.Now()))
	}
}

// stopWaiting closes the connections still waiting once the accept loop
// and the waiting goroutine are done, and releases the epoll set.
func (s *Server) stopWaiting() {
	s.dropWaiting(s.waiting.expired(time.Time{}))
	s.waiting.ep.Close()
}

// dropWaiting closes waiting connections that will not be upgraded and
// gives their upgrade slots back.
func (s *Server) dropWaiting(fds []int) {
	for _, fd := range fds {
		rawsys.Close(fd)
		s.stats.upgradesFailed.Add(1)
		<-s.upSem
	}
}
