// Package supervisor applies a chaos schedule to a running target and
// proxy on the run's time axis, over interfaces (Target, Proxy) that the
// roles implement: the target's process group and the proxy's Group and
// Proxy. It records each event it applied as a results.Event.
package supervisor

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/stampede-dev/stampede/chaos"
	"github.com/stampede-dev/stampede/fault"
	"github.com/stampede-dev/stampede/internal/clock"
	"github.com/stampede-dev/stampede/results"
)

// Target is what the supervisor acts on: the bundled target's process
// group (agent.ChaosGroup), or anything else that can be restarted and tuned.
// Each method returns when the action has been applied; Restart returns
// when the target is ready again.
type Target interface {
	// Restart takes the target down the way ev says (Mode, Procs,
	// Interval, Down, Shape) and brings it back. It reports when the new
	// processes were listening (end of the fault) and when the target was
	// ready again, as wall-clock instants.
	Restart(ctx context.Context, ev chaos.Event) (listening, ready time.Time, err error)
	// Stall stops accepting for d.
	Stall(ctx context.Context, d time.Duration) error
	// SetBacklog changes the listen backlog.
	SetBacklog(ctx context.Context, n int) error
	// SetAcceptRate changes the accept rate (0 = unlimited).
	SetAcceptRate(ctx context.Context, perSecond float64) error
	// Reject answers upgrades with status and Retry-After for d.
	Reject(ctx context.Context, status int, retryAfter, d time.Duration) error
	// Backlog and AcceptRate return the current values, so a change with
	// "for D" can be undone.
	Backlog() int
	AcceptRate() float64
}

// StepRestarter is a Target that restarts one process at a time and says
// how each step went; the supervisor calls RestartSteps instead of Restart
// when the Target has it.
type StepRestarter interface {
	// RestartSteps is Restart, reporting each process's step.
	RestartSteps(ctx context.Context, ev chaos.Event) (Restarted, error)
}

// Restarted is what a restart did, as wall-clock instants.
type Restarted struct {
	// Listening is when the last restarted process was started again: the
	// end of the fault.
	Listening time.Time
	// Ready is when the last restarted process began accepting.
	Ready time.Time
	// Steps are the processes restarted one at a time (procs=one and
	// rolling), in order; empty when the whole group restarted at once.
	Steps []Step
}

// Step is one process's part of a restart that went one process at a time.
type Step struct {
	// Proc is the process's index in the group.
	Proc int
	// Stop is when it was told to stop, Listening when it was started
	// again, Ready when it began accepting.
	Stop, Listening, Ready time.Time
	// Conns is how many WebSocket connections it held just before it was
	// told to stop (-1 if unknown): the clients this step took down.
	Conns int64
}

// RetryCounter is a Target that counts clients that come back sooner than
// the Retry-After they were rejected with. The supervisor reads it around
// a reject window and records the difference as the event's early
// retries.
type RetryCounter interface {
	// EarlyRetries returns each running process's counter, by process id
	// (a process restarted meanwhile starts again from 0).
	EarlyRetries(ctx context.Context) (map[int]uint64, error)
}

// earlyRetryMargin is how long after the last Retry-After of a reject
// window ran out the supervisor reads the early-retry counters: room for
// the target's window starting a little after the supervisor's request and
// for upgrades in flight.
const earlyRetryMargin = 500 * time.Millisecond

// statsTimeout bounds reading the target's counters, which may happen after
// the run's context ended.
const statsTimeout = 5 * time.Second

// Proxy is the fault proxy between the fleet and the target.
type Proxy interface {
	// Set switches a fault on; the zero fault.Set switches every fault off.
	Set(f fault.Set)
}

// Supervisor applies a schedule to a target (and a proxy) on the run's time
// axis and records every event's start, end and ready instants.
type Supervisor struct {
	// Schedule is what to do.
	Schedule *chaos.Schedule
	// Target is acted on by restart, stall, backlog, accept-rate and reject.
	Target Target
	// Proxy is acted on by proxy events; nil makes them an error.
	Proxy Proxy
	// Now reads the clock; nil means time.Now.
	Now func() time.Time
	// Sleep waits for d or until ctx is done; nil means a timer.
	Sleep func(ctx context.Context, d time.Duration) error
	// Log, if set, is told of each event as it starts and ends.
	Log func(format string, args ...any)

	mu      sync.Mutex
	events  []results.Event
	running []running // events under way, in start order
	nextID  int
}

// running is an event under way.
type running struct {
	id   int
	text string
	ev   results.Event // as it began: kind, spec, start
}

