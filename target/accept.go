package target

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/stampede-dev/stampede/spec"
)

// gate decides when the accept loop may take the next connection from the
// accept queue: not during a stall (Hold, Stall) and not faster than the
// accept rate. While the gate is shut nothing is accepted, so the queue
// fills to Backlog+1 and the kernel drops further SYNs, as in a server that
// is up but overloaded or restarting.
//
// Under an admission ramp (AdmitRamp) the rate rises from AdmitFloor once
// the process begins accepting. With shedding (Shed) the accept loop is
// not paced at all: admit, the same ramped rate, decides in the upgrade
// which requests are admitted and which are answered 503 (upgrade.go).
type gate struct {
	mu         sync.Mutex
	stallUntil time.Time
	bucket     bucket        // paces accepts; unused when shedding
	admit      bucket        // admits upgrades when shedding
	shed       bool          // Config.Shed > 0
	rejectEnd  time.Time     // the end of StartReject's window
	burst      int           // Config.AcceptBurst; 0 = derived from the rate
	wake       chan struct{} // a control changed the gate
}

// deferAccept is how long the server's listener holds a connection
// whose client has sent nothing (DeferAccept): longer than the kernel
// retransmits a SYN-ACK (tcp_synack_retries 5, 31 s), so such a
// connection is never accepted; the kernel drops its handshake a minute
// on (65 s, measured here).
const deferAccept = time.Minute

func (g *gate) init(now time.Time, cfg Config) {
	g.wake = make(chan struct{}, 1)
	g.stallUntil = now.Add(cfg.Hold)
	g.burst = cfg.AcceptBurst
	g.shed = cfg.Shed > 0
	if r := cfg.StartReject; r != nil {
		g.rejectEnd = now.Add(r.For)
	}
	// Until the process accepts, the ramp is reckoned from the end of
	// its hold; startRampLocked moves it to the moment it does.
	g.setRampLocked(newRamp(cfg.Server, g.rampStart(now.Add(cfg.Hold))))
	g.setRateLocked(now, cfg.AcceptRate)
}

// rampStart is when the ramp of a process that begins accepting at t
// starts: then, or at the end of a StartReject window, which admits
// nobody.
func (g *gate) rampStart(t time.Time) time.Time {
	if g.rejectEnd.After(t) {
		return g.rejectEnd
	}
	return t
}

func (g *gate) setRampLocked(r ramp) {
	g.bucket.ramp, g.admit.ramp = r, r
}

// startRampLocked starts the ramp at now, when the process begins
// accepting (after its Hold, or a Stall that ended the Hold early), with
// the buckets filled to the burst of the floor.
func (g *gate) startRampLocked(now time.Time) {
	if g.bucket.ramp.d == 0 {
		return
	}
	r := g.bucket.ramp
	r.start = g.rampStart(now)
	g.setRampLocked(r)
	g.setRateLocked(now, g.bucket.rate)
}

// setRateLocked sets the rate the gate paces at (the rate a ramp rises
// to); the buckets restart full.
func (g *gate) setRateLocked(now time.Time, rate float64) {
	g.bucket.reset(now, rate, g.burst)
	g.admit.reset(now, rate, g.burst)
}

// rateLocked is the rate the gate paces accepts (or, when shedding,
// admits upgrades) at, at now: the ramp's rate, 0 = unlimited.
func (g *gate) rateLocked(now time.Time) float64 { return g.bucket.rateAt(now) }

// waitLocked returns how long to wait at now before accepting; 0 = accept.
func (g *gate) waitLocked(now time.Time) time.Duration {
	if g.shed {
		return max(g.stallUntil.Sub(now), 0)
	}
	return max(g.stallUntil.Sub(now), g.bucket.wait(now), 0)
}

// admitLocked takes an admission token at now when shedding: false means
// over capacity, shed the request.
func (g *gate) admitLocked(now time.Time) bool {
	if g.admit.wait(now) > 0 {
		return false
	}
	g.admit.take(now)
	return true
}

// gateWait returns how long the accept loop must wait. When the gate is
// open it clears the listener's deadline under the gate's lock, so a
// control that shuts the gate afterwards interrupts the Accept (see poke).
func (s *Server) gateWait() time.Duration {
	s.gate.mu.Lock()
	defer s.gate.mu.Unlock()
	w := s.gate.waitLocked(s.clock.Now())
	if w == 0 {
		s.ln.SetDeadline(time.Time{})
	}
	return w
}

