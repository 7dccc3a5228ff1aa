package sim

import (
	"math"
	"time"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/connerr"
)

// noTime marks an instant that has not happened.
const noTime = math.MinInt64

// client is one simulated client: 48 bytes.
type client struct {
	attemptAt int64  // start of the current attempt
	downAt    int64  // when its last connection ended, plus one; 0: none yet (a fresh array needs no pass)
	deadline  int64  // handshake deadline of the current attempt
	mark      int64  // start of the current SYN leg, when it stalled, or when it connected
	attempt   uint32 // backoff attempt number: failures since its last 101
	sockets   uint32 // attempts started
	lst       uint16 // listener of the current leg
	state     state
	gen       uint8 // bumped at every state change: older entries are stale
	syn       uint8 // SYNs retransmitted in this leg, or data retransmits when stalled
	flags     flags
	sess      uint8 // the ticket-key generation of its TLS session (tlsModel); 0: none
}

type state uint8

const (
	_           state = iota // the zero state: not started yet
	stWaiting                // backoff timer running
	stSynSent                // SYN sent (or dropped, retransmit pending)
	stAckFlight              // SYN answered, final ACK on its way
	stStalled                // final ACK dropped: TCP connected for the client, not for the server
	stQueued                 // in an accept queue
	stUpgrading              // accepted, 101 on its way
	stShedding               // accepted and shed, 503 on its way
	stConnected              // 101 received
	stStopped                // gave up
)

type flags uint8

const (
	flUp      flags = 1 << iota // up (connected), as recorded
	flEver                      // was up at least once
	flCookie                    // the current handshake went through a SYN cookie
	flFwd                       // the current leg is the balancer's, to a target process
	flFirst                     // the current attempt is a first connect (counts against MaxInflight)
	flIssued                    // the next start has its slot of the fleet's IssueRate
	flCPU                       // the next start has had its loadgen process's CPU (Config.Cores)
	flResumed                   // the current handshake resumed its TLS session (tlsModel)
)

// setState moves c to s and makes its pending entries stale.
func (c *client) setState(s state) {
	c.state = s
	c.gen++
}

// failure is why an attempt failed or a connection ended.
type failure struct {
	class  connerr.Class
	status int
	hint   time.Duration
}

// retry counts the attempt and schedules the next one, or stops the
// client, by the loadgen's rules (loadgen/attempt.go nextWait): the same
// class test, attempt limit, and backoff.Policy.Wait, with the server's
// hint when connerr.HonorsHint honours it (a Retry-After, or the delay of
// a 1012 or 1013 close).
func (s *sim) retry(id uint32, f failure, now int64) {
	c := &s.clients[id]
	c.attempt++
	attempt := int(c.attempt)
	if !f.class.Retryable(f.status) || !s.cfg.Policy.Retry(attempt) {
		c.setState(stStopped)
		if f.class.Retryable(f.status) {
			s.exhausted++
			s.rec.exhausted(now)
		} else {
			s.stopped[f.class]++
		}
		return
	}
	var hint time.Duration
	if f.hint > 0 && connerr.HonorsHint(f.class, f.status) && !s.cfg.NoRetryAfter {
		hint = f.hint
	}
	d := s.cfg.Policy.Wait(s.cfg.Seed, uint64(id), attempt, hint)
	if s.cfg.OnRetry != nil {
		s.cfg.OnRetry(Retry{Client: id, Attempt: attempt, Class: f.class.String(), Hint: f.hint, Delay: d, At: time.Duration(now)})
	}
	c.setState(stWaiting)
	s.q.push(entry{at: addSat(now, d), who: id, gen: c.gen, kind: evStart})
}

// addSat returns now+d without overflowing.
func addSat(now int64, d time.Duration) int64 {
	if d > 0 && now > math.MaxInt64-int64(d) {
		return math.MaxInt64
	}
	return now + int64(d)
}

// pick returns the target process a connection lands on: the
// SO_REUSEPORT hash of its 4-tuple, drawn per socket.
func (s *sim) pick(id, sock uint32) int {
	if s.procs == 1 {
		return 0
	}
	return int(backoff.Hash(s.cfg.Seed, streamReuseport, uint64(id), uint64(sock)) % uint64(s.procs))
}

// streamReuseport is the simulator's own stream of draws: which process
// of the group a connection lands on. It is far from backoff's streams, so
// it never collides with one added there.
const streamReuseport backoff.Stream = 1<<32 + 1
