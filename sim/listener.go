package sim

// qent is one connection in an accept queue: the client and the socket
// number of its attempt, so an entry whose client gave up (or moved on to
// another attempt) is recognised as dead when it is accepted.
type qent struct {
	c    uint32
	sock uint32
}

// listener is one listen socket: a target process of the SO_REUSEPORT
// group, or the load balancer.
//
// Its accept queue holds backlog+1 completed connections (the kernel's
// sk_acceptq_is_full is "more than backlog"); synq counts requests in
// SYN-RECV whose final ACK was dropped and that wait for a retransmit. A
// SYN that finds the accept queue full is dropped (ListenOverflows); one
// that finds the SYN queue full gets a cookie, or is dropped without
// cookies. Accepts are paced by a token bucket (the target's gate) and by
// the process's CPU: each upgrade takes service ns of it.
type listener struct {
	q         []qent // ring buffer
	head, n   int
	backlog   int
	synq      int
	inflight  int   // handshakes whose final ACK is on its way
	open      bool  // the port is bound: a SYN is not refused
	accepting bool  // the process accepts (not down, not stalled)
	stalls    int   // stall events in force
	down      bool  // the process is restarting
	tick      bool  // an evAccept is pending
	busy      int64 // when the process's CPU is free again
	service   int64 // CPU ns per upgrade
	rate      float64
	burst     float64
	tokens    float64
	last      int64 // tokens were counted at last
	lb        bool
	epoch     uint16 // bumped when the listener closes: its orphans go with it
}

// full reports whether the accept queue is full.
func (l *listener) full() bool { return l.n > l.backlog }

func (l *listener) push(e qent) {
	if l.n == len(l.q) {
		nq := make([]qent, max(16, 2*len(l.q)))
		for i := 0; i < l.n; i++ {
			nq[i] = l.q[(l.head+i)%len(l.q)]
		}
		l.q, l.head = nq, 0
	}
	l.q[(l.head+l.n)%len(l.q)] = e
	l.n++
}

func (l *listener) pop() qent {
	e := l.q[l.head]
	l.head = (l.head + 1) % len(l.q)
	l.n--
	return e
}

// setRate resets the token bucket to rate per second (0: unlimited) with
// the given burst (0: a hundredth of the rate, at least one), full.
func (l *listener) setRate(now int64, rate float64, burst int) {
	l.rate = rate
	if burst == 0 {
		burst = max(1, int(rate/100))
	}
	l.burst = float64(burst)
	l.tokens = l.burst
	l.last = now
}

// take takes one accept token at now; when none is there it returns how
// long until one is.
func (l *listener) take(now int64) (wait int64, ok bool) {
	if l.rate <= 0 {
		return 0, true
	}
	l.tokens = min(l.burst, l.tokens+float64(now-l.last)*l.rate/1e9)
	l.last = now
	if l.tokens >= 1 {
		l.tokens--
		return 0, true
	}
	return max(1, int64((1-l.tokens)*1e9/l.rate+0.5)), false
}
