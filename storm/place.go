package storm

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/stampede-dev/stampede/agent"
	"github.com/stampede-dev/stampede/cluster"
	"github.com/stampede-dev/stampede/cluster/hub"
	"github.com/stampede-dev/stampede/loadgen"
	"github.com/stampede-dev/stampede/proxy"
	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/results/summary"
	"github.com/stampede-dev/stampede/spec"
)

// placer starts a run's roles: as processes of this machine, or, in a run
// with --agents, on the agents that joined it (members): the target group
// and the fault proxy on the target's member, the fleet's shares on the
// loadgen members.
type placer struct {
	co       *cluster.Coordinator
	local    *cluster.Local
	agentCtx context.Context
	runID    string
	// target is the member that runs the target and the proxy; loadgens
	// the members that run the fleet (nil: this machine).
	target   *hub.Member
	loadgens []*hub.Member
	// allow is the coordinator's allow list, sent with every plan placed
	// on a member (agent.Plan.Allow).
	allow []string
}

// remote says whether the roles go to members.
func (p *placer) remote() bool { return len(p.loadgens) > 0 }

// place starts one role: on member m, or on this machine when m is nil.
func (p *placer) place(name string, plan agent.Plan, m *hub.Member) (*cluster.Agent, error) {
	if m == nil {
		return p.local.Launch(p.agentCtx, p.co, name, plan)
	}
	plan.Name = name
	plan.Allow = p.allow
	a := &cluster.Agent{Name: name, Transport: agent.OverLink(m.Channel()), Plan: plan, Member: m.Name, MemberHost: m.Host, MemberPID: m.PID,
		Offset: m.Offset, OffsetError: m.OffsetError}
	if err := p.co.Place(a); err != nil {
		return nil, err
	}
	return a, nil
}

// assignRoles chooses the members' roles: the target goes to an agent of
// role target (else one of role any), the loadgen shares to the agents of
// role loadgen and the other agents of role any (the target's own, when no
// other can). Against --url (external) there is no target: only loadgen
// and any agents are used.
func assignRoles(members []*hub.Member, external bool, logf func(string, ...any)) (tgt *hub.Member, loadgens []*hub.Member, err error) {
	if !external {
		for _, role := range []string{hub.RoleTarget, hub.RoleAny} {
			for _, m := range members {
				if m.Role == role && tgt == nil {
					tgt = m
				}
			}
		}
		if tgt == nil {
			return nil, nil, spec.Errorf("Storm.Agents", "no agent of role target or any joined, and the run needs one for its target")
		}
	}
	for _, m := range members {
		switch {
		case m == tgt:
		case m.Role == hub.RoleLoadgen || m.Role == hub.RoleAny:
			loadgens = append(loadgens, m)
		default:
			logf("agents: %s (role %s) has nothing to run against an external server", m.Name, m.Role)
		}
	}
	if len(loadgens) == 0 && tgt != nil && tgt.Role == hub.RoleAny {
		loadgens = append(loadgens, tgt)
	}
	if len(loadgens) == 0 {
		return nil, nil, spec.Errorf("Storm.Agents", "no agent of role loadgen or any joined to run the fleet")
	}
	return tgt, loadgens, nil
}