// Run applies the schedule from start until end (offsets from start) or
// until ctx is done, and returns when every started event has finished.
// Events run concurrently when they overlap in time (a proxy fault during a
// restart's downtime); the schedule's Check says which overlaps make no
// sense.
func (s *Supervisor) Run(ctx context.Context, start time.Time, end time.Duration) error {
	now, sleep := s.clock()
	plan := s.Schedule.Plan(end)
	var wg sync.WaitGroup
	errc := make(chan error, len(plan))
	for _, p := range plan {
		if err := sleep(ctx, start.Add(p.At).Sub(now())); err != nil {
			break
		}
		wg.Add(1)
		go func(p chaos.Planned) {
			defer wg.Done()
			if err := s.apply(ctx, start, p); err != nil {
				errc <- fmt.Errorf("chaos: %q at %s: %w", p.Text, p.At, err)
			}
		}(p)
	}
	wg.Wait()
	close(errc)
	return <-errc // the first error, if any
}

// Events returns the events applied so far, in start order; an event
// still under way when Run's ctx ended is among them, NeverReady.
func (s *Supervisor) Events() []results.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]results.Event, len(s.events))
	copy(out, s.events)
	return out
}

// SoFar returns the events applied so far, in start order, and after them
// those under way as they began (kind, spec and start; no readiness yet):
// what a live view marks as it happens.
func (s *Supervisor) SoFar() (done, underway []results.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	done = slices.Clone(s.events)
	for _, r := range s.running {
		underway = append(underway, r.ev)
	}
	return done, underway
}

// Current names the events under way (their schedule text, joined by
// " + " when they overlap), or "" when none is: for a live status line.
// A restart is under way until the target is ready again.
func (s *Supervisor) Current() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	texts := make([]string, len(s.running))
	for i, r := range s.running {
		texts[i] = r.text
	}
	return strings.Join(texts, " + ")
}

// begin marks an event as under way until the returned func is called.
func (s *Supervisor) begin(text string, ev results.Event) (end func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.nextID
	s.nextID++
	s.running = append(s.running, running{id, text, ev})
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.running = slices.DeleteFunc(s.running, func(r running) bool { return r.id == id })
	}
}

// apply carries out one planned event and records it.
func (s *Supervisor) apply(ctx context.Context, start time.Time, p chaos.Planned) error {
	now, sleep := s.clock()
	rec := results.Event{Kind: p.Event.Kind.String(), Spec: p.Text, Start: now().Sub(start)}
	under := s.begin(p.Text, rec)
	defer under()
	x := &applying{s: s, p: p, start: start, now: now, sleep: sleep, under: under, rec: rec}
	s.logf("chaos: %s at %.3fs", p.Text, x.rec.Start.Seconds())
	var err error
	switch p.Event.Kind {
	case chaos.Restart:
		err = x.restart(ctx)
	case chaos.Stall:
		err = x.stall(ctx)
	case chaos.Backlog:
		prev := s.Target.Backlog()
		x.rec.Mode = fmt.Sprint(p.Event.N)
		err = x.setting(ctx, func(ctx context.Context) error { return s.Target.SetBacklog(ctx, p.Event.N) },
			func(ctx context.Context) error { return s.Target.SetBacklog(ctx, prev) })
	case chaos.AcceptRate:
		prev := s.Target.AcceptRate()
		x.rec.Mode = fmt.Sprintf("%g/s", p.Event.Rate)
		err = x.setting(ctx, func(ctx context.Context) error { return s.Target.SetAcceptRate(ctx, p.Event.Rate) },
			func(ctx context.Context) error { return s.Target.SetAcceptRate(ctx, prev) })
	case chaos.Reject:
		err = x.reject(ctx)
	case chaos.ProxyEvent:
		if s.Proxy == nil {
			return fmt.Errorf("a proxy event needs the fault proxy, and this run has none")
		}
		err = x.proxy(ctx)
	default:
		return fmt.Errorf("no supervisor action for %s", p.Event.Kind)
	}
	if err != nil && ctx.Err() != nil {
		// The run ended (an interrupt, or the event outlasting the run)
		// while the event was under way: it happened all the same, and
		// its clients' figures until the end are measured. The target was
		// not seen ready again before the end, so nothing runs from a
		// readiness the run never saw.
		x.rec.End, x.rec.Ready, x.rec.NeverReady = 0, 0, true
		x.rec.Steps = nil
		s.logf("chaos: %s still under way at the run's end", p.Text)
		s.record(x.rec)
		return nil
	}
	if err != nil {
		return err
	}
	s.logf("chaos: %s done: ready at %.3fs", p.Text, x.rec.Ready.Seconds())
	s.record(x.rec)
	return nil
}

// record adds an event to those applied, in start order.
func (s *Supervisor) record(rec results.Event) {
	s.mu.Lock()
	s.events = append(s.events, rec)
	slices.SortStableFunc(s.events, func(a, b results.Event) int { return cmp.Compare(a.Start, b.Start) })
	s.mu.Unlock()
}

// applying is one planned event being carried out, and its record.
//
// A change of the target's state (stall, backlog, accept rate, reject,
// proxy faults) starts when the target confirmed it: its control round
// trip can take a while on a loaded machine, and the figures of the
// event's window must not count the time before. A restart starts when its
// processes are told to stop.
type applying struct {
	s     *Supervisor
	p     chaos.Planned
	start time.Time
	now   func() time.Time
	sleep func(context.Context, time.Duration) error
	under func() // the event is no longer under way
	rec   results.Event
}

