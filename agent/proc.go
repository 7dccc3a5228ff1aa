package agent

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"

	"github.com/stampede-dev/stampede/childproc"
)

// Proc is an agent process on this machine, reached over its stdin and
// stdout: the first transport of the agent protocol.
type Proc struct {
	*Stream
	child *childproc.Child
	stdin io.Closer
}

// SpawnAgent starts exe with args as an agent process (the stampede
// binary's hidden "agent" subcommand, or the lean stampede-worker) with
// childproc.Spawn, which every child of stampede starts with: it runs in
// its own process group, so a terminal's Ctrl-C reaches only the
// coordinator, and dies with it (Pdeathsig). Its stderr lines are copied
// to logs with a prefix naming the agent. env, when not empty, is added
// to this process's environment for it. The process is killed if ctx
// ends before it exits.
func SpawnAgent(ctx context.Context, exe string, args, env []string, name string, logs io.Writer) (*Proc, error) {
	cmd := exec.CommandContext(ctx, exe, args...)
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	c, pipes, err := childproc.Spawn(cmd)
	if err != nil {
		return nil, fmt.Errorf("agent: starting %s: %w", name, err)
	}
	go func() {
		defer pipes.Stderr.Close()
		sc := bufio.NewScanner(pipes.Stderr)
		for sc.Scan() {
			if logs != nil {
				fmt.Fprintf(logs, "[%s] %s\n", name, sc.Text())
			}
		}
	}()
	return &Proc{
		Stream: NewStream(pipes.Stdout, pipes.Stdin, closeBoth{pipes.Stdin, pipes.Stdout}),
		child:  c,
		stdin:  pipes.Stdin,
	}, nil
}

// PID returns the agent's process ID.
func (p *Proc) PID() int { return p.child.PID() }

// Wait returns when the process has exited, with its exit error.
func (p *Proc) Wait() error { return p.child.Wait() }

// Done is closed when the process has exited.
func (p *Proc) Done() <-chan struct{} { return p.child.Done() }

// ExitErr is the exit error once the process has exited, else nil.
func (p *Proc) ExitErr() error {
	if !p.child.Exited() {
		return nil
	}
	return p.child.Wait()
}

// WaitOrKill waits for the process to exit, killing it after grace.
func (p *Proc) WaitOrKill(grace time.Duration) {
	select {
	case <-p.child.Done():
	case <-time.After(grace):
		_ = p.Kill()
		<-p.child.Done()
	}
}

// CloseInput closes the process's stdin only (it stops, as when its
// coordinator is gone) and leaves its messages to be read to their end.
func (p *Proc) CloseInput() error { return p.stdin.Close() }

// Kill ends the process at once.
func (p *Proc) Kill() error { return p.child.Kill() }

// closeBoth closes the worker's stdin (telling it to finish) and our read
// end of its stdout.
type closeBoth struct {
	stdin  io.Closer
	stdout io.Closer
}

func (c closeBoth) Close() error {
	err := c.stdin.Close()
	c.stdout.Close()
	return err
}
