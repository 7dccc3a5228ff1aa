package sim

import (
	"context"
	"errors"
	"time"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/connerr"
	"github.com/stampede-dev/stampede/results"
)

// Result is what a simulated run produced: the same Report, Events and
// recovery partials a real run's loadgens and supervisor produce, and the
// kernel counters of the model.
type Result struct {
	// Config is the config run, with every default filled in.
	Config Config
	// Report is the fleet's record: timeline, histograms, Flow (the
	// transitions are not kept: Partials stand for them).
	Report *results.Report
	// Events are the chaos events as the supervisor would record them.
	Events []results.Event
	// Partials are the events' recovery partials, in Events order.
	Partials []results.RecoveryPartial
	// Kernel are the model's kernel counters over the run.
	Kernel results.KernelDelta
	// Processed counts the queue entries run (stale ones included).
	Processed uint64
	// Orphans counts the connections the target accepted after their
	// clients had given up on them (the real runs' PassiveOpens beyond
	// their successes).
	Orphans int64
	// CPU is the CPU the model charged, with Config.Cores; zero without.
	CPU CPUUse
	// Interrupted says the run's context ended before the simulation:
	// the figures cover the virtual time it reached, End.
	Interrupted bool
	// End is the virtual time the figures cover: Config.Duration, or
	// less when Interrupted.
	End time.Duration
}

// sim is one run's state.
type sim struct {
	cfg     Config
	clients []client
	lsts    []listener // target processes, then the balancer if any
	procs   int
	lb      int // index of the balancer in lsts; -1 without
	q       *calendar
	rec     *recorder
	kern    results.KernelDelta
	stopped [connerr.NumClasses]int
	// exhausted counts the clients whose policy ran out of attempts.
	exhausted int
	giveUp    int64 // SYN give-up, from a leg's first SYN

	next     int // ramp cursor: the first client not started yet
	slotNs   float64
	inflight int  // first connects in flight
	rampWait bool // the ramp waits for an in-flight first connect to end

	issueGap  int64 // ns between attempt starts (IssueRate); 0 unlimited
	issueFree int64 // the next attempt may start at

	rejectUntil int64
	rejectCode  int
	rejectAfter time.Duration
	actions     []action

	touched uint8 // what touch read, kept so the reads are not elided

	jiffy           int64    // the kernel's tick, ns; 0: exact timers
	devices         bool     // the clients are devices, each with its own kernel (IssueRate 0)
	burstAt         int64    // the tick (in jiffies) of the last retransmit burst
	burstN          int      // its packets so far
	orphansAccepted int64    // connections accepted after their clients gave up
	orphans         []orphan // connections whose clients gave up, still half-open on a listener
	freeOrphans     []uint32 // indexes of orphans ended

	cpu   *cpuModel // the machine's cores (Config.Cores); nil: not modelled
	react *reactors // the loadgen's reactors (Config.ReactorCost); nil: not modelled
	tls   *tlsModel // the server's TLS handshakes; nil: ws://
}

// Run simulates one run. It is deterministic: the same Config gives the
// same Result. ctx is checked between milliseconds of virtual time.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	s := &sim{cfg: cfg, procs: cfg.Procs, lb: -1, giveUp: int64(SynGiveUp(cfg.SynRetries)), devices: cfg.IssueRate == 0 && cfg.Cores == 0}
	s.cpu = newCPU(cfg)
	s.react = newReactors(cfg)
	s.tls = newTLS(cfg)
	if cfg.HZ > 0 {
		s.jiffy = int64(time.Second) / int64(cfg.HZ)
	}
	var free func()
	s.clients, free = makeClients(cfg.Clients)
	defer free()
	s.listen()
	s.q = newCalendar(cfg.Duration)
	s.q.touch = s.touch
	events, err := s.plan()
	if err != nil {
		return nil, err
	}
	s.rec = newRecorder(cfg, events)
	if cfg.Ramp > 0 {
		s.slotNs = 1e9 / cfg.Ramp
	}
	if cfg.IssueRate > 0 {
		s.issueGap = max(1, int64(1e9/cfg.IssueRate))
	}
	s.q.push(entry{at: 0, kind: evRamp})

	processed, reached, interrupted := s.loop(ctx)
	res := &Result{Config: cfg, Events: events, Kernel: s.kern, Processed: processed, Orphans: s.orphansAccepted,
		Interrupted: interrupted, End: cfg.Duration}
	if interrupted {
		res.End = min(cfg.Duration, (reached/(100*time.Millisecond)+1)*100*time.Millisecond)
	}
	if s.cpu != nil {
		s.cpu.advance(int64(res.End))
		res.CPU = s.cpu.used()
	}
	res.Report, res.Partials, err = s.rec.finish(s)
	if err != nil {
		return nil, err
	}
	if interrupted { // the events not reached did not happen
		n := 0
		for n < len(res.Events) && res.Events[n].Start <= reached {
			n++
		}
		res.Events, res.Partials = res.Events[:n], res.Partials[:min(n, len(res.Partials))]
		return res, ErrInterrupted
	}
	return res, nil
}

