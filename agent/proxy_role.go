package agent

import (
	"context"
	"io"
	"time"

	"github.com/stampede-dev/stampede/childproc"
	"github.com/stampede-dev/stampede/proxy"
)

// proxy runs a fault proxy group on a free port (or the plan's) and
// applies the supervisor's fault sets to every process.
func (a *agent) proxy(ctx context.Context) error {
	pp := a.plan.Proxy
	gc := proxy.GroupConfig{
		Spawn:     SpawnRelay(a.cfg.Exe, a.cfg.Args, a.cfg.Stderr),
		Procs:     max(1, pp.Procs),
		Proxy:     pp.Config,
		SourceIPs: pp.SourceIPs,
		OnExit:    func(pid int, err error) { a.crash(RoleProxy, pid, err) },
	}
	var g *proxy.Group
	start := func(addr string) (err error) {
		gc.Proxy.Listen = addr
		g, err = proxy.StartGroup(ctx, gc)
		return err
	}
	release, err := a.startOnPort(pp.Config.Listen, start)
	defer release()
	if err != nil {
		return fail(a.t, a.id, err)
	}
	defer g.Close()
	pids := func() []int {
		var out []int
		for _, p := range g.PIDs() {
			out = append(out, int(p))
		}
		return out
	}
	if err := a.ready(Ready{Addr: g.Addr(), PIDs: pids()}); err != nil {
		return err
	}
	return a.control(ctx, func(ctx context.Context, c *Control) Reply {
		if c.Op != OpProxyFault || c.Fault == nil {
			return Reply{Error: "a proxy cannot " + string(c.Op)}
		}
		return replyErr(g.Apply(ctx, *c.Fault))
	}, pids)
}

// relay runs one process of a proxy group; its ready line goes to
// cfg.Stdout, and it is controlled over its HTTP control API.
func (a *agent) relay(ctx context.Context) error {
	return proxy.Run(ctx, proxy.RunConfig{Proxy: *a.plan.Relay, Stdout: a.cfg.Stdout})
}

// SpawnRelay returns the proxy.Spawner that starts a proxy group's
// process as `exe args...` (`stampede agent`) with a relay plan on its
// stdin; its stderr goes to stderr.
func SpawnRelay(exe string, args []string, stderr io.Writer) proxy.Spawner {
	return func(ctx context.Context, cfg proxy.Config, timeout time.Duration) (*childproc.Child, childproc.ReadyLine, error) {
		return spawnMember(ctx, "proxy group", exe, args, nil, stderr, Plan{Role: RoleRelay, Relay: &cfg}, timeout)
	}
}
