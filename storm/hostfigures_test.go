package storm

import (
	"strings"
	"testing"

	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/results/summary"
)

// TestTargetKernel: the run's kernel figures are the target hosts'
// counters summed; a target host that was not read makes them unread
// (naming it), never the coordinator's or a loadgen host's; a run whose
// target ran on no agent keeps its own.
func TestTargetKernel(t *testing.T) {
	k := func(passive int64) *results.KernelDelta {
		return &results.KernelDelta{PassiveOpens: passive, ListenOverflows: passive / 10}
	}
	co := results.HostSummary{Name: "coordinator", Roles: []string{"coordinator"}, Kernel: k(16)}
	cases := []struct {
		name  string
		hosts []results.HostSummary
		want  results.KernelDelta
		read  bool
		why   string
	}{
		{"one target host", []results.HostSummary{co,
			{Name: "h1", Roles: []string{"target"}, Kernel: k(120000)},
			{Name: "h2", Roles: []string{"loadgen"}, Kernel: k(3)}},
			*k(120000), true, ""},
		{"two target hosts summed", []results.HostSummary{co,
			{Name: "h1", Roles: []string{"target", "proxy"}, Kernel: k(1000)},
			{Name: "h2", Roles: []string{"target"}, Kernel: k(500)}},
			results.KernelDelta{PassiveOpens: 1500, ListenOverflows: 150}, true, ""},
		{"target host not read", []results.HostSummary{co,
			{Name: "h1", Roles: []string{"target"}, KernelNote: "the agent sent no figures of its host"},
			{Name: "h2", Roles: []string{"loadgen"}, Kernel: k(3)}},
			results.KernelDelta{}, false, "the target's host h1 was not read (the agent sent no figures of its host)"},
		{"no target on an agent", []results.HostSummary{co,
			{Name: "h2", Roles: []string{"loadgen"}, Kernel: k(3)}},
			results.KernelDelta{}, false, ""},
	}
	for _, c := range cases {
		got, read, why := targetKernel(c.hosts)
		if got != c.want || read != c.read || !strings.Contains(why, c.why) || (c.why == "") != (why == "") {
			t.Errorf("%s: %+v, read %v, %q; want %+v, read %v, %q", c.name, got, read, why, c.want, c.read, c.why)
		}
	}
}

// TestLocalCPU: a role with processes on an agent's host has no CPU
// series, even when some of its processes ran on the coordinator's host;
// the roles only there keep theirs.
func TestLocalCPU(t *testing.T) {
	pts := []summary.CPUPoint{{CPUSeconds: 1}}
	cpu := map[string][]summary.CPUPoint{"coordinator": pts, "loadgen": pts, "target": pts, "proxy": pts}
	hosts := []results.HostSummary{
		{Name: "coordinator", Roles: []string{"coordinator"}},
		{Name: "h1", Roles: []string{"loadgen"}},
		{Name: "h2", Roles: []string{"target", "proxy"}},
	}
	got := localCPU(cpu, hosts)
	if len(got) != 1 || got["coordinator"] == nil {
		t.Errorf("local roles %v, want the coordinator's only", got)
	}
	if got := localCPU(cpu, hosts[:2]); len(got) != 3 || got["loadgen"] != nil {
		t.Errorf("local roles %v, want all but the loadgen", got)
	}
	if len(cpu) != 4 {
		t.Errorf("the series given were changed: %v", cpu)
	}
}
