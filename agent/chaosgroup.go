package agent

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"time"

	"github.com/stampede-dev/stampede/chaos"
	"github.com/stampede-dev/stampede/chaos/supervisor"
	"github.com/stampede-dev/stampede/internal/clock"
	"github.com/stampede-dev/stampede/target"
	"github.com/stampede-dev/stampede/target/group"
	"github.com/stampede-dev/stampede/tlsconf"
)

// ChaosGroup is the bundled server as the chaos supervisor's Target: a
// Group of `stampede target` processes that the supervisor signals, waits
// out and respawns on the same port.
type ChaosGroup struct {
	// Group is the running process group.
	Group *group.Group
	// Now reads the clock; nil means time.Now.
	Now func() time.Time
	// Sleep waits for d or until ctx is done; nil means a timer.
	Sleep func(ctx context.Context, d time.Duration) error

	mu         sync.Mutex
	backlog    int
	acceptRate float64 // per process
	nextOne    int     // the process the next procs=one restart stops

	// The stall and reject windows under way, which a process started
	// during them joins for what is left of them.
	stallUntil, rejectUntil time.Time
	rejectStatus            int
	rejectRetryAfter        time.Duration

	tls tlsCounter // a wss:// group's handshakes, every process it had
}

// A ChaosGroup restarts one process at a time when asked and counts early
// retries, so the supervisor records steps and early retries for it.
var (
	_ supervisor.Target        = (*ChaosGroup)(nil)
	_ supervisor.StepRestarter = (*ChaosGroup)(nil)
	_ supervisor.RetryCounter  = (*ChaosGroup)(nil)
)

// NewChaosGroup wraps g, whose processes started with the given backlog
// (their spec's, defaults applied) and per-process accept rate (0:
// unlimited).
func NewChaosGroup(g *group.Group, backlog int, acceptRatePerProc float64) *ChaosGroup {
	return &ChaosGroup{Group: g, backlog: backlog, acceptRate: acceptRatePerProc}
}

// signals maps a restart mode to how the processes are stopped: graceful
// sends close 1001 to every client first, abrupt closes every connection
// without close frames, kill is SIGKILL (the kernel closes the sockets).
var signals = map[string]syscall.Signal{
	chaos.ModeGraceful: syscall.SIGTERM,
	chaos.ModeAbrupt:   syscall.SIGUSR1,
	chaos.ModeKill:     syscall.SIGKILL,
}

// Restart is RestartSteps without the steps.
func (t *ChaosGroup) Restart(ctx context.Context, ev chaos.Event) (listening, ready time.Time, err error) {
	res, err := t.RestartSteps(ctx, ev)
	return res.Listening, res.Ready, err
}

// RestartSteps restarts processes of the group the way ev says and returns when
// the last of them is accepting again:
//
//   - procs=all stops every process (ev.Mode's signal), waits for them to
//     exit and brings a new generation up;
//   - procs=one does that to one process (the next in turn: successive
//     one-process restarts go round the group); the others keep serving;
//   - rolling does it to each process in turn, waiting ev.Interval after
//     one is accepting again before stopping the next, so at most one
//     process is ever down.
//
// A graceful restart with ev.Spread or ev.Hint stops its processes through
// the control API (Proc.ShutdownWith): each stops accepting at once, sends
// its close frames spread over ev.Spread (1013 with a return hint drawn
// from [ev.Down, ev.Down+ev.Hint) when ev.Hint is set) and exits after its
// clients answered.
//
// A stopped process comes back after ev.Down with the closed shape (its
// share of the port refuses nothing, since the others still listen, but
// with procs=all connects are refused), or at once with a hold of ev.Down
// with the stall shape (the port is open, nothing is accepted, its share of
// the SYNs goes unanswered). Restarted.Listening is when the last process
// was started again, Restarted.Ready when it began accepting, and Steps
// has one entry per process restarted one at a time.
func (t *ChaosGroup) RestartSteps(ctx context.Context, ev chaos.Event) (supervisor.Restarted, error) {
	var res supervisor.Restarted
	sig, ok := signals[ev.Mode]
	if !ok {
		return res, fmt.Errorf("unknown restart mode %q", ev.Mode)
	}
	n := len(t.Group.Procs())
	switch ev.Procs {
	case chaos.ProcsAll, "":
		return t.restartAll(ctx, ev, sig)
	case chaos.ProcsOne:
		t.mu.Lock()
		i := t.nextOne % n
		t.nextOne++
		t.mu.Unlock()
		step, err := t.restartProc(ctx, ev, sig, i)
		res.Steps = append(res.Steps, step)
		res.Listening, res.Ready = step.Listening, step.Ready
		return res, err
	case chaos.ProcsRolling:
		_, sleep := t.clock()
		for i := range n {
			if i > 0 {
				if err := sleep(ctx, ev.Interval); err != nil {
					return res, err
				}
			}
			step, err := t.restartProc(ctx, ev, sig, i)
			res.Steps = append(res.Steps, step)
			res.Listening, res.Ready = step.Listening, step.Ready
			if err != nil {
				return res, err
			}
		}
		return res, nil
	default:
		return res, fmt.Errorf("unknown restart procs=%q", ev.Procs)
	}
}