// listen opens the listeners: one per process, each with its share of
// the accept rate, and the load balancer's in front of them (Config.LB).
func (s *sim) listen() {
	cfg := s.cfg
	n := cfg.Procs
	if cfg.LB != nil {
		s.lb = n
		n++
	}
	s.lsts = make([]listener, n)
	service := int64(1e9/cfg.ProcCapacity) + int64(cfg.HandshakeCost)
	for i := range s.lsts {
		l := &s.lsts[i]
		l.open, l.accepting = true, true
		l.backlog = cfg.Backlog
		l.service = service
		if cfg.AcceptRate > 0 {
			l.setRate(0, cfg.AcceptRate/float64(cfg.Procs), cfg.AcceptBurst)
		}
		if i < cfg.Procs {
			l.shed = cfg.Shed > 0 // an admission ramp starts at a restart, not the run's start
		}
	}
	if cfg.LB != nil {
		l := &s.lsts[s.lb]
		l.lb, l.backlog, l.service = true, cfg.LB.Queue, 0
		l.setRate(0, cfg.LB.Rate, 0)
	}
}

// loop runs the calendar's entries in time order until none is left or
// ctx ends, and returns how many it ran, the virtual time of the last one
// and whether ctx ended first.
func (s *sim) loop(ctx context.Context) (processed uint64, reached time.Duration, interrupted bool) {
	for {
		e, ok := s.q.pop()
		if !ok {
			return processed, reached, false
		}
		processed++
		// Every 4096 entries (well under a millisecond of CPU): a
		// simulation of many events in one instant stops all the same.
		if processed%4096 == 0 && ctx.Err() != nil {
			return processed, reached, true
		}
		reached = time.Duration(e.at)
		s.dispatch(e)
	}
}

// ErrInterrupted is Run's error when its context ended before the
// simulation did: the Result it returns with it covers the virtual time
// reached, Interrupted set.
var ErrInterrupted = errors.New("sim: interrupted")

// touch reads the client of each client entry in keys before they are
// dispatched. Dispatching an entry begins with its client's generation,
// and the clients of a bucket are scattered over the whole fleet: read one
// at a time, each is a cache miss the run waits for; read here, in a loop
// whose loads do not depend on each other, the misses overlap.
func (s *sim) touch(keys []uint64) {
	var sum uint8
	for _, k := range keys {
		if kd := kind(k >> kindShift & 15); kd >= evStart && kd < evLoadgen {
			sum += s.clients[uint32(k>>whoShift)].gen
		}
	}
	s.touched += sum
}

// dispatch runs one entry.
func (s *sim) dispatch(e entry) {
	switch e.kind {
	case evChaos:
		a := s.actions[e.who]
		a.do(e.at)
		return
	case evAccept:
		s.accept(int(e.who), e.at)
		return
	case evRamp:
		s.ramp(e.at)
		return
	case evOrphan:
		s.orphanRetry(e.who, e.at)
		return
	case evLoadgen:
		s.loadgenRun(int(e.who), e.at)
		return
	case evCloser:
		s.closeSlice(int(e.who), e.at)
		return
	}
	c := &s.clients[e.who]
	if c.gen != e.gen {
		return // superseded
	}
	switch e.kind {
	case evStart:
		if c.state == stWaiting {
			s.startDue(e, c)
		}
	case evSyn:
		if c.state == stSynSent {
			s.synAgain(e, c)
		}
	case evConnTimeout:
		if c.state == stSynSent {
			s.connTimeout(e, c)
		}
	case evAck:
		if c.state == stAckFlight {
			s.lsts[c.lst].inflight--
			s.ack(e.who, e.at)
		}
	case evRetryAck:
		if c.state == stStalled {
			s.retryAck(e.who, e.at)
		}
	case evHSTimeout:
		s.hsTimeout(e.who, e.at)
	case evClosed:
		if c.state == stConnected {
			s.closed(e.who, e.at)
		}
	case evUpgraded:
		switch c.state {
		case stUpgrading:
			s.upgraded(e.who, e.at)
		case stShedding:
			s.shed(e.who, e.at)
		}
	}
}

