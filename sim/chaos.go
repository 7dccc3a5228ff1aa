package sim

import (
	"fmt"
	"slices"
	"time"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/chaos"
	"github.com/stampede-dev/stampede/connerr"
	"github.com/stampede-dev/stampede/results"
)

// action is one change the chaos schedule makes to the model at an
// instant.
type action struct {
	at int64
	do func(now int64)
}

// plan turns the chaos schedule into the run's events, as the supervisor
// would record them (Start, End, Ready; Steps of a rolling restart), and
// into actions on the model. Each event's recovery snapshot runs before
// any action at its Start.
func (s *sim) plan() ([]results.Event, error) {
	if s.cfg.Schedule == nil {
		return nil, nil
	}
	type planned struct {
		ev  results.Event
		act []action
		idx *int // the event's index in the run's events, for a paced exit
	}
	var all []planned
	for _, p := range s.cfg.Schedule.Plan(s.cfg.Duration) {
		ev := p.Event
		at := int64(p.At)
		rec := results.Event{Kind: ev.Kind.String(), Spec: p.Text, Start: p.At}
		var acts []action
		idx := new(int)
		switch ev.Kind {
		case chaos.Restart:
			acts = s.restart(&rec, ev, at, idx)
		case chaos.Stall:
			end := at + int64(ev.For)
			rec.End, rec.Ready = time.Duration(end), time.Duration(end)
			acts = append(acts,
				action{at, func(int64) { s.stall(+1) }},
				action{end, func(now int64) { s.stall(-1); s.armAll(now) }})
		case chaos.Backlog:
			rec.Mode = fmt.Sprint(ev.N)
			end := at + int64(ev.For)
			rec.End, rec.Ready = time.Duration(end), time.Duration(end)
			prev := new(int)
			acts = append(acts, action{at, func(int64) { *prev = s.lsts[0].backlog; s.setBacklog(ev.N) }})
			if ev.For > 0 {
				acts = append(acts, action{end, func(int64) { s.setBacklog(*prev) }})
			}
		case chaos.AcceptRate:
			rec.Mode = fmt.Sprintf("%g/s", ev.Rate)
			end := at + int64(ev.For)
			rec.End, rec.Ready = time.Duration(end), time.Duration(end)
			prev := new(float64)
			acts = append(acts, action{at, func(now int64) { *prev = s.cfg.AcceptRate; s.setRate(ev.Rate, now) }})
			if ev.For > 0 {
				acts = append(acts, action{end, func(now int64) { s.setRate(*prev, now) }})
			}
		case chaos.Reject:
			rec.Mode = fmt.Sprint(ev.Status)
			end := at + int64(ev.For)
			rec.End, rec.Ready = time.Duration(end), time.Duration(end)
			acts = append(acts, action{at, func(int64) {
				s.rejectUntil, s.rejectCode, s.rejectAfter = end, ev.Status, ev.RetryAfter
			}})
		default:
			return nil, fmt.Errorf("sim: %q: %s events are not modelled", p.Text, ev.Kind)
		}
		all = append(all, planned{rec, acts, idx})
	}
	slices.SortStableFunc(all, func(a, b planned) int { return int(a.ev.Start - b.ev.Start) })
	events := make([]results.Event, len(all))
	for i, p := range all {
		events[i] = p.ev
		*p.idx = i
		i := i
		s.actions = append(s.actions, action{int64(p.ev.Start), func(int64) { s.rec.snapshot(i, s.clients) }})
	}
	for _, p := range all {
		s.actions = append(s.actions, p.act...)
	}
	for i, a := range s.actions {
		s.q.push(entry{at: a.at, who: uint32(i), kind: evChaos})
	}
	return events, nil
}