// shapedStop is the shutdown of a graceful restart whose close frames are
// spread (ev.Spread) or carry a return hint (ev.Hint): a signal cannot say
// that, so such a stop goes through the control API's /shutdown. The hint
// window starts at ev.Down, when the process comes back.
func shapedStop(ev chaos.Event) (target.ShutdownOptions, bool) {
	if ev.Mode != chaos.ModeGraceful || ev.Spread <= 0 && ev.Hint <= 0 {
		return target.ShutdownOptions{}, false
	}
	return target.ShutdownOptions{Mode: target.Graceful, Spread: ev.Spread, HintAfter: ev.Down, Hint: ev.Hint}, true
}

// restartAll stops every process, waits out the down time and brings a
// new generation up.
func (t *ChaosGroup) restartAll(ctx context.Context, ev chaos.Event, sig syscall.Signal) (supervisor.Restarted, error) {
	now, sleep := t.clock()
	var res supervisor.Restarted
	if o, ok := shapedStop(ev); ok {
		if err := t.Group.ShutdownWith(ctx, o); err != nil {
			return res, err
		}
	} else if err := t.Group.Signal(sig); err != nil {
		return res, err
	}
	// A killed process exits with a signal status: that is the point.
	_ = t.Group.Wait()
	hold := time.Duration(0)
	if ev.Shape == chaos.ShapeStall {
		hold = ev.Down
	} else if err := sleep(ctx, ev.Down); err != nil {
		return res, err
	}
	res.Listening = now()
	if err := t.Group.Respawn(ctx, hold, t.current); err != nil {
		return res, err
	}
	for _, p := range t.Group.Procs() {
		if p.Ready.After(res.Ready) {
			res.Ready = p.Ready
		}
	}
	return res, nil
}

// restartProc stops process i, waits out the down time and starts it
// again, the others untouched.
func (t *ChaosGroup) restartProc(ctx context.Context, ev chaos.Event, sig syscall.Signal, i int) (supervisor.Step, error) {
	now, sleep := t.clock()
	old := t.Group.Procs()[i]
	step := supervisor.Step{Proc: i, Conns: -1}
	if st, err := old.Stats(ctx); err == nil {
		step.Conns = st.Conns
	}
	step.Stop = now()
	if o, ok := shapedStop(ev); ok {
		if err := old.ShutdownWith(ctx, o); err != nil {
			return step, err
		}
	} else if err := t.Group.SignalProc(i, sig); err != nil {
		return step, err
	}
	select {
	case <-old.Done():
	case <-ctx.Done():
		return step, ctx.Err()
	}
	hold := time.Duration(0)
	if ev.Shape == chaos.ShapeStall {
		hold = ev.Down
	} else if err := sleep(ctx, ev.Down); err != nil {
		return step, err
	}
	step.Listening = now()
	if err := t.Group.RespawnProc(ctx, i, hold, t.current); err != nil {
		return step, err
	}
	step.Ready = t.Group.Procs()[i].Ready
	return step, nil
}