// placeLoadgens places the fleet's shares and waits until all are ready.
// On this machine: procs shares, one agent process each (a fleet against
// someone else's server in one process runs in this process, over an
// in-memory transport with the same messages). On members: shares in
// proportion to their declared capacities, each member's cut in shares of
// at most PerProcess clients, each run by a process of its own there.
func (p *placer) placeLoadgens(ctx context.Context, fleet loadgen.Config, procs int, external bool) ([]*cluster.Agent, error) {
	var agents []*cluster.Agent
	if p.remote() {
		caps := make([]int, len(p.loadgens))
		for i, m := range p.loadgens {
			caps[i] = m.Capacity
		}
		counts, err := cluster.ShareByCapacity(fleet.Clients, caps)
		if err != nil {
			return nil, err
		}
		fleet.SourceIPs = nil // this machine's addresses: not the members'
		for i, share := range cluster.SplitCounts(fleet, counts) {
			m := p.loadgens[i]
			share.SourceIPs = m.SourceIPs
			parts := cluster.Split(share, (share.Clients+PerProcess-1)/PerProcess)
			for j, part := range parts {
				name := m.Name
				if len(parts) > 1 {
					name = fmt.Sprintf("%s/%d", m.Name, j)
				}
				a, err := p.place(name, agent.Plan{RunID: p.runID, Role: agent.RoleLoadgen, Loadgen: &part}, m)
				if err != nil {
					return nil, err
				}
				agents = append(agents, a)
			}
		}
	} else {
		for i, share := range cluster.Split(fleet, procs) {
			name := fmt.Sprintf("loadgen %d", i)
			plan := agent.Plan{RunID: p.runID, Role: agent.RoleLoadgen, Loadgen: &share}
			var a *cluster.Agent
			var err error
			if external && procs == 1 {
				a, err = cluster.InProcess(p.agentCtx, p.co, name, plan)
			} else {
				a, err = p.local.Launch(p.agentCtx, p.co, name, plan)
			}
			if err != nil {
				return nil, err
			}
			agents = append(agents, a)
		}
	}
	if err := p.co.WaitReady(ctx, agents...); err != nil {
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
func (p *placer) startProxy(ctx context.Context, upstream string, fleet loadgen.Config, logf func(string, ...any)) (*cluster.RemoteProxy, error) {
	procs := proxy.ProcsFor(fleet.Clients)
	co := p.co
	a, err := p.place(roleProxy, agent.Plan{RunID: p.runID, Role: agent.RoleProxy, Proxy: &agent.ProxyPlan{
		Config:    proxy.Config{Upstream: upstream, Seed: fleet.Seed},
		Procs:     procs,
		SourceIPs: fleet.SourceIPs,
	}}, p.target)
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
		if a.Member != "" {
			continue // another host's processes
		}
		role := string(a.Plan.Role)
		for _, pid := range a.PIDs() {
			m[role] = append(m[role], int32(pid))
		}
	}
	return m
}

// agentSummaries lists the run's agents for summary.json: each agent
// process of this machine, or each member of a run with --agents (its
// roles and shares together), with its clock estimate and start skew
// against the start instant at.
func agentSummaries(co *cluster.Coordinator, at time.Time) []summary.AgentSummary {
	var out []summary.AgentSummary
	idx := map[string]int{}
	for _, a := range co.Agents() {
		name := a.MemberName()
		i, ok := idx[name]
		if !ok {
			i = len(out)
			idx[name] = i
			s := summary.AgentSummary{Name: name, Role: string(a.Plan.Role), Host: a.Ready.Host, PID: a.Ready.PID,
				ClockOffsetMS: ms(a.Offset), OffsetErrorMS: ms(a.OffsetError)}
			if a.Member != "" { // the agent process on its host, not one of its shares
				s.Host, s.PID = a.MemberHost, a.MemberPID
			}
			out = append(out, s)
		}
		s := &out[i]
		if a.Plan.Role == agent.RoleTarget {
			s.Role = string(agent.RoleTarget) // a member running the target and shares is named by its target
		}
		if s.Host == "" {
			s.Host = a.Ready.Host
		}
		s.MaxMessageBytes = max(s.MaxMessageBytes, a.MaxMessageBytes())
		if a.Plan.Loadgen != nil {
			s.Clients += a.Plan.Loadgen.Clients
			if st := a.Started(); !st.IsZero() && !at.IsZero() {
				s.StartSkewMS = max(s.StartSkewMS, ms(st.Sub(at)))
			}
		}
		if a.Lost() {
			s.Lost = true
			if a.Plan.Loadgen != nil {
				s.ClientsLost += a.Plan.Loadgen.Clients
			}
			if t := a.LostAt(); !t.IsZero() && !at.IsZero() {
				s.LostAtS = t.Sub(at).Seconds()
			}
		}
	}
	return out
}

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// checkMemberPorts refuses, before any role starts, a fleet whose share on
// some loadgen member needs more ephemeral ports than that member's source
// addresses hold towards the target's one address and port: each address
// carries Limits.PerSourceIP clients of that host's port range (the
// member's own, as it read it; PerSourceIP when it did not say), and
// beyond it connect() scans the used half of the range under a lock and
// the rest of the share times out (measured: 84,000 of 120,000 connected
// on 3 hosts of one address each, 27,768 ports of one parity each).
func checkMemberPorts(clients int, loadgens []*hub.Member) error {
	caps := make([]int, len(loadgens))
	for i, m := range loadgens {
		caps[i] = m.Capacity
	}
	counts, err := cluster.ShareByCapacity(clients, caps)
	if err != nil {
		return err
	}
	for i, m := range loadgens {
		addrs := max(1, len(m.SourceIPs))
		perIP, how := PerSourceIP, fmt.Sprintf("at most %d", PerSourceIP)
		if m.EphemeralPorts > 0 {
			perIP = Limits{EphemeralPorts: m.EphemeralPorts}.PerSourceIP()
			how = fmt.Sprintf("90 %% of half its %d ephemeral ports, at most %d", m.EphemeralPorts, PerSourceIP)
		}
		if counts[i] <= addrs*perIP {
			continue
		}
		return spec.Errorf("Storm.Agents", "agent %s takes %d clients on %d source address(es), but one address carries %d clients towards the target's one port (%s; connect() takes ports of one parity first): %d clients over; give that agent %d source addresses, or add agents",
			m.Name, counts[i], addrs, perIP, how, counts[i]-addrs*perIP, (counts[i]+perIP-1)/perIP)
	}
	return nil
}
