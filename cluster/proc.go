package cluster

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
)

// Proc is a worker process on this machine, reached over its stdin and
// stdout: the first transport of the worker protocol.
type Proc struct {
	*Stream
	cmd  *exec.Cmd
	done chan error
}

// SpawnLocal starts exe with args as a worker process (normally the
// stampede binary itself with the hidden "worker" subcommand). Its stderr
// lines are copied to logs with a prefix naming the worker. The process is
// killed if ctx ends before it exits.
func SpawnLocal(ctx context.Context, exe string, args []string, name string, logs io.Writer) (*Proc, error) {
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
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
		return nil, fmt.Errorf("cluster: starting worker %s: %w", name, err)
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
	p := &Proc{Stream: NewStream(stdout, stdin, closeBoth{stdin, stdout}), cmd: cmd, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait() }()
	return p, nil
}

// PID returns the worker's process ID.
func (p *Proc) PID() int { return p.cmd.Process.Pid }

// Wait returns when the process has exited, with its exit error.
func (p *Proc) Wait() error {
	err := <-p.done
	p.done <- err
	return err
}

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