// current gives a (re)started process the group's state as the schedule
// left it: its backlog and accept rate, and the rest of a stall (a hold)
// or reject window under way, so it never admits a client in a state the
// schedule has changed. (Applied after the process accepts, a reject
// raced the clients waiting at the door, and on a loaded machine they
// won.)
func (t *ChaosGroup) current(c *target.Config) {
	now, _ := t.clock()
	t.mu.Lock()
	defer t.mu.Unlock()
	c.Backlog, c.AcceptRate = t.backlog, t.acceptRate
	if c.AcceptRate == 0 {
		// Unlimited: nothing to ramp up to, no capacity to shed above.
		c.AdmitRamp, c.AdmitFloor, c.Shed = 0, 0, 0
	} else if c.AdmitFloor > c.AcceptRate {
		c.AdmitFloor = c.AcceptRate
	}
	if left := t.stallUntil.Sub(now()); left > c.Hold {
		c.Hold = left
	}
	if left := t.rejectUntil.Sub(now()); left > 0 {
		c.StartReject = &target.Rejection{Status: t.rejectStatus, RetryAfter: t.rejectRetryAfter, For: left}
	}
}

// EarlyRetries returns each running process's count of clients that came
// back before their Retry-After (Stats.EarlyRetries), by PID; a
// process exiting meanwhile (a restart under way) is left out.
func (t *ChaosGroup) EarlyRetries(ctx context.Context) (map[int]uint64, error) {
	stats, err := t.Group.StatsByPID(ctx)
	out := make(map[int]uint64, len(stats))
	for pid, st := range stats {
		out[pid] = st.EarlyRetries
	}
	return out, err
}

// TLSStats returns each running process's TLS handshake counts by PID
// (nil for a ws:// process); a process exiting meanwhile is left out.
func (t *ChaosGroup) TLSStats(ctx context.Context) (map[int]*tlsconf.Stats, error) {
	stats, err := t.Group.StatsByPID(ctx)
	out := make(map[int]*tlsconf.Stats, len(stats))
	for pid, st := range stats {
		out[pid] = st.TLS
	}
	return out, err
}

// Handshakes reads the TLS handshake counts of the running processes and
// returns them summed over every process the group had, those that
// exited included (as of the last reading that saw them); nil for ws://.
func (t *ChaosGroup) Handshakes(ctx context.Context) *tlsconf.Stats {
	return t.tls.total(ctx, t.TLSStats)
}

// Stall stops every process accepting for d.
// A process (re)started during the stall joins it for the rest of d.
func (t *ChaosGroup) Stall(ctx context.Context, d time.Duration) error {
	now, _ := t.clock()
	t.mu.Lock()
	t.stallUntil = now().Add(d)
	t.mu.Unlock()
	return t.Group.Stall(ctx, d)
}

// SetBacklog sets every process's listen backlog.
func (t *ChaosGroup) SetBacklog(ctx context.Context, n int) error {
	if err := t.Group.SetBacklog(ctx, n); err != nil {
		return err
	}
	t.mu.Lock()
	t.backlog = n
	t.mu.Unlock()
	return nil
}

// SetAcceptRate sets the group's accept rate, shared evenly by its
// processes (SO_REUSEPORT spreads connections evenly).
func (t *ChaosGroup) SetAcceptRate(ctx context.Context, perSecond float64) error {
	per := perSecond / float64(max(1, len(t.Group.Procs())))
	if err := t.Group.SetAcceptRate(ctx, per); err != nil {
		return err
	}
	t.mu.Lock()
	t.acceptRate = per
	t.mu.Unlock()
	return nil
}

// Reject makes every process answer upgrades with status and Retry-After.
// A process (re)started during the window joins it for the rest of d.
func (t *ChaosGroup) Reject(ctx context.Context, status int, retryAfter, d time.Duration) error {
	now, _ := t.clock()
	t.mu.Lock()
	t.rejectUntil, t.rejectStatus, t.rejectRetryAfter = now().Add(d), status, retryAfter
	t.mu.Unlock()
	return t.Group.Reject(ctx, status, retryAfter, d)
}

// Backlog returns the current listen backlog.
func (t *ChaosGroup) Backlog() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.backlog
}

// AcceptRate returns the group's current accept rate.
func (t *ChaosGroup) AcceptRate() float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.acceptRate * float64(max(1, len(t.Group.Procs())))
}

func (t *ChaosGroup) clock() (func() time.Time, func(context.Context, time.Duration) error) {
	now, sleep := t.Now, t.Sleep
	if now == nil {
		now = time.Now
	}
	if sleep == nil {
		sleep = clock.Sleep
	}
	return now, sleep
}
