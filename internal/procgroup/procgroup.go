// Package procgroup is what a group of stampede processes on one port (a
// target's servers, a proxy's relays) has in common: each member is a
// child started with childproc and known by its ready line; the group
// tells an exit it asked for from a crash, reaches every member at once,
// and stops them all, gently first. What a member does and how it is
// controlled stays with its role (group.Group, proxy.Group).
package procgroup

import (
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/stampede-dev/stampede/childproc"
)

// Member is one running process of a group.
type Member struct {
	*childproc.Child // Signal, Kill, Wait, Done, Exited, PID
	// Line is its ready line; Line.Token is its control API's token.
	Line childproc.ReadyLine

	stopping atomic.Bool // the group stopped it: its exit is no crash
}

// Spawn starts one process and returns it with its ready line (a
// group.Spawner or proxy.Spawner with its arguments bound).
type Spawn func() (*childproc.Child, childproc.ReadyLine, error)

// Start starts a member with spawn. token is the control token the
// process was given, recorded when its ready line carries none.
func Start(spawn Spawn, token string) (*Member, error) {
	c, line, err := spawn()
	if err != nil {
		return nil, err
	}
	if line.Token == "" {
		line.Token = token
	}
	return &Member{Child: c, Line: line}, nil
}

// Watch calls onExit, on a goroutine of its own, when m exits without the
// group having stopped it: a crash.
func (m *Member) Watch(onExit func(err error)) {
	go func() {
		err := m.Wait()
		if !m.stopping.Load() {
			onExit(err)
		}
	}()
}

// MarkStopped records that the group is stopping m by other means (a
// control request), so its exit is no crash.
func (m *Member) MarkStopped() { m.stopping.Store(true) }

// Stop marks m as stopped by the group, then sends it sig.
func (m *Member) Stop(sig os.Signal) error {
	m.MarkStopped()
	return m.Signal(sig)
}

// Each runs f for every member concurrently and joins the errors, in the
// members' order.
func Each[M any](members []M, f func(M) error) error {
	errs := make([]error, len(members))
	var wg sync.WaitGroup
	for i, m := range members {
		wg.Go(func() { errs[i] = f(m) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// StopAll stops every member with sig, kills those still running after
// grace (at once with grace 0), and returns when all have exited.
func StopAll(members []*Member, sig os.Signal, grace time.Duration) {
	for _, m := range members {
		m.Stop(sig)
	}
	if grace > 0 {
		timer := time.NewTimer(grace)
		defer timer.Stop()
	wait:
		for _, m := range members {
			select {
			case <-m.Done():
			case <-timer.C:
				break wait
			}
		}
	}
	for _, m := range members {
		if !m.Exited() {
			m.Stop(syscall.SIGKILL)
		}
		m.Wait()
	}
}
