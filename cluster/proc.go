package cluster

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Proc is an agent process on this machine, reached over its stdin and
// stdout: the first transport of the agent protocol.
type Proc struct {
	*Stream
	cmd   *exec.Cmd
	stdin io.Closer
	done  chan struct{}
	err   error
}

// SpawnAgent starts exe with args as an agent process (the stampede
// binary's hidden "agent" subcommand, or the lean stampede-worker). Its
// stderr lines are copied to logs with a prefix naming the agent. It runs
// in its own process group, so a terminal's Ctrl-C reaches only the
// coordinator, and dies with it (Pdeathsig). The process is killed if ctx
// ends before it exits.
func SpawnAgent(ctx context.Context, exe string, args []string, name string, logs io.Writer) (*Proc, error) {
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	// Not StdoutPipe/StderrPipe: Wait closes those as soon as the process
	// exits, and a worker that writes its final report and exits at once
	// then loses it unread ("read |0: file already closed"). The read ends
	// of these pipes stay open until drained to EOF.
	stdout, stdoutW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	stderr, stderrW, err := os.Pipe()
	if err != nil {
		stdout.Close()
		stdoutW.Close()
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = stdoutW, stderrW
	err = cmd.Start()
	stdoutW.Close()
	stderrW.Close()
	if err != nil {
		stdout.Close()
		stderr.Close()
		return nil, fmt.Errorf("cluster: starting %s: %w", name, err)
	}
	go func() {
		defer stderr.Close()
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if logs != nil {
				fmt.Fprintf(logs, "[%s] %s\n", name, sc.Text())
			}
		}
	}()
	p := &Proc{Stream: NewStream(stdout, stdin, closeBoth{stdin, stdout}), cmd: cmd, stdin: stdin, done: make(chan struct{})}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	return p, nil
}

// PID returns the agent's process ID.
func (p *Proc) PID() int { return p.cmd.Process.Pid }

// Wait returns when the process has exited, with its exit error.
func (p *Proc) Wait() error {
	<-p.done
	return p.err
}

// exitErr is the exit error once the process has exited, else nil.
func (p *Proc) exitErr() error {
	select {
	case <-p.done:
		return p.err
	default:
		return nil
	}
}

// WaitOrKill waits for the process to exit, killing it after grace.
func (p *Proc) WaitOrKill(grace time.Duration) {
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = p.Kill()
		<-p.done
	}
}

// CloseInput closes the process's stdin only (it stops, as when its
// coordinator is gone) and leaves its messages to be read to their end.
func (p *Proc) CloseInput() error { return p.stdin.Close() }

// Kill ends the process at once.
func (p *Proc) Kill() error { return p.cmd.Process.Kill() }

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
