package drill

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/stampede-dev/stampede/internal/clock"
	"github.com/stampede-dev/stampede/internal/redact"
	"github.com/stampede-dev/stampede/loadgen"
	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/results/folder"
	"github.com/stampede-dev/stampede/results/summary"
)

// DeployLogFile is the deploy command's output in the results folder.
const DeployLogFile = "deploy.log"

// maxDeployOutput bounds the output kept of the deploy command; what is
// beyond it is counted, not kept.
const maxDeployOutput = 4 << 20

// killGrace is how long the deploy command's process group has between
// SIGTERM and SIGKILL when the run ends (or Ctrl-C) before it did.
const killGrace = 2 * time.Second

// Deploy is the drill's deploy command as a storm.Sidecar: Command run by
// /bin/sh (read from a pipe, never from the command line: see
// shellCommand) at At from the start barrier, in its own process group, with
// stdin /dev/null and the drill's environment. Its output goes to
// deploy.log (and Log, each line prefixed "deploy: "), with every secret
// of Secrets replaced by <redacted>; its start, end and exit status become
// the "deploy" event; a non-zero exit, a command killed at the run's end
// or one that never started fails the "deploy" check. It is the one
// child process not started by package childproc, which says why: it must
// outlive a stampede that dies.
type Deploy struct {
	// Command is the shell command.
	Command string
	// At is when it starts, from the start barrier.
	At time.Duration
	// Timeout bounds the command; zero means until the run's end.
	Timeout time.Duration
	// Log receives its output lines as they come; nil means none.
	Log io.Writer
	// Secrets are strings scrubbed from its output (redact.Values).
	Secrets []string
	// Interrupted, when closed, says the user stopped the drill (the
	// first Ctrl-C): a command under way is then let finish, up to Timeout
	// from its start or DefaultInterruptWait from the interrupt, since a
	// deploy killed halfway may leave the service down. Nil: a command
	// still running when the run ends is stopped.
	Interrupted <-chan struct{}
	// Abort, when closed while an interrupted command is waited for (the
	// second Ctrl-C), stops it at once.
	Abort <-chan struct{}

	gate fleetGate // the fleet must be connected for the command to start

	mu      sync.Mutex
	out     bytes.Buffer
	dropped int64
	partial []byte // Log's unfinished line
	started bool
	start   time.Duration
	end     time.Duration
	exit    string // "exit status 0", "killed: ..."
	ok      bool
	pid     int
	t0      time.Time // the start barrier: step lines' times are read against it
}

// DefaultInterruptWait is how long an interrupted drill waits for its
// deploy command to finish when Timeout is not set.
const DefaultInterruptWait = 2 * time.Minute

// ReadFleet is storm.FleetReader: the gate reads the fleet's counters.
func (d *Deploy) ReadFleet(live func() loadgen.Stats) { d.gate.live = live }

// Run starts the command at At, once the fleet is connected (the gate;
// otherwise it stops the run and never starts the command), and waits for
// it. When ctx ends first, the command is stopped (its process group sent
// SIGTERM, SIGKILL killGrace later), unless the user interrupted the
// drill: then it is let finish (waitInterrupted).
func (d *Deploy) Run(ctx context.Context, start time.Time) {
	if clock.Sleep(ctx, time.Until(start.Add(d.At))) != nil {
		d.finish(false, time.Since(start), "not started: the run ended before the deploy's start time")
		return
	}
	if err := d.gate.wait(ctx, start, d.At+reportLag); err != nil {
		if ctx.Err() != nil {
			d.finish(false, time.Since(start), "not started: the run ended before the fleet was connected")
			return
		}
		d.mu.Lock() // not logged: the drill says it in its last line
		d.ok, d.end, d.exit = false, time.Since(start), "not started: "+err.Error()
		d.mu.Unlock()
		return
	}
	runCtx := ctx // the run's: when it ends first, the timeout did not
	if d.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d.Timeout)
		defer cancel()
	}
	cmd, script, err := shellCommand(d.Command)
	if err != nil {
		d.finish(false, time.Since(start), fmt.Sprintf("not started: %v", err))
		return
	}
	cmd.Stdout, cmd.Stderr = d, d
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	d.mu.Lock()
	d.t0 = start
	d.started, d.start = true, time.Since(start)
	d.mu.Unlock()
	d.logf("started `%s` at %.3fs", d.shown(), d.start.Seconds())
	began := time.Now()
	err = cmd.Start()
	script(err == nil)
	if err != nil {
		d.finish(false, time.Since(start), fmt.Sprintf("not started: %v", err))
		return
	}
	d.mu.Lock()
	d.pid = cmd.Process.Pid
	d.mu.Unlock()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	killed := ""
	select {
	case err = <-done:
	case <-ctx.Done():
		switch {
		case d.interrupted():
			killed, err = d.waitInterrupted(cmd.Process.Pid, done, began)
		case runCtx.Err() == nil: // the restart timeout
			killed = fmt.Sprintf("the restart timeout %s passed", d.Timeout)
			err = stopGroup(cmd.Process.Pid, done)
		default:
			killed = "the run ended first"
			err = stopGroup(cmd.Process.Pid, done)
		}
	}
	end := time.Since(start)
	d.flushLog()
	switch {
	case killed != "":
		d.finish(false, end, "killed: "+killed)
	case err != nil:
		d.finish(false, end, exitText(err))
	default:
		d.finish(true, end, "exit status 0")
	}
}

