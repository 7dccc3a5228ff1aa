package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

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
	// Nice, when positive, is the niceness each agent process is given,
	// every thread of it (and the processes it starts inherit it): a
	// coordinator among a hundred busy agents on one machine otherwise
	// gets a hundredth of its CPU and falls minutes behind their results.
	// A niceness the process already has above it is kept.
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

// renice raises the niceness of every thread of process pid to nice,
// unless a thread's is already higher. Linux gives each thread its own
// niceness (setpriority's PRIO_PROCESS names one thread), and a Go
// program has started several before anyone can renice it: so each is
// set, over again until no new thread turns up, and the threads it starts
// later inherit it.
func renice(pid, nice int) error {
	done := map[int]bool{}
	for range 10 {
		tids, err := threads(pid)
		if err != nil {
			return err
		}
		fresh := 0
		for _, tid := range tids {
			if done[tid] {
				continue
			}
			fresh++
			if err := reniceThread(tid, nice); err != nil && !errors.Is(err, unix.ESRCH) {
				return err
			}
			done[tid] = true
		}
		if fresh == 0 {
			return nil
		}
	}
	return nil
}

// threads lists the thread IDs of process pid.
func threads(pid int) ([]int, error) {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return nil, fmt.Errorf("threads of %d: %w", pid, err)
	}
	tids := make([]int, 0, len(ents))
	for _, e := range ents {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			tids = append(tids, tid)
		}
	}
	return tids, nil
}

// reniceThread raises thread tid's niceness to nice unless it is higher.
func reniceThread(tid, nice int) error {
	// getpriority(2) returns 20-nice, not the niceness.
	prio, err := unix.Getpriority(unix.PRIO_PROCESS, tid)
	if err != nil {
		return fmt.Errorf("getpriority: %w", err)
	}
	if 20-prio >= nice {
		return nil
	}
	if err := unix.Setpriority(unix.PRIO_PROCESS, tid, nice); err != nil {
		return fmt.Errorf("setpriority %d: %w", nice, err)
	}
	return nil
}