// applied marks the event's start: now, on the run's time axis.
func (x *applying) applied() { x.rec.Start = x.now().Sub(x.start) }

// over marks the event's end and readiness: now.
func (x *applying) over() { x.rec.End, x.rec.Ready = x.now().Sub(x.start), x.now().Sub(x.start) }

// restart takes the target down and back, step by step when it can.
func (x *applying) restart(ctx context.Context) error {
	ev, start := x.p.Event, x.start
	x.rec.Mode = ev.Mode
	var res Restarted
	var err error
	if sr, ok := x.s.Target.(StepRestarter); ok {
		res, err = sr.RestartSteps(ctx, ev)
	} else {
		res.Listening, res.Ready, err = x.s.Target.Restart(ctx, ev)
	}
	if err != nil {
		return err
	}
	x.rec.End, x.rec.Ready = res.Listening.Sub(start), res.Ready.Sub(start)
	for _, st := range res.Steps {
		x.rec.Steps = append(x.rec.Steps, results.Step{
			Proc: st.Proc, Start: st.Stop.Sub(start), End: st.Listening.Sub(start), Ready: st.Ready.Sub(start), Conns: st.Conns,
		})
	}
	return nil
}

// stall stops the target accepting for the event's For.
func (x *applying) stall(ctx context.Context) error {
	if err := x.s.Target.Stall(ctx, x.p.Event.For); err != nil {
		return err
	}
	x.applied()
	err := x.sleep(ctx, x.p.Event.For)
	x.rec.End = x.now().Sub(x.start)
	x.rec.Ready = x.rec.End
	return err
}

// setting changes one of the target's settings (backlog, accept rate) and,
// with For, restores it after that long.
func (x *applying) setting(ctx context.Context, set, restore func(context.Context) error) error {
	err := set(ctx)
	if err == nil {
		x.applied()
	}
	if err == nil && x.p.Event.For > 0 {
		if err = x.sleep(ctx, x.p.Event.For); err == nil {
			err = restore(ctx)
		}
	}
	x.over()
	return err
}

// reject answers upgrades with the event's status for its For, and counts
// the clients that came back before their Retry-After.
func (x *applying) reject(ctx context.Context) error {
	s, ev, text := x.s, x.p.Event, x.p.Text
	x.rec.Mode = fmt.Sprint(ev.Status)
	rc, counts := s.Target.(RetryCounter)
	counts = counts && ev.RetryAfter > 0
	var before map[int]uint64
	if counts {
		var rerr error
		if before, rerr = readEarly(ctx, rc); rerr != nil {
			s.logf("chaos: %s: early retries not counted: %v", text, rerr)
			counts = false
		}
	}
	if err := s.Target.Reject(ctx, ev.Status, ev.RetryAfter, ev.For); err != nil {
		return err
	}
	x.applied()
	if err := x.sleep(ctx, ev.For); err != nil {
		x.over()
		return err
	}
	x.over()
	if !counts {
		return nil
	}
	// A client rejected at the window's last instant may come back early
	// until its Retry-After (whole seconds) runs out. The run may end
	// before that: count what came until then. The rejection itself is
	// over.
	x.under()
	wait := (ev.RetryAfter+time.Second-1)/time.Second*time.Second + earlyRetryMargin
	_ = x.sleep(ctx, wait)
	if after, rerr := readEarly(ctx, rc); rerr != nil {
		s.logf("chaos: %s: early retries not counted: %v", text, rerr)
	} else {
		n := earlyDelta(before, after)
		x.rec.EarlyRetries = &n
		s.logf("chaos: %s: %d early retries", text, n)
	}
	return nil
}

// proxy switches the event's proxy faults on for its For, then off.
func (x *applying) proxy(ctx context.Context) error {
	x.s.Proxy.Set(x.p.Event.Proxy)
	x.applied()
	err := x.sleep(ctx, x.p.Event.For)
	x.s.Proxy.Set(fault.Set{})
	x.over()
	return err
}

// readEarly reads the early-retry counters, even after ctx ended (the run
// is over but the target is still up), within statsTimeout.
func readEarly(ctx context.Context, rc RetryCounter) (map[int]uint64, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), statsTimeout)
	defer cancel()
	return rc.EarlyRetries(ctx)
}

// earlyDelta is the growth of the counters from before to after; a process
// not seen before (restarted meanwhile) counts from 0.
func earlyDelta(before, after map[int]uint64) uint64 {
	var n uint64
	for pid, a := range after {
		if b := before[pid]; a > b {
			n += a - b
		}
	}
	return n
}

func (s *Supervisor) clock() (func() time.Time, func(context.Context, time.Duration) error) {
	now, sleep := s.Now, s.Sleep
	if now == nil {
		now = time.Now
	}
	if sleep == nil {
		sleep = clock.Sleep
	}
	return now, sleep
}

func (s *Supervisor) logf(format string, args ...any) {
	if s.Log != nil {
		s.Log(format, args...)
	}
}
