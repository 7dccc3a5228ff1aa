package cluster

import (
	"context"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"

	"github.com/stampede-dev/stampede/agent"
)

// Local starts agents as child processes of this machine.
type Local struct {
	// Exe is the stampede binary (its hidden "agent" subcommand runs every
	// role); empty means this executable.
	Exe string
	// Lean is the lean agent (cmd/stampede-worker, about 7 MB of RSS per
	// process instead of 16) used for loadgen shares; empty
	// means stampede-worker beside Exe when it exists, else Exe.
	Lean string
	// Logs receives the agents' stderr, each line prefixed with its name.
	Logs io.Writer
	// Nice, when positive, is the niceness each agent process is given
	// (and the processes it starts inherit): a coordinator among a hundred
	// busy agents on one machine otherwise gets a hundredth of its CPU and
	// falls minutes behind their results. A niceness the process already
	// has above it is kept.
	Nice int
	// GoMaxProcs, when positive for a role, is the GOMAXPROCS each agent
	// process of that role starts with (and the processes it starts
	// inherit), unless this process's environment sets GOMAXPROCS: a role
	// run as more processes than the machine has cores gains nothing from
	// a Go runtime per process that spreads over every core, only threads
	// woken to contend for them (docs/performance.md "One core a process").
	GoMaxProcs map[agent.Role]int
}

// Launch starts an agent process for plan and places it with c. The
// process is killed when ctx ends; the caller waits for it (Proc.Wait).
func (l *Local) Launch(ctx context.Context, c *Coordinator, name string, plan agent.Plan) (*Agent, error) {
	exe, args, err := l.Command(plan.Role)
	if err != nil {
		return nil, err
	}
	var env []string
	if n := l.GoMaxProcs[plan.Role]; n > 0 && os.Getenv("GOMAXPROCS") == "" {
		env = []string{fmt.Sprintf("GOMAXPROCS=%d", n)}
	}
	p, err := agent.SpawnAgent(ctx, exe, args, env, name, l.Logs)
	if err != nil {
		return nil, err
	}
	if l.Nice > 0 {
		if err := renice(p.PID(), l.Nice); err != nil {
			p.Kill()
			return nil, fmt.Errorf("cluster: %s: %w", name, err)
		}
	}
	a := &Agent{Name: name, Transport: p, Plan: plan, Proc: p}
	if err := c.Place(a); err != nil {
		p.Kill()
		return nil, err
	}
	return a, nil
}

// Command returns how to start an agent of role.
func (l *Local) Command(role agent.Role) (exe string, args []string, err error) {
	return agent.Command(l.Exe, l.Lean, role)
}

// InProcess runs an agent for plan in this process, over an in-memory
// transport with the same messages as a child's, and places it with c. It
// serves until ctx ends or the coordinator stops it.
func InProcess(ctx context.Context, c *Coordinator, name string, plan agent.Plan) (*Agent, error) {
	cr, aw := io.Pipe()
	ar, cw := io.Pipe()
	coordEnd := agent.NewStream(cr, cw, closeAll{cw, cr})
	agentEnd := agent.NewStream(ar, aw, closeAll{aw, ar})
	go func() {
		_ = agent.Serve(ctx, agentEnd, agent.AgentConfig{})
		agentEnd.Close() // the coordinator then reads EOF after the final message
	}()
	a := &Agent{Name: name, Transport: coordEnd, Plan: plan}
	if err := c.Place(a); err != nil {
		coordEnd.Close()
		return nil, err
	}
	return a, nil
}

// closeAll closes both ends of an in-memory transport.
type closeAll [2]io.Closer

func (c closeAll) Close() error {
	err := c[0].Close()
	c[1].Close()
	return err
}

// renice raises pid's niceness to nice unless it is already higher.
func renice(pid, nice int) error {
	// getpriority(2) returns 20-nice, not the niceness.
	prio, err := unix.Getpriority(unix.PRIO_PROCESS, pid)
	if err != nil {
		return fmt.Errorf("getpriority: %w", err)
	}
	if 20-prio >= nice {
		return nil
	}
	if err := unix.Setpriority(unix.PRIO_PROCESS, pid, nice); err != nil {
		return fmt.Errorf("setpriority %d: %w", nice, err)
	}
	return nil
}