// poke changes the gate with f and makes the accept loop look at it again:
// a blocked Accept returns at once (its deadline is set in the past) and a
// waiting loop wakes.
func (s *Server) poke(f func(g *gate, now time.Time)) error {
	select {
	case <-s.stopCh:
		return ErrServerClosed
	default:
	}
	s.gate.mu.Lock()
	f(&s.gate, s.clock.Now())
	s.ln.SetDeadline(aLongTimeAgo)
	s.gate.mu.Unlock()
	select {
	case s.gate.wake <- struct{}{}:
	default:
	}
	return nil
}

// acceptLoop accepts connections while the gate is open and an upgrade slot
// is free. A plain connection whose request is there it upgrades itself
// (upgradeInline); any other it hands to an upgrading goroutine.
func (s *Server) acceptLoop() {
	defer s.acceptWG.Done()
	var delay time.Duration // backoff after an accept error such as EMFILE
	inline := s.inlineUpgrades()
	var (
		nc   net.Conn       // a connection accepted by net
		fd   int            // or one accepted raw, inline
		peer netip.AddrPort // its client's address
	)
	accept := func() (err error) {
		if inline {
			fd, peer, err = s.ln.AcceptFD()
		} else {
			nc, err = s.ln.Accept()
		}
		return err
	}
	for {
		select {
		case s.upSem <- struct{}{}:
		case <-s.stopCh:
			return
		}
		if err := s.acceptOne(accept); err != nil {
			<-s.upSem
			select {
			case <-s.stopCh:
				return
			default:
			}
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			s.cfg.Logger.Warn("accept failed", "err", err, "retry_in", delay)
			select {
			case <-s.clock.After(delay):
			case <-s.stopCh:
				return
			}
			continue
		}
		delay = 0
		if inline {
			s.upgradeInline(fd, peer, time.Time{})
			continue
		}
		s.acceptWG.Add(1)
		go s.upgrade(nc.(*net.TCPConn), nil)
	}
}

// acceptOne waits for the gate to open, then accepts one connection with
// accept.
func (s *Server) acceptOne(accept func() error) error {
	for {
		if w := s.gateWait(); w > 0 {
			select {
			case <-s.clock.After(w):
			case <-s.gate.wake:
			case <-s.stopCh:
				return ErrServerClosed
			}
			continue
		}
		s.markReady()
		err := accept()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			continue // a control poked the loop
		}
		if err != nil {
			return err
		}
		s.gate.mu.Lock()
		s.gate.bucket.take(s.clock.Now()) // unused when shedding
		s.gate.mu.Unlock()
		s.stats.accepted.Add(1)
		return nil
	}
}

// Stall stops accepting for d from now (the port stays open, the backlog
// fills, SYNs beyond it are dropped). It replaces a stall in progress, Hold
// included; Stall(0) resumes accepting at once.
func (s *Server) Stall(d time.Duration) error {
	if d < 0 {
		return spec.Errorf("stall", "duration must not be negative")
	}
	return s.poke(func(g *gate, now time.Time) { g.stallUntil = now.Add(d) })
}

// SetAcceptRate changes the accept rate (accepts per second, 0 =
// unlimited); the token bucket restarts full. Under an admission ramp it
// is the rate the ramp rises to (a floor above it is taken as r); when
// shedding it is the rate upgrades are admitted at.
func (s *Server) SetAcceptRate(r float64) error {
	if err := spec.CheckAcceptRate(r); err != "" {
		return spec.Errorf("Server.AcceptRate", "%v %s", r, err)
	}
	return s.poke(func(g *gate, now time.Time) { g.setRateLocked(now, r) })
}

// SetBacklog changes the listen backlog while the server runs.
func (s *Server) SetBacklog(n int) error {
	if n <= 0 {
		return spec.Errorf("Server.Backlog", "must be positive")
	}
	select {
	case <-s.stopCh:
		return ErrServerClosed
	default:
	}
	return s.ln.SetBacklog(n)
}

// Backlog returns the current listen backlog.
func (s *Server) Backlog() int { return s.ln.Backlog() }