// startDue starts a waiting client's attempt when it is due: after the
// issue gap since the previous one, and once its loadgen process has the
// CPU to start it.
func (s *sim) startDue(e entry, c *client) {
	if s.issueGap > 0 && c.flags&flIssued == 0 {
		at := max(e.at, s.issueFree)
		s.issueFree = at + s.issueGap
		if at > e.at {
			c.flags |= flIssued
			s.q.push(entry{at: at, who: e.who, gen: c.gen, kind: evStart})
			return
		}
	}
	if s.cpu != nil && c.flags&flCPU == 0 {
		s.queueAttempt(e.who, e.at) // its loadgen process has the CPU to start it
		return
	}
	c.flags &^= flIssued | flCPU
	s.start(e.who, e.at)
}

// synAgain retransmits the SYN of a client still waiting for its
// handshake, unless the host's backlog of received packets drops it.
func (s *sim) synAgain(e entry, c *client) {
	s.kern.TCPSynRetrans++
	s.retransmitted(e.at)
	c.syn++
	if s.softnetDrop(e.at) {
		s.synLater(e.who, e.at)
		return
	}
	s.syn(e.who, e.at)
}

// connTimeout ends a connect that never completed: the load balancer's
// 504 when it was forwarded, else a timeout (the kernel's, when it gave up
// before the client's deadline).
func (s *sim) connTimeout(e entry, c *client) {
	if c.flags&flFwd != 0 {
		s.kern.TCPAbortOnTimeout++
		s.fail(e.who, failure{class: connerr.Handshake5xx, status: 504}, e.at)
		return
	}
	if e.at-c.attemptAt < int64(s.cfg.ConnectTimeout) {
		s.kern.TCPAbortOnTimeout++ // the kernel gave up, not the client's deadline
	}
	s.fail(e.who, failure{class: connerr.Timeout}, e.at)
}

// ramp starts first connects: at their ramp slots, or as many as
// MaxInflight allows without a ramp.
func (s *sim) ramp(now int64) {
	s.rampWait = false
	for s.next < len(s.clients) {
		if s.inflight >= s.cfg.MaxInflight {
			s.rampWait = true
			return
		}
		if s.slotNs > 0 {
			slot := int64(float64(s.next) * s.slotNs)
			if slot > now {
				s.q.push(entry{at: slot, kind: evRamp})
				return
			}
		}
		id := uint32(s.next)
		s.next++
		c := &s.clients[id]
		c.flags |= flFirst
		s.inflight++
		if s.cpu != nil {
			// Its loadgen process starts it when it has the CPU.
			c.setState(stWaiting)
			s.queueAttempt(id, now)
			continue
		}
		s.start(id, now)
	}
}

// attemptEnded frees a first connect's place in flight.
func (s *sim) attemptEnded(c *client, now int64) {
	if c.flags&flFirst == 0 {
		return
	}
	c.flags &^= flFirst
	s.inflight--
	if s.rampWait && s.inflight < s.cfg.MaxInflight {
		s.rampWait = false
		s.q.push(entry{at: now, kind: evRamp})
	}
}

// start begins an attempt: the first SYN goes to the balancer or to one
// target process.
func (s *sim) start(id uint32, now int64) {
	c := &s.clients[id]
	c.sockets++
	c.attemptAt = now
	c.deadline = noTime
	c.flags &^= flFwd | flCookie
	s.rec.attempt(now)
	s.kern.ActiveOpens++
	if s.lb >= 0 {
		c.lst = uint16(s.lb)
	} else {
		c.lst = uint16(s.pick(id, c.sockets))
	}
	s.leg(id, now)
}

// leg sends the first SYN of a leg: the client's to the listener, or the
// balancer's to a target process.
func (s *sim) leg(id uint32, now int64) {
	c := &s.clients[id]
	c.setState(stSynSent)
	c.syn = 0
	c.mark = now
	s.syn(id, now)
}