// restart plans a restart at offset at: the processes it stops, exit,
// listen and are ready again, one at a time when it is rolling, and the
// instants (Steps, End, Ready) the supervisor would record in rec. A
// graceful restart with spread= closes its connections over the spread
// and exits after it: the exit, and every instant after it, comes Spread
// later. With the cores modelled, a restart's processes exit when they
// have closed their connections (pacedRestart); idx is then the event's
// index in the run's events, set once they are sorted.
func (s *sim) restart(rec *results.Event, ev chaos.Event, at int64, idx *int) []action {
	rec.Mode = ev.Mode
	procs := []int{}
	switch ev.Procs {
	case chaos.ProcsOne:
		procs = append(procs, 0)
	default:
		for i := range s.procs {
			procs = append(procs, i)
		}
	}
	if s.cpu != nil && ev.Spread == 0 && ev.Shape != chaos.ShapeStall {
		return s.pacedRestart(rec, ev, at, procs, idx)
	}
	exit := int64(ev.Spread) + int64(s.cfg.StopTime)
	down, start := int64(ev.Down)+exit, int64(s.cfg.StartTime)
	// stopProcs has already closed or reset the listeners of a stall
	// shape (its port stays open) and of spread closes.
	closedAtStop := ev.Shape == chaos.ShapeStall || ev.Spread > 0
	var acts []action
	if ev.Procs == chaos.ProcsRolling {
		t := at
		for _, pi := range procs {
			pi := pi
			stop, listen := t, t+down
			ready := listen + start
			acts = append(acts,
				action{stop, func(now int64) { s.stopProcs([]int{pi}, ev, now) }},
				action{stop + exit, func(now int64) { s.exit([]int{pi}, closedAtStop, now) }},
				action{listen, func(int64) { s.listenProcs([]int{pi}) }},
				action{ready, func(now int64) { s.readyProcs([]int{pi}, now) }})
			rec.Steps = append(rec.Steps, results.Step{Proc: pi, Start: time.Duration(stop), End: time.Duration(listen), Ready: time.Duration(ready), Conns: -1})
			rec.End, rec.Ready = time.Duration(listen), time.Duration(ready)
			t = ready + int64(ev.Interval)
		}
		return acts
	}
	rec.End, rec.Ready = time.Duration(at+down), time.Duration(at+down+start)
	// The whole group restarts: a new generation, whose ticket keys (in
	// memory) are new; one process alone keeps its siblings' keys.
	whole := ev.Procs != chaos.ProcsOne
	return append(acts,
		action{at, func(now int64) {
			s.stopProcs(procs, ev, now)
			if whole {
				s.loseKeys()
			}
		}},
		action{at + exit, func(now int64) { s.exit(procs, closedAtStop, now) }},
		action{at + down, func(int64) { s.listenProcs(procs) }},
		action{at + down + start, func(now int64) { s.readyProcs(procs, now) }})
}

// stopProcs stops target processes: their connections end (1006, or 1001
// for a graceful restart, 1013 with a hint when it has hint=), spread
// over conns/CloseRate (over spread= when given), and they accept
// nothing more. Until a process has exited (exitProcs, StopTime later) its
// listener is still open: SYNs fill its accept queue and the rest are
// dropped, as real runs show (a restart of 10,000 clients resets exactly
// backlog+1 connections when the listener goes, one of 50,000 over three
// processes 3·(backlog+1), and no connect is refused before the processes
// have exited). With shape=stall the port stays open throughout: the
// processes' queues are reset now, and the new generation holds. With
// spread= the listener closes now (connects are refused) while the
// connections close over the spread.
func (s *sim) stopProcs(procs []int, ev chaos.Event, now int64) {
	class := connerr.Closed1006
	if ev.Mode == chaos.ModeGraceful {
		class = connerr.Closed1001
		if ev.Hint > 0 {
			class = connerr.Closed1013
		}
	}
	in := make([]bool, s.procs)
	for _, p := range procs {
		l := &s.lsts[p]
		in[p] = true
		l.accepting, l.down = false, true
		l.closeClass, l.closeDown, l.closeHint = class, ev.Down, ev.Hint
	}
	// How long each process takes to close its connections.
	span := make([]float64, s.procs)
	if ev.Spread > 0 {
		for _, p := range procs {
			span[p] = float64(ev.Spread)
		}
	} else if s.cfg.CloseRate > 0 {
		for id := range s.clients {
			if c := &s.clients[id]; c.state == stConnected && int(c.lst) < s.procs && in[c.lst] {
				span[c.lst] += 1e9 / s.cfg.CloseRate
			}
		}
	}
	paced := s.cpu != nil && ev.Spread == 0 // the processes close at their share of the cores
	if s.cpu != nil {
		for _, p := range procs {
			s.cpu.closer[p] = closer{}
		}
	}
	for id := range s.clients {
		c := &s.clients[id]
		if int(c.lst) >= s.procs || !in[c.lst] {
			continue
		}
		switch c.state {
		case stConnected:
			if paced {
				c.gen++
				s.cpu.closes[c.lst] = append(s.cpu.closes[c.lst], closing{
					key: backoff.U(s.cfg.Seed, streamClose, uint64(id), uint64(c.sockets)), c: uint32(id), gen: c.gen})
				continue
			}
			if sp := span[c.lst]; sp > 0 {
				c.gen++
				at := now + int64(backoff.U(s.cfg.Seed, streamClose, uint64(id), uint64(c.sockets))*sp)
				s.q.push(entry{at: at, who: uint32(id), gen: c.gen, kind: evClosed})
				continue
			}
			s.closed(uint32(id), now)
		case stUpgrading, stShedding:
			s.reset(uint32(id), now) // accepted, so closed with the process's connections
		}
	}
	if paced {
		s.startClosers(procs, now)
	}
	switch {
	case ev.Shape == chaos.ShapeStall:
		s.exitProcs(procs, true, now)
	case ev.Spread > 0:
		// A stop that spreads its closes closes its listener first, as
		// the target does (its clients are refused while it closes the
		// rest: real runs show an outage attempt per second of the
		// spread), and exits after the last close.
		s.exitProcs(procs, false, now)
	}
}

