package storm

import (
	"fmt"
	"os"
	"slices"

	"github.com/stampede-dev/stampede/agent"
	"github.com/stampede-dev/stampede/cluster"
	"github.com/stampede-dev/stampede/results"
)

// spread reports whether any role of the run ran on another host (--agents).
func spread(co *cluster.Coordinator) bool {
	for _, a := range co.Agents() {
		if a.Member != "" {
			return true
		}
	}
	return false
}

// hostFigures lists the hosts of a run spread over several: the
// coordinator's own (its kernel counters, read or not, and its resources)
// and each agent's, with the latest figures that agent sent from its host.
// A host whose figures never came has null ones, never another host's.
func hostFigures(co *cluster.Coordinator, coKernel results.KernelDelta, coRead bool, coNote string, res map[string]results.ResourceStats) []results.HostSummary {
	name, _ := os.Hostname()
	own := results.HostSummary{Name: results.RoleCoordinator, Host: name, Roles: []string{results.RoleCoordinator}}
	if coRead {
		own.Kernel = &coKernel
	} else {
		own.KernelNote = coNote
	}
	if st, ok := res[results.RoleCoordinator]; ok {
		own.Resources = map[string]results.ResourceStats{results.RoleCoordinator: st}
	}
	out := []results.HostSummary{own}
	idx := map[string]int{}
	latest := map[string]*agent.HostStats{}
	lost := map[string]bool{}
	for _, a := range co.Agents() {
		if a.Member == "" {
			continue // a process of the coordinator's host
		}
		i, ok := idx[a.Member]
		if !ok {
			i = len(out)
			idx[a.Member] = i
			out = append(out, results.HostSummary{Name: a.Member, Host: a.MemberHost})
		}
		if !slices.Contains(out[i].Roles, string(a.Plan.Role)) {
			out[i].Roles = append(out[i].Roles, string(a.Plan.Role))
		}
		if h := a.HostStats(); h != nil && (latest[a.Member] == nil || h.N > latest[a.Member].N) {
			latest[a.Member] = h
		}
		lost[a.Member] = lost[a.Member] || a.Lost()
	}
	order := []string{string(agent.RoleTarget), string(agent.RoleLoadgen), string(agent.RoleProxy)}
	for i := range out[1:] {
		h := &out[i+1]
		slices.SortFunc(h.Roles, func(a, b string) int { return slices.Index(order, a) - slices.Index(order, b) })
		st := latest[h.Name]
		switch {
		case st == nil:
			h.KernelNote = "the agent sent no figures of its host"
		case st.Kernel == nil:
			h.KernelNote = "the agent could not read its host's kernel counters: " + st.KernelError
		default:
			h.Kernel = st.Kernel
			if lost[h.Name] {
				h.KernelNote = "the agent was lost: its counters until its last message"
			}
		}
		if st != nil {
			h.Resources = st.Resources
		}
	}
	return out
}

// targetKernel is the kernel counters of the target's hosts, summed, from
// hosts (hostFigures): read only when every host that ran a target was.
// A run whose target ran on no agent (--url, or a target of this machine)
// has none (ok false, why empty).
func targetKernel(hosts []results.HostSummary) (sum results.KernelDelta, read bool, why string) {
	n := 0
	for _, h := range hosts[1:] {
		if !h.HasRole(string(agent.RoleTarget)) {
			continue
		}
		n++
		if h.Kernel == nil {
			return results.KernelDelta{}, false, fmt.Sprintf("the target's host %s was not read (%s)", h.Name, h.KernelNote)
		}
		sum = sum.Add(*h.Kernel)
	}
	if n == 0 {
		return sum, false, ""
	}
	return sum, true, ""
}

// hostResources adds each host's role figures (the agents' own process
// excepted) to res, the coordinator's sampler's: in a run over several
// hosts the roles' processes are sampled on their hosts.
func hostResources(res map[string]results.ResourceStats, hosts []results.HostSummary) map[string]results.ResourceStats {
	out := make(map[string]results.ResourceStats, len(res))
	for k, v := range res {
		out[k] = v
	}
	for _, h := range hosts[1:] {
		for role, st := range h.Resources {
			if role == "agent" {
				continue
			}
			out[role] = out[role].Add(st)
		}
	}
	return out
}