// syn delivers a SYN to the client's listener at now.
func (s *sim) syn(id uint32, now int64) {
	c := &s.clients[id]
	l := &s.lsts[c.lst]
	switch {
	case !l.open:
		s.kern.OutRsts++
		s.kern.AttemptFails++
		if c.flags&flFwd != 0 {
			s.fail(id, failure{class: connerr.Handshake5xx, status: 502}, now)
		} else {
			s.fail(id, failure{class: connerr.Refused}, now)
		}
		return
	case l.full():
		// The kernel (tcp_conn_request) looks at the SYN queue first: a
		// SYN that finds it full counts as TCPReqQFullDoCookies (or
		// TCPReqQFullDrop) even when the accept queue then drops it.
		// Real runs count three times as many as SyncookiesSent at
		// 50,000 clients (lab/records/simulator.md).
		if l.synq >= l.backlog {
			if s.cfg.NoSynCookies {
				s.kern.TCPReqQFullDrop++
			} else {
				s.kern.TCPReqQFullDoCookies++
			}
		}
		s.kern.ListenOverflows++
		s.kern.ListenDrops++
		s.synLater(id, now)
		return
	case l.synq >= l.backlog:
		if s.cfg.NoSynCookies {
			s.kern.TCPReqQFullDrop++
			s.kern.ListenDrops++
			s.synLater(id, now)
			return
		}
		s.kern.TCPReqQFullDoCookies++
		s.kern.SyncookiesSent++
		c.flags |= flCookie
	default:
		c.flags &^= flCookie
		l.synq++
	}
	// The request reaches the listener one RTT after the client's reactor
	// has seen the connect complete and written it (reaction).
	at, reacts := s.reaction(id, now)
	if !reacts && l.n+l.inflight < l.backlog {
		// Room for this one whatever the handshakes in flight do, and
		// nothing to wait for: its final ACK cannot be dropped, so it is
		// queued now rather than one RTT later (one event fewer per
		// connect).
		if c.flags&flFwd == 0 {
			c.deadline = addSat(now, s.cfg.Client.HandshakeTimeout)
		}
		s.enqueue(id, now)
		return
	}
	l.inflight++
	c.setState(stAckFlight)
	s.q.push(entry{at: at + int64(s.cfg.RTT), who: id, gen: c.gen, kind: evAck})
}

// synLater schedules the next SYN retransmit of a dropped SYN, or the
// connect's end: the kernel's give-up or the client's connect deadline.
func (s *sim) synLater(id uint32, now int64) {
	c := &s.clients[id]
	end := c.mark + s.giveUp
	if c.flags&flFwd == 0 {
		end = min(end, addSat(c.attemptAt, s.cfg.ConnectTimeout))
	}
	next := end
	if k := int(c.syn); k < len(s.cfg.SynSchedule) {
		// The retransmit timer is armed when this SYN goes out, for the
		// schedule's gap, and fires on the timer wheel.
		gap := s.cfg.SynSchedule[k]
		if k > 0 {
			gap -= s.cfg.SynSchedule[k-1]
		}
		if c.flags&flFwd != 0 {
			next = s.timer(now, gap) // the balancer's kernel
		} else {
			next = s.clientTimer(id, now, gap)
		}
	}
	if next < end {
		s.q.push(entry{at: next, who: id, gen: c.gen, kind: evSyn})
	} else {
		s.q.push(entry{at: max(end, now), who: id, gen: c.gen, kind: evConnTimeout})
	}
}

// ack delivers a final ACK: into the accept queue, or dropped on a full
// one, which stalls the connection (the client believes it connected).
func (s *sim) ack(id uint32, now int64) {
	c := &s.clients[id]
	l := &s.lsts[c.lst]
	if c.flags&flFwd == 0 {
		// TCP is connected for the client: its upgrade deadline runs.
		c.deadline = addSat(now, s.cfg.Client.HandshakeTimeout)
	}
	if l.full() {
		s.ackDropped(c.flags&flCookie != 0)
		c.setState(stStalled)
		c.mark, c.syn = now, 0
		s.stallRetry(id, now)
		return
	}
	s.enqueue(id, now)
}