// exitProcs is the stopped processes' exit: their listeners close, so the
// connections waiting in their queues or handshakes are reset, and a SYN
// is refused until the port is bound again (not with shape=stall, whose
// port stays open).
func (s *sim) exitProcs(procs []int, stall bool, now int64) {
	in := make([]bool, s.procs)
	for _, p := range procs {
		l := &s.lsts[p]
		in[p] = true
		l.open = stall
		l.n, l.head, l.synq, l.inflight = 0, 0, 0, 0
		l.epoch++
	}
	for id := range s.clients {
		c := &s.clients[id]
		if int(c.lst) >= s.procs || !in[c.lst] {
			continue
		}
		switch c.state {
		case stAckFlight, stStalled, stQueued, stUpgrading, stShedding:
			s.reset(uint32(id), now)
		}
	}
}

// exit is a restart's exit action: none when stopProcs already closed
// the listeners (spread=) or reset their queues (shape=stall).
func (s *sim) exit(procs []int, closedAtStop bool, now int64) {
	if s.cpu != nil {
		s.flushClosers(procs, now)
	}
	if !closedAtStop {
		s.exitProcs(procs, false, now)
	}
}

// reset fails a connection its stopping process reset.
func (s *sim) reset(id uint32, now int64) {
	s.kern.OutRsts++
	if s.clients[id].flags&flFwd != 0 {
		s.fail(id, failure{class: connerr.Handshake5xx, status: 502}, now)
	} else {
		s.fail(id, failure{class: connerr.Reset}, now)
	}
}

// closed ends a connected client's connection as its process stops: a
// 1013 carries the hint Down + u·Hint, u drawn per connection.
func (s *sim) closed(id uint32, now int64) {
	c := &s.clients[id]
	l := &s.lsts[c.lst]
	if s.cpu != nil {
		// The stopping process closes it (charged by its closer when it
		// has one), the client's loadgen process sees it end.
		if !s.cpu.closer[c.lst].paced {
			s.cpu.charge(now, s.cpu.costs.Close, byTarget)
		}
		s.cpu.charge(now, s.cpu.costs.Disconnect, byLoadgen)
		s.cpu.down(c.mark)
	}
	f := failure{class: l.closeClass}
	switch l.closeClass {
	case connerr.Closed1006:
		s.kern.EstabResets++
	case connerr.Closed1013:
		u := backoff.U(s.cfg.Seed, streamCloseHint, uint64(id), uint64(c.sockets))
		f.hint = l.closeDown + time.Duration(u*float64(l.closeHint))
	}
	s.drop(id, f, now)
}

// streamClose is the draw of the order a stopping process closes its
// connections in.
const streamClose backoff.Stream = 1<<32 + 2

// streamCloseHint is the draw of the delay a graceful restart with hint=
// puts in a connection's close frame.
const streamCloseHint backoff.Stream = 1<<32 + 5

// listenProcs binds the restarted processes' port again: SYNs are taken
// into the queue, nothing is accepted yet.
func (s *sim) listenProcs(procs []int) {
	for _, p := range procs {
		s.lsts[p].open = true
	}
}

// readyProcs makes the restarted processes accept.
func (s *sim) readyProcs(procs []int, now int64) {
	for _, p := range procs {
		l := &s.lsts[p]
		l.open, l.down = true, false
		l.accepting = l.stalls == 0
		l.busy, l.sliceLeft = now, 0
		if l.rate > 0 {
			l.setRate(now, l.rate, s.cfg.AcceptBurst)
		}
		s.admit(l, now)
		s.arm(p, now)
	}
}

// stall makes every target process stop (+1) or resume (-1) accepting.
func (s *sim) stall(d int) {
	for i := range s.procs {
		l := &s.lsts[i]
		l.stalls += d
		if l.stalls > 0 {
			l.accepting = false
		} else {
			l.accepting = !l.down
		}
	}
}

func (s *sim) armAll(now int64) {
	for i := range s.lsts {
		s.arm(i, now)
	}
}

func (s *sim) setBacklog(n int) {
	for i := range s.procs {
		s.lsts[i].backlog = n
	}
}

// setRate sets the group's accept rate (0: unlimited), shared equally:
// under an admission ramp, the rate it rises to.
func (s *sim) setRate(rate float64, now int64) {
	s.cfg.AcceptRate = rate
	for i := range s.procs {
		r := 0.0
		if rate > 0 {
			r = rate / float64(s.procs)
		}
		s.lsts[i].setRate(now, r, s.cfg.AcceptBurst)
	}
	s.armAll(now)
}
