package target

import (
	"errors"
	"github.com/stampede-dev/stampede/spec"
	"net"
	"os"
	"sync"
	"time"
)

// gate decides when the accept loop may take the next connection from the
// accept queue: not during a stall (Hold, Stall) and not faster than the
// accept rate. While the gate is shut nothing is accepted, so the queue
// fills to Backlog+1 and the kernel drops further SYNs, as in a server that
// is up but overloaded or restarting.
type gate struct {
	mu         sync.Mutex
	stallUntil time.Time
	bucket     bucket
	burst      int           // Config.AcceptBurst; 0 = derived from the rate
	wake       chan struct{} // a control changed the gate
}

func (g *gate) init(now time.Time, cfg Config) {
	g.wake = make(chan struct{}, 1)
	g.stallUntil = now.Add(cfg.Hold)
	g.burst = cfg.AcceptBurst
	g.setRateLocked(now, cfg.AcceptRate)
}

func (g *gate) setRateLocked(now time.Time, rate float64) {
	burst := g.burst
	if burst == 0 {
		burst = defaultBurst(rate)
	}
	g.bucket.reset(now, rate, burst)
}

// waitLocked returns how long to wait at now before accepting; 0 = accept.
func (g *gate) waitLocked(now time.Time) time.Duration {
	return max(g.stallUntil.Sub(now), g.bucket.wait(now), 0)
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
// is free, and hands each to an upgrading goroutine.
func (s *Server) acceptLoop() {
	defer s.acceptWG.Done()
	var delay time.Duration // backoff after an accept error such as EMFILE
	for {
		select {
		case s.upSem <- struct{}{}:
		case <-s.stopCh:
			return
		}
		nc, err := s.acceptOne()
		if err != nil {
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
		s.acceptWG.Add(1)
		go s.upgrade(nc.(*net.TCPConn))
	}
}

// acceptOne waits for the gate to open, then accepts one connection.
func (s *Server) acceptOne() (net.Conn, error) {
	for {
		if w := s.gateWait(); w > 0 {
			select {
			case <-s.clock.After(w):
			case <-s.gate.wake:
			case <-s.stopCh:
				return nil, ErrServerClosed
			}
			continue
		}
		s.markReady()
		nc, err := s.ln.Accept()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			continue // a control poked the loop
		}
		if err != nil {
			return nil, err
		}
		s.gate.mu.Lock()
		s.gate.bucket.take(s.clock.Now())
		s.gate.mu.Unlock()
		s.stats.accepted.Add(1)
		return nc, nil
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
// unlimited); the token bucket restarts full.
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