// interrupted reports whether the user interrupted the drill.
func (d *Deploy) interrupted() bool {
	if d.Interrupted == nil {
		return false
	}
	select {
	case <-d.Interrupted:
		return true
	default:
		return false
	}
}

// waitInterrupted lets the command of process group pid, begun at began,
// finish after the user interrupted the drill: up to Timeout from its
// start, or DefaultInterruptWait from now, saying so; Abort (a second
// Ctrl-C) or that bound stops it, and says plainly what that may leave
// behind. It returns, when it was stopped, why, and the command's exit
// error.
func (d *Deploy) waitInterrupted(pid int, done <-chan error, began time.Time) (why string, err error) {
	bound := DefaultInterruptWait
	if d.Timeout > 0 {
		bound = max(0, d.Timeout-time.Since(began))
	}
	d.logf("`%s` is still running: the load has stopped; waiting up to %s for it to finish, so the service is not left halfway (Ctrl-C again stops it)",
		d.shown(), bound.Round(time.Second))
	timer := time.NewTimer(bound)
	defer timer.Stop()
	select {
	case err := <-done:
		return "", err
	case <-d.Abort:
		why = "interrupted a second time"
	case <-timer.C:
		why = fmt.Sprintf("still running %s after the interrupt", bound.Round(time.Second))
	}
	err = stopGroup(pid, done)
	d.logf("`%s` was stopped while it ran (%s): the service may be down; check it now", d.shown(), why)
	return why + ": the service may be down", err
}

// stopGroup stops process group pid: SIGTERM, SIGKILL killGrace later;
// it returns the command's exit error from done.
func stopGroup(pid int, done <-chan error) error {
	syscall.Kill(-pid, syscall.SIGTERM)
	select {
	case err := <-done:
		return err
	case <-time.After(killGrace):
		syscall.Kill(-pid, syscall.SIGKILL)
		return <-done
	}
}

func exitText(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ProcessState.String() // "exit status 3", "signal: killed"
	}
	return err.Error()
}

func (d *Deploy) finish(ok bool, end time.Duration, exit string) {
	d.mu.Lock()
	d.ok, d.end, d.exit = ok, end, exit
	d.mu.Unlock()
	d.logf("`%s` %s at %.3fs", d.shown(), exit, end.Seconds())
}

// Write takes the command's output (stdout and stderr both).
func (d *Deploy) Write(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	keep := min(len(p), max(0, maxDeployOutput-d.out.Len()))
	d.out.Write(p[:keep])
	d.dropped += int64(len(p) - keep)
	if d.Log != nil {
		d.partial = append(d.partial, p...)
		if i := bytes.LastIndexByte(d.partial, '\n'); i >= 0 {
			d.writeLog(d.partial[:i+1])
			d.partial = append(d.partial[:0], d.partial[i+1:]...)
		}
	}
	return len(p), nil
}

