package sim

import (
	"math"
	"time"

	"github.com/stampede-dev/stampede/connerr"
)

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
// the process's CPU: each upgrade takes service ns of it. Under an
// admission ramp the bucket's rate rises linearly from floor to rate over
// rampLen from rampAt (the process became ready); when the process sheds,
// the bucket no longer paces accepts but decides each upgrade.
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
	sliceLeft int   // upgrades left in the process's current slice of the cores (Config.Cores)
	sliceEnd  int64 // when that slice is done
	rate      float64
	burst     float64
	tokens    float64
	last      int64   // tokens were counted at last
	floor     float64 // the admission ramp's starting rate
	rampAt    int64   // when the ramp began: the process became ready
	rampLen   int64   // the ramp's length, ns; 0: none
	shed      bool    // the process sheds: accepts unpaced, upgrades without a token answered 503

	// How the connections of the process's last stop end: their class,
	// and for 1013 the restart's down= and hint= that make their hint.
	closeClass           connerr.Class
	closeDown, closeHint time.Duration
	lb                   bool
	epoch                uint16 // bumped when the listener closes: its orphans go with it
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
	if l.rampLen > 0 && l.last < l.rampAt+l.rampLen {
		return l.takeRamp(now)
	}
	l.tokens = min(l.burst, l.tokens+float64(now-l.last)*l.rate/1e9)
	l.last = now
	if l.tokens >= 1 {
		l.tokens--
		return 0, true
	}
	return max(1, int64((1-l.tokens)*1e9/l.rate+0.5)), false
}

// ramp starts an admission ramp at now: the bucket's rate rises from
// floor to its rate over d (0: no ramp).
func (l *listener) ramp(now int64, floor float64, d time.Duration) {
	l.floor, l.rampAt, l.rampLen = floor, now, int64(d)
}

// rateAt is the bucket's rate at t: spec.Server.AdmitRate of the time
// since rampAt, the process's share.
func (l *listener) rateAt(t int64) float64 {
	if l.rampLen <= 0 || t >= l.rampAt+l.rampLen {
		return l.rate
	}
	f := max(0, float64(t-l.rampAt)/float64(l.rampLen))
	return l.floor + (l.rate-l.floor)*f
}

// takeRamp is take while the ramp is on: the tokens are the integral of
// the rising rate, and the wait is when that integral reaches one.
func (l *listener) takeRamp(now int64) (wait int64, ok bool) {
	l.tokens = min(l.burst, l.tokens+l.integral(l.last, now))
	l.last = now
	if l.tokens >= 1 {
		l.tokens--
		return 0, true
	}
	return max(1, int64(math.Ceil(l.until(now, 1-l.tokens)))), false
}

// integral returns the tokens the bucket gains from x to y (x <= y).
func (l *listener) integral(x, y int64) float64 {
	if y <= x {
		return 0
	}
	e := l.rampAt + l.rampLen
	var n float64
	if x < e {
		m := min(y, e)
		n += (l.rateAt(x) + l.rateAt(m)) / 2 * float64(m-x) / 1e9
		x = m
	}
	if y > x {
		n += l.rate * float64(y-x) / 1e9
	}
	return n
}

// until returns the ns from x until the bucket has gained n tokens.
func (l *listener) until(x int64, n float64) float64 {
	e := l.rampAt + l.rampLen
	var d float64
	if x < e {
		if in := l.integral(x, e); in < n {
			d, n = float64(e-x), n-in
		} else {
			// r0·d + b·d²/2 = n·1e9, b the slope per ns: the root in the
			// form that holds for b of either sign, or 0.
			r0, b := l.rateAt(x), (l.rate-l.floor)/float64(l.rampLen)
			return 2 * n * 1e9 / (r0 + math.Sqrt(max(0, r0*r0+2*b*n*1e9)))
		}
	}
	return d + n*1e9/l.rate
}