// ackDropped counts a final ACK (or a retransmit carrying one) dropped on
// a full accept queue; a cookie's is validated first.
func (s *sim) ackDropped(cookie bool) {
	s.kern.ListenOverflows++
	s.kern.ListenDrops++
	if cookie {
		s.kern.SyncookiesRecv++
	}
}

// enqueue puts a connection whose handshake completed into its listener's
// accept queue.
func (s *sim) enqueue(id uint32, now int64) {
	c := &s.clients[id]
	l := &s.lsts[c.lst]
	if c.flags&flCookie != 0 {
		s.kern.SyncookiesRecv++
	} else {
		l.synq--
	}
	c.setState(stQueued)
	if c.deadline != noTime {
		s.q.push(entry{at: max(c.deadline, now), who: id, gen: c.gen, kind: evHSTimeout})
	}
	l.push(qent{c: id, sock: c.sockets})
	s.arm(int(c.lst), now)
}

// stallRetry schedules the next try of a stalled connection: the
// client's data retransmit (a loss probe after DataRTO, then RTOs from
// DataRTO doubling), on the timer wheel. The handshake deadline ends it.
func (s *sim) stallRetry(id uint32, now int64) {
	c := &s.clients[id]
	next := s.nextRetry(id, c.mark, c.syn, 255)
	s.q.push(entry{at: next, who: id, gen: c.gen, kind: evRetryAck})
	if c.deadline != noTime {
		s.q.push(entry{at: max(c.deadline, now), who: id, gen: c.gen, kind: evHSTimeout})
	}
}

// nextRetry returns when the next retransmit of a stalled connection's
// request reaches its listener, on client id's kernel timers: mark is
// when it stalled, syn counts the retransmits so far, and the client
// sends at most maxData of them (noTime after the last).
//
// Only the request completes a stalled connection. The target's listener
// defers accept (TCP_DEFER_ACCEPT) for longer than the kernel retransmits
// a SYN-ACK: the bare ACK a retransmitted SYN-ACK would draw is dropped,
// and for a request whose final ACK was dropped the kernel sends no
// SYN-ACK again before the deferral's last round, 31 s on, long past any
// upgrade deadline. (Before the target deferred, such an ACK made the
// connection alone: 951,494 of the 3,441,326 connections a million-client
// run's targets accepted sent nothing for 5 s, and held upgrade slots
// meanwhile, a wait this model never had.)
func (s *sim) nextRetry(id uint32, mark int64, syn, maxData uint8) int64 {
	if syn >= maxData {
		return noTime
	}
	// The request is the only segment in flight: the first retransmit is
	// the tail loss probe, 2·srtt + tcp_rto_min (srtt is microseconds on
	// loopback), re-arming the RTO, tcp_rto_min, which then doubles: D,
	// D, 2D, 4D... apart.
	t := mark
	for k := range min(syn, 30) + 1 {
		t = s.clientTimer(id, t, s.cfg.DataRTO<<max(int(k)-1, 0))
	}
	return t
}

// retransmitted counts a segment the kernel sent again at now and, with
// Config.Cores, charges its CPU.
func (s *sim) retransmitted(now int64) {
	s.kern.RetransSegs++
	if s.cpu != nil {
		s.cpu.charge(now, s.cpu.costs.Segment, byKernel)
	}
}

// retryAck is a stalled connection's ACK arriving again.
func (s *sim) retryAck(id uint32, now int64) {
	c := &s.clients[id]
	l := &s.lsts[c.lst]
	c.syn++
	s.retransmitted(now)
	if s.softnetDrop(now) {
		c.gen++
		s.stallRetry(id, now)
		return
	}
	if l.full() {
		s.ackDropped(c.flags&flCookie != 0)
		c.gen++
		s.stallRetry(id, now)
		return
	}
	s.enqueue(id, now)
}

// hsTimeout is the client's upgrade deadline.
func (s *sim) hsTimeout(id uint32, now int64) {
	c := &s.clients[id]
	if c.deadline == noTime || now < c.deadline {
		return
	}
	switch c.state {
	case stStalled:
		if c.flags&flFwd == 0 {
			s.orphan(id, now) // its kernel goes on retransmitting
		} else if c.flags&flCookie == 0 {
			s.lsts[c.lst].synq--
		}
	case stAckFlight:
		if c.flags&flCookie == 0 {
			s.lsts[c.lst].synq--
		}
		s.lsts[c.lst].inflight--
	case stQueued, stUpgrading, stShedding, stSynSent:
	default:
		return
	}
	s.fail(id, failure{class: connerr.HandshakeTimeout}, now)
}

