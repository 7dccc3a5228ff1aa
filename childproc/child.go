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
//
// Spawn is the one place a child's process attributes (Pdeathsig, its own
// process group) and pipes are set up; Start adds the plan and the ready
// line on top of it, and an agent that speaks a message stream on its
// stdin and stdout instead (agent.SpawnAgent) uses Spawn alone. The child
// side is ReadPlan and WriteReady.
//
// One process is started elsewhere, on purpose: a drill's deploy command
// (drill.Deploy), the user's shell script rather than a stampede process.
// It must not die with its parent: Pdeathsig would kill the shell halfway
// through a deploy when stampede is killed, leaving the user's service
// stopped and not started again. It takes no plan and prints no ready line,
// reads its script from descriptor 3 with stdin /dev/null, and is stopped
// as a whole process group only after the drill has let it finish or the
// user insisted (docs/drill.md "Ctrl-C during the deploy").
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

// Child is a process started by Spawn or Start.
type Child struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// readyLine is the part of every ready line Start checks.
type readyLine struct {
	Ready bool `json:"ready"`
}

// Pipes are the parent's ends of a spawned child's standard streams.
type Pipes struct {
	// Stdin writes to the child's stdin; closing it tells the child its
	// parent has nothing more to say.
	Stdin io.WriteCloser
	// Stdout reads the child's stdout. It stays open after the child
	// exits until read to its end, so nothing the child wrote last is
	// lost; the caller reads it to EOF and closes it.
	Stdout io.ReadCloser
	// Stderr reads the child's stderr, the same way; nil when cmd.Stderr
	// was set.
	Stderr io.ReadCloser
}

// Spawn starts cmd as a child with pipes on its stdin and stdout (and its
// stderr, when cmd.Stderr is nil); cmd must not have Stdin or Stdout set.
// The child dies with its parent (Pdeathsig) and runs in its own process
// group, so a terminal's Ctrl-C reaches only the process that started it,
// which then stops its children the way it chooses.
//
// The read ends are os.Pipe files, not exec's StdoutPipe: Wait closes those
// as soon as the process exits, and a child that writes its last words and
// exits at once would lose them unread ("read |0: file already closed").
func Spawn(cmd *exec.Cmd) (*Child, Pipes, error) {
	var p Pipes
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, p, err
	}
	var parentEnds, childEnds []*os.File
	closeAll := func(fs []*os.File) {
		for _, f := range fs {
			f.Close()
		}
	}
	pipe := func() (*os.File, *os.File, error) {
		r, w, err := os.Pipe()
		if err == nil {
			parentEnds, childEnds = append(parentEnds, r), append(childEnds, w)
		}
		return r, w, err
	}
	stdout, stdoutW, err := pipe()
	if err != nil {
		stdin.Close()
		return nil, p, err
	}
	cmd.Stdout = stdoutW
	p.Stdin, p.Stdout = stdin, stdout
	if cmd.Stderr == nil {
		stderr, stderrW, err := pipe()
		if err != nil {
			stdin.Close()
			closeAll(parentEnds)
			closeAll(childEnds)
			return nil, Pipes{}, err
		}
		cmd.Stderr, p.Stderr = stderrW, stderr
	}
	err = cmd.Start()
	closeAll(childEnds) // the child holds its own copies
	if err != nil {
		closeAll(parentEnds)
		return nil, Pipes{}, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	c := &Child{cmd: cmd, done: make(chan struct{})}
	go func() { c.err = cmd.Wait(); close(c.done) }()
	return c, p, nil
}

// Start writes plan (JSON-encoded, one line) to the stdin of cmd, starts it
// (Spawn) and waits up to timeout (or until ctx is done) for the first line
// on its stdout that is a JSON object with "ready": true, which it decodes
// into ready (a *ReadyLine, or a type of the caller's with "ready"). Lines
// before it are skipped, and stdout after it is read and discarded. cmd
// must not have Stdin or Stdout set; its stderr goes where cmd.Stderr says
// (nowhere when nil). On any error the child is killed and waited for;
// name prefixes the error ("target", "proxy group").
func Start(ctx context.Context, name string, cmd *exec.Cmd, plan, ready any, timeout time.Duration) (*Child, error) {
	b, err := json.Marshal(plan)
	if err != nil {
		return nil, fmt.Errorf("%s: encoding the plan: %w", name, err)
	}
	if cmd.Stderr == nil {
		cmd.Stderr = io.Discard
	}
	c, p, err := Spawn(cmd)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	// The plan is small; a child that exits before reading it makes the
	// write fail, which the wait below reports as an early exit.
	go func() {
		p.Stdin.Write(append(b, '\n'))
		p.Stdin.Close()
	}()
	lines := make(chan []byte, 1)
	noReady := make(chan struct{}) // stdout ended without a ready line
	go func() {
		defer p.Stdout.Close()
		sc := bufio.NewScanner(p.Stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			var l readyLine
			if json.Unmarshal(sc.Bytes(), &l) == nil && l.Ready {
				lines <- append([]byte(nil), sc.Bytes()...)
				io.Copy(io.Discard, p.Stdout)
				return
			}
		}
		close(noReady)
		io.Copy(io.Discard, p.Stdout)
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
	case <-noReady:
		select {
		case <-c.done:
			return nil, fmt.Errorf("%s: process %d exited before ready: %v", name, c.PID(), c.err)
		case <-timer.C:
			err = fmt.Errorf("%s: process %d closed its stdout and is not ready within %v", name, c.PID(), timeout)
		case <-ctx.Done():
			err = ctx.Err()
		}
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
// (the parent's plan) into plan. Given a *bufio.Reader it reads no further
// than that line, so the caller can go on reading r (an agent's message
// stream after its plan).
func ReadPlan(r io.Reader, plan any) error {
	br, ok := r.(*bufio.Reader)
	if !ok {
		br = bufio.NewReaderSize(r, 64<<10)
	}
	line, err := br.ReadBytes('\n')
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
