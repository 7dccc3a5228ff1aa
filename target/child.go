package target

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Child is a process that announces its readiness with one ReadyLine on
// stdout: a `stampede target` of a Group, or a `stampede proxy` of a proxy
// group. Its stdout after the ready line is discarded.
type Child struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// StartChild starts cmd and waits up to timeout (or until ctx is done) for
// its ready line. cmd must not have Stdout set; SysProcAttr is set so the
// child dies with its parent. On any error the child is killed and waited
// for; name prefixes the error ("target", "proxy group").
func StartChild(ctx context.Context, name string, cmd *exec.Cmd, timeout time.Duration) (*Child, ReadyLine, error) {
	// A child must not outlive a parent that died without cleaning up.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, ReadyLine{}, err
	}
	if err := cmd.Start(); err != nil {
		return nil, ReadyLine{}, fmt.Errorf("%s: start %s: %w", name, cmd.Path, err)
	}
	c := &Child{cmd: cmd, done: make(chan struct{})}
	lines := make(chan ReadyLine, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var l ReadyLine
			if json.Unmarshal(sc.Bytes(), &l) == nil && l.Ready {
				lines <- l
				break
			}
		}
		io.Copy(io.Discard, out) // Wait must come after the last read
		c.err = cmd.Wait()
		close(c.done)
	}()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case l := <-lines:
		return c, l, nil
	case <-c.done:
		return nil, ReadyLine{}, fmt.Errorf("%s: process %d exited before ready: %v", name, c.PID(), c.err)
	case <-timer.C:
		err = fmt.Errorf("%s: process %d not ready within %v", name, c.PID(), timeout)
	case <-ctx.Done():
		err = ctx.Err()
	}
	c.Kill()
	<-c.done
	return nil, ReadyLine{}, err
}

// PID returns the process id.
func (c *Child) PID() int { return c.cmd.Process.Pid }

// Signal sends sig to the process (syscall.SIGTERM: graceful shutdown,
// syscall.SIGUSR1: abrupt); it does nothing once the process has exited.
func (c *Child) Signal(sig os.Signal) error {
	if c.Exited() {
		return nil
	}
	return c.cmd.Process.Signal(sig)
}

// Kill sends SIGKILL.
func (c *Child) Kill() error { return c.Signal(syscall.SIGKILL) }

// Wait waits for the process to exit and returns its exit error (nil for
// status 0).
func (c *Child) Wait() error {
	<-c.done
	return c.err
}

// Done is closed when the process has exited.
func (c *Child) Done() <-chan struct{} { return c.done }

// Exited reports whether the process has exited.
func (c *Child) Exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}