// arm makes sure listener li looks at its queue at now.
func (s *sim) arm(li int, now int64) {
	l := &s.lsts[li]
	if l.tick || l.n == 0 || !l.accepting {
		return
	}
	l.tick = true
	s.q.push(entry{at: max(now, l.busy), who: uint32(li), kind: evAccept})
}

// accept takes connections from listener li's queue while its gate, its
// token bucket and its CPU allow.
func (s *sim) accept(li int, now int64) {
	l := &s.lsts[li]
	l.tick = false
	defer l.endSlice()
	for l.n > 0 && l.accepting {
		if l.busy > now {
			l.tick = true
			s.q.push(entry{at: l.busy, who: uint32(li), kind: evAccept})
			return
		}
		if !l.shed {
			if wait, ok := l.take(now); !ok {
				l.tick = true
				s.q.push(entry{at: now + wait, who: uint32(li), kind: evAccept})
				return
			}
		}
		e := l.pop()
		c := &s.clients[e.c]
		s.kern.PassiveOpens++
		// A shedding process upgrades a connection when its bucket has a
		// token, and answers it 503 otherwise.
		shed := false
		if l.shed {
			_, ok := l.take(now)
			shed = !ok
		}
		if c.sockets != e.sock || c.state != stQueued || int(c.lst) != li {
			// The client gave up on it: an orphan. The target reads its
			// request (sent before the client closed), upgrades it at the
			// usual cost (or sheds it), and finds the client gone.
			s.orphansAccepted++
			switch {
			case shed:
				s.serve(l, now, ShedCost, c)
			case !l.lb:
				s.serve(l, now, 0, c) // its handshake too, as the client left it
			}
			continue
		}
		if l.lb {
			// The balancer forwards the connection to a target process.
			c.flags |= flFwd
			c.lst = uint16(s.pick(e.c, c.sockets))
			s.kern.ActiveOpens++
			s.leg(e.c, now)
			s.q.push(entry{at: max(c.deadline, now), who: e.c, gen: c.gen, kind: evHSTimeout})
			continue
		}
		var done int64
		if shed {
			done = s.serve(l, now, ShedCost, c)
			c.setState(stShedding)
		} else {
			done = s.serve(l, now, 0, c)
			if s.cpu != nil { // the client's loadgen process does its TLS handshake and reads the 101
				s.cpu.charge(now, s.cpu.costs.Upgrade+s.clientCost(c), byLoadgen)
			}
			s.handshook(c)
			c.setState(stUpgrading)
		}
		s.q.push(entry{at: done, who: e.c, gen: c.gen, kind: evUpgraded})
		// A deadline after the 101 (or 503) could only find the client
		// moved on: evUpgraded changes its state whatever it finds, so the
		// entry is pushed only when it can run first (at the same instant,
		// kind orders it before the 101).
		if c.deadline != noTime && c.deadline <= done {
			s.q.push(entry{at: max(c.deadline, now), who: e.c, gen: c.gen, kind: evHSTimeout})
		}
	}
}

// serve has target process l upgrade client c's connection it accepted
// at now (a shed one when shed, its cost, is not 0) and returns when that
// is done; l.busy becomes when the process may take the next. Its
// capacity, handshake cost and c's TLS handshake (full or resumed) pace
// it; with Cores so does its CPU: the process takes a slice's upgrades at
// a time (as many as are queued and fit in CPUCosts.Slice, each at its own
// TLS cost), each done when the slice is, and takes the next when that
// slice is done. A shed upgrade costs the CPU an upgrade's cost; its TLS
// handshake was done all the same.
func (s *sim) serve(l *listener, now int64, shed time.Duration, c *client) int64 {
	d := l.service
	if shed > 0 {
		d = int64(shed)
	}
	var hs time.Duration
	if c != nil {
		hs = s.serverCost(c)
	}
	m := s.cpu
	if m == nil {
		l.busy = max(l.busy, now) + d + int64(hs)
		return l.busy
	}
	if l.sliceLeft == 0 || now >= l.sliceEnd {
		start := max(l.busy, now)
		k, cost, paced := s.slice(l, m.costs.Accept+s.cfg.HandshakeCost+hs, d+int64(hs))
		l.sliceEnd = max(m.job(now, start, cost, byTarget), start+paced)
		l.sliceLeft = k
	}
	l.sliceLeft--
	if l.sliceLeft == 0 {
		l.busy = l.sliceEnd
	}
	return l.sliceEnd
}

