package proxy

import (
	"time"

	"golang.org/x/sys/unix"

	"github.com/stampede-dev/stampede/internal/epoll"
)

// Mirroring a refusing upstream. A relay accepts a client before it
// connects upstream, so on its own it would turn "connection refused" (the
// target is down, its port closed) into a reset after a successful
// connect: a different failure class, and a client that retries on other
// terms. Instead, when an upstream connect is refused, the reactor closes
// its listener, so new clients are refused too, and probes the upstream
// every proxyProbeInterval; when a probe connects (or hangs: the port is
// open but not accepting, a stall), it listens again on the same port.
// Clients already in the accept queue when the listener closes, and the
// one whose connect found the upstream down, see a reset. Each reactor of
// each process mirrors on its own; the kernel refuses a SYN only when no
// listener of the SO_REUSEPORT group is left, which is when every member
// has seen the refusal. Config.KeepListening turns this off.

const (
	// proxyProbeInterval is the time between upstream probes while the
	// upstream refuses: the most the proxy adds to a target's restart.
	proxyProbeInterval = 20 * time.Millisecond
	// proxyProbeHang is how long a probe's connect may stay in progress
	// before the upstream counts as up but not accepting (its backlog is
	// full, or it stalls): the proxy listens again and clients wait as
	// they would on the target.
	proxyProbeHang = 200 * time.Millisecond
	// tokenProbe is the low half of the probe socket's epoll token.
	tokenProbe = -3
	// timerProbe is the timer kind that drives the probe (slot -1).
	timerProbe = 3
)

// upstreamRefused is called when an upstream connect was refused.
func (r *reactor) upstreamRefused() {
	if r.p.cfg.KeepListening || r.lfd < 0 {
		return
	}
	r.stats.mirrored.Add(1)
	unix.Close(r.lfd) // pending connections in its queue are reset
	r.lfd = -1
	r.probeAt(r.now() + int64(proxyProbeInterval))
}

// probeAt makes the probe's next step happen at `at` (ns), replacing the
// step scheduled before: there is one probe timer at a time, so probes
// never multiply.
func (r *reactor) probeAt(at int64) {
	r.probeTimer = at
	r.timers.push(timer{at: at, slot: -1, kind: timerProbe})
}

// probeTimerFired runs the probe's step if t is its current timer.
func (r *reactor) probeTimerFired(t timer) {
	if t.at != r.probeTimer {
		return // replaced
	}
	r.probeTimer = 0
	r.probe()
}

// probe starts a probe connect, or ends one that hung.
func (r *reactor) probe() {
	if r.lfd >= 0 || r.stopping.Load() {
		return
	}
	now := r.now()
	if r.probeFD >= 0 {
		r.probeDone(true) // in progress since proxyProbeHang: the port is open
		return
	}
	r.probes.Add(1)
	fd, err := r.dial()
	if err != nil {
		r.probeAt(now + int64(proxyProbeInterval))
		return
	}
	if r.ep.Add(fd, unix.EPOLLOUT|unix.EPOLLET, epoll.Pair(tokenProbe, 0)) != nil {
		unix.Close(fd)
		r.probeAt(now + int64(proxyProbeInterval))
		return
	}
	r.probeFD, r.probeStart = fd, now
	r.probeAt(now + int64(proxyProbeHang))
}

// probeEvent handles the probe socket's connect result.
func (r *reactor) probeEvent() {
	if r.probeFD < 0 {
		return
	}
	soErr, err := unix.GetsockoptInt(r.probeFD, unix.SOL_SOCKET, unix.SO_ERROR)
	r.probeDone(err == nil && soErr == 0)
}

// probeDone closes the probe; up says whether to listen again.
func (r *reactor) probeDone(up bool) {
	if r.probeFD >= 0 {
		resetFD(r.probeFD) // no FIN handshake for the target to count
		r.probeFD = -1
	}
	if up && r.relisten() {
		return
	}
	r.probeAt(r.now() + int64(proxyProbeInterval))
}

// relisten opens the listener again on the same address.
func (r *reactor) relisten() bool {
	fd, _, err := listenReusePort(r.addr, r.p.cfg.Backlog)
	if err != nil {
		return false
	}
	if r.ep.Add(fd, unix.EPOLLIN|unix.EPOLLET, epoll.Pair(tokenListener, 0)) != nil {
		unix.Close(fd)
		return false
	}
	r.lfd = fd
	return true
}
