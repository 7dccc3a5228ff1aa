// Package childproc starts a child process with a typed plan and waits for
// its ready line: the one way every stampede process that starts another
// (a target group its servers, a proxy group its relays, a coordinator its
// agents) does it.
//
//	parent                                   child (`stampede agent`)
//	  │ ── stdin: the plan, one JSON line ──>  │ decode, validate, start
//	  │ <─ stdout: the ready line (JSON) ────  │ {"ready":true,...}
//	  │     (stdout after it is discarded)     │
//
// Nothing of the plan travels on the command line, so a config field can
// not be dropped on the way (no flag to forget) and nothing in it shows in
// ps. The wire format is in docs/agent.md.
package childproc

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

// Child is a process started by Start.
type Child struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// readyLine is the part of every ready line Start checks.
type readyLine struct {
	Ready bool `json:"ready"`
}

// Start writes plan (JSON-encoded, one line) to the stdin of cmd, starts it
// and waits up to timeout (or until ctx is done) for the first line on its
// stdout that is a JSON object with "ready": true, which it decodes into
// ready. cmd must not have Stdin or Stdout set. The child dies with its
// parent (Pdeathsig) and runs in its own process group, so a terminal's
// Ctrl-C reaches only the process that started it, which then stops its
// children the way it chooses. On any error the child is killed and waited
// for; name prefixes the error ("target", "proxy group").
func Start(ctx context.Context, name string, cmd *exec.Cmd, plan, ready any, timeout time.Duration) (*Child, error) {
	b, err := json.Marshal(plan)
	if err != nil {
		return nil, fmt.Errorf("%s: encoding the plan: %w", name, err)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: start %s: %w", name, cmd.Path, err)
	}
	c := &Child{cmd: cmd, done: make(chan struct{})}
	// The plan is small; a child that exits before reading it makes the
	// write fail, which the wait below reports as an early exit.
	go func() {
		in.Write(append(b, '\n'))
		in.Close()
	}()
	lines := make(chan []byte, 1)
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			var l readyLine
			if json.Unmarshal(sc.Bytes(), &l) == nil && l.Ready {
				lines <- append([]byte(nil), sc.Bytes()...)
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
		if err := json.Unmarshal(l, ready); err != nil {
			c.Kill()
			<-c.done
			return nil, fmt.Errorf("%s: process %d: ready line: %w", name, c.PID(), err)
		}
		return c, nil
	case <-c.done:
		return nil, fmt.Errorf("%s: process %d exited before ready: %v", name, c.PID(), c.err)
	case <-timer.C:
		err = fmt.Errorf("%s: process %d not ready within %v", name, c.PID(), timeout)
	case <-ctx.Done():
		err = ctx.Err()
	}
	c.Kill()
	<-c.done
	return nil, err
}

// ReadPlan is the child's side of Start: it decodes the first line of r
// (the parent's plan) into plan.
func ReadPlan(r io.Reader, plan any) error {
	line, err := bufio.NewReaderSize(r, 64<<10).ReadBytes('\n')
	if err != nil && (err != io.EOF || len(line) == 0) {
		return fmt.Errorf("reading the plan from stdin: %w", err)
	}
	if err := json.Unmarshal(line, plan); err != nil {
		return fmt.Errorf("decoding the plan: %w", err)
	}
	return nil
}

// PID returns the process id.
func (c *Child) PID() int { return c.cmd.Process.Pid }

// Signal sends sig to the process (for a target: syscall.SIGTERM shuts down
// gracefully, syscall.SIGUSR1 abruptly); it does nothing once the process
// has exited.
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