// writeLog writes whole lines to Log, prefixed; d.mu is held.
func (d *Deploy) writeLog(p []byte) {
	var b strings.Builder
	for _, line := range strings.SplitAfter(redact.Scrub(string(p), d.Secrets), "\n") {
		if line != "" {
			b.WriteString("deploy: " + line)
		}
	}
	io.WriteString(d.Log, b.String())
}

func (d *Deploy) flushLog() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.Log != nil && len(d.partial) > 0 {
		d.writeLog(append(d.partial, '\n'))
		d.partial = nil
	}
}

func (d *Deploy) logf(format string, a ...any) {
	if d.Log == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	fmt.Fprintf(d.Log, "drill: deploy "+format+"\n", a...)
}

// Events returns the "deploy" event: from the command's start to its end,
// ready at its end (a rolling deploy's command ends once the last backend
// is healthy again, so the fleet's recovery from the whole deploy is
// measured from there), with the backends' steps; then one "backend"
// event per backend the command restarted (backendEvents). None when it
// never started.
func (d *Deploy) Events() []results.Event {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.started {
		return nil
	}
	steps := stepLinesOf(d.out.String(), d.t0)
	ev := results.Event{Kind: "deploy", Mode: "command", Spec: d.shown(), Start: d.start, End: d.end, Ready: d.end, PID: d.pid, Exit: d.exit}
	for _, st := range steps {
		ev.Steps = append(ev.Steps, st.Step)
	}
	return append([]results.Event{ev}, backendEvents(steps)...)
}

// Checks returns the "deploy" check: the command exited 0.
func (d *Deploy) Checks([]results.Event) []summary.Check {
	d.mu.Lock()
	defer d.mu.Unlock()
	detail := fmt.Sprintf("`%s`: %s", d.shown(), d.exit)
	if d.started {
		detail += fmt.Sprintf(", from %.3fs to %.3fs", d.start.Seconds(), d.end.Seconds())
	}
	return []summary.Check{{Name: "deploy", Pass: d.ok, Detail: detail}}
}

// shown is the command as written and printed: split into words with
// the secret ones hidden (redact.Command; Mark whole when it cannot be
// split), then every one of Secrets scrubbed. Never the raw text.
func (d *Deploy) shown() string { return redact.Scrub(redact.Command(d.Command, nil), d.Secrets) }

// Output returns the command's output as kept (scrubbed).
func (d *Deploy) Output() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return redact.Scrub(d.out.String(), d.Secrets)
}

// WriteFiles writes deploy.log, 0600: the command's output, scrubbed, and
// a last line with its exit status.
func (d *Deploy) WriteFiles(dir string) error {
	out := d.Output()
	d.mu.Lock()
	if d.dropped > 0 {
		out += fmt.Sprintf("\n[%d more bytes of output not kept]\n", d.dropped)
	}
	if out != "" && !strings.HasSuffix(out, "\n") {
		out += "\n"
	}
	out += fmt.Sprintf("# stampede drill: `%s`: %s\n", d.shown(), d.exit)
	d.mu.Unlock()
	path := filepath.Join(dir, DeployLogFile)
	return folder.WriteBytes(path, []byte(out))
}

// shellScriptFD is the descriptor the shell reads the command from.
const shellScriptFD = 3

// shellCommand returns `/bin/sh -c '. /dev/fd/3'` with command on a pipe
// at descriptor 3: the shell runs it as it would run `sh -c command`, but
// the command, which may hold a token, never appears in the shell's
// /proc/PID/cmdline or environment (docs/secrets.md). Stdin stays
// /dev/null, so a command that reads stdin (ssh) cannot eat the script.
// The caller calls script after Start, with whether it succeeded: it
// closes the child's end and feeds the pipe.
func shellCommand(command string) (cmd *exec.Cmd, script func(started bool), err error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	cmd = exec.Command("/bin/sh", "-c", fmt.Sprintf(". /dev/fd/%d", shellScriptFD))
	cmd.ExtraFiles = []*os.File{r} // descriptor 3
	return cmd, func(started bool) {
		r.Close()
		if !started {
			w.Close()
			return
		}
		go func() {
			_, _ = io.WriteString(w, command+"\n")
			w.Close()
		}()
	}, nil
}
