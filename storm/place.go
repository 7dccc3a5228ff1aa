package storm

import (
	"context"
	"fmt"
	"os"

	"github.com/stampede-dev/stampede/cluster"
	"github.com/stampede-dev/stampede/loadgen"
	"github.com/stampede-dev/stampede/proxy"
	"github.com/stampede-dev/stampede/results"
)

// placeLoadgens places the fleet's shares, one agent each, and waits until
// all are ready. A fleet against someone else's server in one process runs
// in this process, over an in-memory transport with the same messages.
func placeLoadgens(ctx, agentCtx context.Context, co *cluster.Coordinator, local *cluster.Local, runID string, fleet loadgen.Config, procs int, external bool) ([]*cluster.Agent, error) {
	var agents []*cluster.Agent
	for i, share := range cluster.Split(fleet, procs) {
		name := fmt.Sprintf("loadgen %d", i)
		plan := cluster.Plan{RunID: runID, Role: cluster.RoleLoadgen, Loadgen: &share}
		var a *cluster.Agent
		var err error
		if external && procs == 1 {
			a, err = cluster.InProcess(agentCtx, co, name, plan)
		} else {
			a, err = local.Launch(agentCtx, co, name, plan)
		}
		if err != nil {
			return nil, err
		}
		agents = append(agents, a)
	}
	if err := co.WaitReady(ctx, agents...); err != nil {
		return nil, err
	}
	return agents, nil
}

// startProxy places the fault proxy in front of the target at upstream: a
// group of as many processes as the fleet needs (each relayed connection
// takes two open files) on a free port outside the ephemeral range. Its
// upstream sockets use the fleet's source addresses (towards another port
// than the fleet's, so they share no ephemeral ports), and its draws the
// fleet's seed.
func startProxy(ctx, agentCtx context.Context, co *cluster.Coordinator, local *cluster.Local, runID, upstream string, fleet loadgen.Config, logf func(string, ...any)) (*cluster.RemoteProxy, error) {
	procs := proxy.ProcsFor(fleet.Clients)
	a, err := local.Launch(agentCtx, co, roleProxy, cluster.Plan{RunID: runID, Role: cluster.RoleProxy, Proxy: &cluster.ProxyPlan{
		Config:    proxy.Config{Upstream: upstream, Seed: fleet.Seed},
		Procs:     procs,
		SourceIPs: fleet.SourceIPs,
	}})
	if err == nil {
		err = co.WaitReady(ctx, a)
	}
	if err != nil {
		return nil, fmt.Errorf("starting the fault proxy: %w", err)
	}
	logf("proxy: %d process(es) on %s in front of the target", procs, a.Ready.Addr)
	return cluster.NewRemoteProxy(a, logf), nil
}

// roleProxy names the fault proxy's processes in resources.csv and
// summary.json "resources".
const roleProxy = results.RoleProxy

// rolePIDs returns the processes of every agent by role, for resource
// sampling: a loadgen agent is its own process (this one, when it runs in
// it), a target or proxy agent reports its group's; and this process, the
// coordinator.
func rolePIDs(co *cluster.Coordinator) map[string][]int32 {
	m := map[string][]int32{results.RoleCoordinator: {int32(os.Getpid())}}
	for _, a := range co.Agents() {
		role := string(a.Plan.Role)
		for _, pid := range a.PIDs() {
			m[role] = append(m[role], int32(pid))
		}
	}
	return m
}

// agentSummaries lists the run's agents for summary.json.
func agentSummaries(co *cluster.Coordinator, lost []error) []results.AgentSummary {
	var out []results.AgentSummary
	for _, a := range co.Agents() {
		s := results.AgentSummary{Name: a.Name, Role: string(a.Plan.Role), Host: a.Ready.Host, PID: a.Ready.PID,
			MaxMessageBytes: a.MaxMessageBytes(), Lost: a.Lost()}
		if a.Plan.Loadgen != nil {
			s.Clients = a.Plan.Loadgen.Clients
		}
		out = append(out, s)
	}
	return out
}
