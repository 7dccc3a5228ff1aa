package agent

import (
	"context"
	"io"
	"os"
	"os/exec"
	"time"

	"github.com/stampede-dev/stampede/childproc"
	"github.com/stampede-dev/stampede/target"
	"github.com/stampede-dev/stampede/target/group"
)

// target runs a target group: its processes on one port (a free one when
// the plan names none), the chaos supervisor's requests applied to them,
// and a crash event for every process that exits when nothing stopped it.
func (a *agent) target(ctx context.Context) error {
	tp := a.plan.Target
	gc := group.Config{
		Spawn:  a.serverSpawner(tp.Config),
		Procs:  max(1, tp.Procs),
		Config: tp.Config,
		// The run's first connects are not a restart: an admission ramp
		// applies to the processes the chaos schedule restarts.
		FirstAtFullRate: true,
		OnExit:          func(p *group.Proc, err error) { a.crash(RoleTarget, p.PID, err) },
	}
	var g *group.Group
	start := func(addr string) (err error) {
		gc.Config.Addr = addr
		g, err = group.Start(ctx, gc)
		return err
	}
	release, err := a.startOnPort(tp.Config.Addr, start)
	defer release()
	if err != nil {
		return fail(a.t, a.id, err)
	}
	defer g.Close()
	gt := NewChaosGroup(g, tp.Config.Server.WithDefaults().Backlog, tp.Config.AcceptRate)
	pids := func() []int {
		var out []int
		for _, p := range g.Procs() {
			if !p.Exited() {
				out = append(out, p.PID)
			}
		}
		return out
	}
	if err := a.ready(Ready{Addr: g.Addr(), URL: g.URL(), PIDs: pids()}); err != nil {
		return err
	}
	a.countTLS(ctx, gt)
	return a.control(ctx, func(ctx context.Context, c *Control) Reply {
		return applyTarget(ctx, gt, c)
	}, pids)
}

// countTLS reads a wss:// target's handshake counts every
// ProgressInterval until ctx ends, so that a process restarted meanwhile
// still counts (ChaosGroup.Handshakes); nothing for ws://.
func (a *agent) countTLS(ctx context.Context, gt *ChaosGroup) {
	if !a.plan.Target.Config.Server.WithDefaults().TLS {
		return
	}
	go func() {
		tick := time.NewTicker(ProgressInterval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				gt.Handshakes(ctx)
			}
		}
	}()
}

// serverSpawner starts the group's processes. A server without a store
// (the echo target) runs in the lean worker binary when it is installed
// beside the agent's: it links no store driver, CLI or report, so each
// target process's baseline is about 9 MiB of RSS instead of 22 (the
// binary's pages count in every process; docs/sizing.md). A server with a
// store needs the stampede binary, which links every store driver.
func (a *agent) serverSpawner(cfg target.Config) group.Spawner {
	exe, args := serverCommand(a.cfg.Exe, a.cfg.Args, cfg)
	return SpawnServer(exe, args, a.cfg.Stderr)
}

// serverCommand is the program and arguments serverSpawner starts.
func serverCommand(exe string, args []string, cfg target.Config) (string, []string) {
	if cfg.Store == "" {
		if lean, ok := leanBeside(exe); ok {
			return lean, []string{}
		}
	}
	return exe, args
}

// applyTarget carries out one control request on the group.
func applyTarget(ctx context.Context, gt *ChaosGroup, c *Control) Reply {
	switch c.Op {
	case OpRestart:
		if c.Restart == nil {
			return Reply{Error: "restart without an event"}
		}
		res, err := gt.RestartSteps(ctx, *c.Restart)
		r := replyErr(err)
		r.Restarted = &res
		return r
	case OpStall:
		return replyErr(gt.Stall(ctx, c.For))
	case OpBacklog:
		return replyErr(gt.SetBacklog(ctx, c.Backlog))
	case OpAcceptRate:
		return replyErr(gt.SetAcceptRate(ctx, c.Rate))
	case OpReject:
		return replyErr(gt.Reject(ctx, c.Status, c.RetryAfter, c.For))
	case OpEarlyRetries:
		n, err := gt.EarlyRetries(ctx)
		r := replyErr(err)
		r.EarlyRetries = n
		return r
	case OpTLS:
		return Reply{TLS: gt.Handshakes(ctx)}
	case OpStats:
		st, err := gt.Group.Stats(ctx)
		r := replyErr(err)
		r.Stats = &st
		return r
	}
	return Reply{Error: "a target cannot " + string(c.Op)}
}

// crash reports a process of the agent's group that exited unscheduled.
func (a *agent) crash(role Role, pid int, err error) {
	exit := "exit status 0"
	if err != nil {
		exit = err.Error()
	}
	_ = a.send(Message{Kind: KindEvent, Event: &Event{Kind: EventCrash, Role: role, PID: pid, Exit: exit, At: time.Now()}})
}

// server runs one process of a target group; its ready line goes to
// cfg.Stdout, and it is controlled over its HTTP control API and signals.
func (a *agent) server(ctx context.Context) error {
	return group.Run(ctx, group.RunConfig{Server: *a.plan.Server, Stdout: a.cfg.Stdout, Exit: os.Exit, JoinGroup: true})
}

// SpawnServer returns the group.Spawner that starts a target group's
// process as `exe args...` (`stampede agent`) with a server plan on its
// stdin; its stderr goes to stderr.
func SpawnServer(exe string, args []string, stderr io.Writer) group.Spawner {
	return func(ctx context.Context, cfg target.Config, env []string, timeout time.Duration) (*childproc.Child, childproc.ReadyLine, error) {
		return spawnMember(ctx, "target", exe, args, env, stderr, Plan{Role: RoleServer, Server: &cfg}, timeout)
	}
}

// spawnMember starts one process of a group (a server or a relay) with
// plan on its stdin and waits for its ready line.
func spawnMember(ctx context.Context, name, exe string, args, env []string, stderr io.Writer, plan Plan, timeout time.Duration) (*childproc.Child, childproc.ReadyLine, error) {
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = stderr
	var l childproc.ReadyLine
	c, err := childproc.Start(ctx, name, cmd, Message{V: Version, Kind: KindPlan, Plan: &plan}, &l, timeout)
	return c, l, err
}