// slice is the slice of upgrades target process l takes with Cores: the
// one it accepted, of CPU cost first and paced time firstPaced, and those
// queued behind it, as many as fit in CPUCosts.Slice (at least one), each
// at its own TLS handshake's cost. It returns how many, their CPU and
// their paced time (the process's capacity, HandshakeCost and TLS).
func (s *sim) slice(l *listener, first time.Duration, firstPaced int64) (k int, cost time.Duration, paced int64) {
	m := s.cpu
	if s.tls == nil { // every upgrade costs the same
		k = min(l.n+1, m.perSlice(first))
		return k, time.Duration(k) * first, int64(k) * firstPaced
	}
	k, cost, paced = 1, first, firstPaced
	base := m.costs.Accept + s.cfg.HandshakeCost
	for i := 0; i < l.n; i++ {
		hs := s.serverCost(&s.clients[l.q[(l.head+i)%len(l.q)].c])
		if cost+base+hs > m.costs.Slice {
			break
		}
		k, cost, paced = k+1, cost+base+hs, paced+l.service+int64(hs)
	}
	return k, cost, paced
}

// endSlice ends target process l's slice when it has nothing more to
// upgrade in it: it is busy until the slice is done.
func (l *listener) endSlice() {
	if l.sliceLeft > 0 {
		l.busy, l.sliceLeft = max(l.busy, l.sliceEnd), 0
	}
}

// upgraded is the 101 reaching the client, or a rejection when the target
// rejects upgrades.
func (s *sim) upgraded(id uint32, now int64) {
	c := &s.clients[id]
	if now < s.rejectUntil {
		f := failure{class: connerr.Handshake5xx, status: s.rejectCode, hint: s.rejectAfter}
		if s.rejectCode < 500 {
			f.class = connerr.Handshake4xx
		}
		s.fail(id, f, now)
		return
	}
	c.setState(stConnected)
	c.mark = now
	if s.cpu != nil {
		s.cpu.up(now)
	}
	s.attemptEnded(c, now)
	c.attempt = 0
	s.rec.upgraded(c.attemptAt, now)
	if s.tls != nil {
		s.rec.handshake(now, c.flags&flResumed != 0)
	}
	s.rec.up(id, c, now)
}

// shed is a shedding process's 503 reaching the client, with a
// Retry-After of 1 to ceil(Shed) seconds drawn per attempt.
func (s *sim) shed(id uint32, now int64) {
	c := &s.clients[id]
	w := int64((s.cfg.Shed + time.Second - 1) / time.Second)
	k := min(w, 1+int64(backoff.U(s.cfg.Seed, streamShed, uint64(id), uint64(c.sockets))*float64(w)))
	s.fail(id, failure{class: connerr.Handshake5xx, status: 503, hint: time.Duration(k) * time.Second}, now)
}

// streamShed is the draw of a shed upgrade's Retry-After.
const streamShed backoff.Stream = 1<<32 + 4

// admit starts target process l's admission ramp at now, when the
// server has one: the process's share of AdmitFloor, rising to its
// share of the accept rate over AdmitRamp.
func (s *sim) admit(l *listener, now int64) {
	if s.cfg.AdmitRamp > 0 {
		l.ramp(now, s.cfg.AdmitFloor/float64(s.procs), s.cfg.AdmitRamp)
	}
}

// fail ends an attempt that did not connect, then retries or stops.
func (s *sim) fail(id uint32, f failure, now int64) {
	c := &s.clients[id]
	if c.state == stSynSent && c.flags&flFwd == 0 {
		s.reacted(id, now) // its connect never completed: the failure is its reactor's work
	}
	s.attemptEnded(c, now)
	s.rec.failure(f.class, now)
	s.retry(id, f, now)
}

// drop ends an established connection, then retries or stops.
func (s *sim) drop(id uint32, f failure, now int64) {
	c := &s.clients[id]
	s.rec.ended(f.class, now)
	if c.flags&flUp != 0 {
		s.rec.down(id, c, now)
	}
	s.retry(id, f, now)
}
