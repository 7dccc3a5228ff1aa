package sim

import (
	"time"

	"github.com/stampede-dev/stampede/chaos"
	"github.com/stampede-dev/stampede/results"
)

// A stopped target process exits once it has closed its connections, and
// the supervisor starts the new generation only after every process it
// stopped has exited (agent.ChaosGroup waits for them). At a million
// clients with both ends on two cores, the old processes spent 13 to 26 s
// in their exit, closing sockets while the loadgen took most of the cores
// for its own closes and early retries, and the targets were ready 31 s
// after the restart (docs/performance.md). With the cores modelled
// (Config.Cores), a restart's processes therefore close their connections
// at their share of the cores (closeSlice), exit together after the last
// close and no sooner than StopTime, listen again Down later and accept
// StartTime after that; until they exit their listeners take SYNs they
// never accept. The event's End, Ready and Steps are recorded as the
// model reaches them.

// exitWait is a stop whose processes exit together once the last of them
// has closed its connections.
type exitWait struct {
	left int             // processes still closing
	at   int64           // the exit: no sooner than StopTime, nor the last close
	exit func(now int64) // runs at the exit
}

// pacedRestart is restart's plan when the exit waits for the closes: the
// instants in rec are unknown (NeverReady) until the model reaches them.
func (s *sim) pacedRestart(rec *results.Event, ev chaos.Event, at int64, procs []int, idx *int) []action {
	rec.End, rec.Ready, rec.NeverReady = 0, 0, true
	if ev.Procs != chaos.ProcsRolling {
		return []action{{at, func(now int64) {
			s.restartStep(procs, ev, now, func(listen, ready int64) { s.eventReady(*idx, listen, ready, nil, true) })
			if ev.Procs != chaos.ProcsOne { // a new generation, whose ticket keys are new
				s.loseKeys()
			}
		}}}
	}
	var step func(k int, now int64)
	step = func(k int, now int64) {
		pi := procs[k]
		s.restartStep([]int{pi}, ev, now, func(listen, ready int64) {
			last := k == len(procs)-1
			st := results.Step{Proc: pi, Start: time.Duration(now), End: time.Duration(listen), Ready: time.Duration(ready), Conns: -1}
			s.eventReady(*idx, listen, ready, &st, last)
			if !last {
				s.later(ready+int64(ev.Interval), func(now int64) { step(k+1, now) })
			}
		})
	}
	return []action{{at, func(now int64) { step(0, now) }}}
}

// restartStep stops procs at now. Once the last of them has closed its
// connections, and StopTime has passed, they exit; they listen Down
// later and accept StartTime after that, when done gets both instants.
func (s *sim) restartStep(procs []int, ev chaos.Event, now int64, done func(listen, ready int64)) {
	s.stopProcs(procs, ev, now)
	w := &exitWait{left: len(procs), at: now + int64(s.cfg.StopTime)}
	w.exit = func(exit int64) {
		s.exit(procs, false, exit)
		listen := exit + int64(ev.Down)
		ready := listen + int64(s.cfg.StartTime)
		s.later(listen, func(int64) { s.listenProcs(procs) })
		s.later(ready, func(now int64) {
			s.readyProcs(procs, now)
			done(listen, ready)
		})
	}
	for _, p := range procs {
		s.cpu.closer[p].wait = w
	}
}

// closedAll is a stopping process's last close, done at end: the last of
// its stop's processes to finish sets their exit.
func (s *sim) closedAll(w *exitWait, end int64) {
	w.at = max(w.at, end)
	if w.left--; w.left == 0 {
		s.later(w.at, w.exit)
	}
}

// later runs do at offset at (never, at or past the run's end): an action
// the model plans as it goes.
func (s *sim) later(at int64, do func(now int64)) {
	s.actions = append(s.actions, action{at, do})
	s.q.push(entry{at: at, who: uint32(len(s.actions) - 1), kind: evChaos})
}

// eventReady records, of event i, a step of a rolling restart (nil
// otherwise) and, with last, the instants it listened and was ready again.
func (s *sim) eventReady(i int, listen, ready int64, step *results.Step, last bool) {
	e := &s.rec.events[i]
	if step != nil {
		e.Steps = append(e.Steps, *step)
	}
	if last {
		e.End, e.Ready, e.NeverReady = time.Duration(listen), time.Duration(ready), false
		s.rec.setDownBy(i)
	}
}
