package chaos

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"time"

	"github.com/stampede-dev/stampede/target"
)

// GroupTarget is the Target of the bundled server: a target.Group of
// `stampede target` processes that the supervisor signals, waits out and
// respawns on the same port.
type GroupTarget struct {
	// Group is the running process group.
	Group *target.Group
	// Now reads the clock; nil means time.Now.
	Now func() time.Time
	// Sleep waits for d or until ctx is done; nil means a timer.
	Sleep func(ctx context.Context, d time.Duration) error

	mu         sync.Mutex
	backlog    int
	acceptRate float64 // per process
}

// NewGroupTarget wraps g, whose processes started with the given backlog
// and per-process accept rate.
func NewGroupTarget(g *target.Group, backlog int, acceptRatePerProc float64) *GroupTarget {
	return &GroupTarget{Group: g, backlog: backlog, acceptRate: acceptRatePerProc}
}

// signals maps a restart mode to how the processes are stopped: graceful
// sends close 1001 to every client first, abrupt closes every connection
// without close frames, kill is SIGKILL (the kernel closes the sockets).
var signals = map[string]syscall.Signal{
	ModeGraceful: syscall.SIGTERM,
	ModeAbrupt:   syscall.SIGUSR1,
	ModeKill:     syscall.SIGKILL,
}

// Restart stops every process the way ev.Mode says, waits for them to exit,
// and brings a new generation up: for the closed shape after ev.Down (the
// port refuses connections meanwhile), for the stall shape at once with a
// hold of ev.Down (the port is open but nothing is accepted, so the backlog
// fills and SYNs go unanswered). listening is when the new processes were
// started; ready is when the last of them began accepting.
func (t *GroupTarget) Restart(ctx context.Context, ev Event) (listening, ready time.Time, err error) {
	now, sleep := t.clock()
	if ev.Procs != "" && ev.Procs != ProcsAll {
		return listening, ready, fmt.Errorf("restart procs=%s is not supported by the process group yet; use procs=all", ev.Procs)
	}
	sig, ok := signals[ev.Mode]
	if !ok {
		return listening, ready, fmt.Errorf("unknown restart mode %q", ev.Mode)
	}
	if err := t.Group.Signal(sig); err != nil {
		return listening, ready, err
	}
	// A killed process exits with a signal status: that is the point.
	_ = t.Group.Wait()
	hold := time.Duration(0)
	if ev.Shape == ShapeStall {
		hold = ev.Down
	} else if err := sleep(ctx, ev.Down); err != nil {
		return listening, ready, err
	}
	listening = now()
	if err := t.Group.Respawn(ctx, hold); err != nil {
		return listening, ready, err
	}
	for _, p := range t.Group.Procs() {
		if p.Ready.After(ready) {
			ready = p.Ready
		}
	}
	// The respawned processes start with the configured backlog and rate;
	// re-apply a value a schedule changed for good.
	t.mu.Lock()
	backlog, rate := t.backlog, t.acceptRate
	t.mu.Unlock()
	return listening, ready, errors.Join(t.Group.SetBacklog(ctx, backlog), t.Group.SetAcceptRate(ctx, rate))
}

// Stall stops every process accepting for d.
func (t *GroupTarget) Stall(ctx context.Context, d time.Duration) error { return t.Group.Stall(ctx, d) }

// SetBacklog sets every process's listen backlog.
func (t *GroupTarget) SetBacklog(ctx context.Context, n int) error {
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
func (t *GroupTarget) SetAcceptRate(ctx context.Context, perSecond float64) error {
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
func (t *GroupTarget) Reject(ctx context.Context, status int, retryAfter, d time.Duration) error {
	return t.Group.Reject(ctx, status, retryAfter, d)
}

// Backlog returns the current listen backlog.
func (t *GroupTarget) Backlog() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.backlog
}

// AcceptRate returns the group's current accept rate.
func (t *GroupTarget) AcceptRate() float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.acceptRate * float64(max(1, len(t.Group.Procs())))
}

func (t *GroupTarget) clock() (func() time.Time, func(context.Context, time.Duration) error) {
	now, sleep := t.Now, t.Sleep
	if now == nil {
		now = time.Now
	}
	if sleep == nil {
		sleep = sleepCtx
	}
	return now, sleep
}
