package agent

import (
	"testing"

	"github.com/stampede-dev/stampede/loadgen"
	"github.com/stampede-dev/stampede/proxy"
	"github.com/stampede-dev/stampede/spec"
)

// TestCheckPlanLoad: a plan's load must be allowed by the coordinator's
// list in the plan and by the agent's own; loopback and the namespace
// hosts are allowed by both without being named; a target plan sends no
// load.
func TestCheckPlanLoad(t *testing.T) {
	lg := func(url string, allow ...string) *Plan {
		return &Plan{Role: RoleLoadgen, Loadgen: &loadgen.Config{Client: spec.Client{URL: url}}, Allow: allow}
	}
	px := func(upstream string, allow ...string) *Plan {
		return &Plan{Role: RoleProxy, Proxy: &ProxyPlan{Config: proxy.Config{Upstream: upstream}}, Allow: allow}
	}
	for _, tc := range []struct {
		name string
		plan *Plan
		own  []string
		by   string // "" allowed, else whose list refuses
	}{
		{"loopback", lg("ws://127.0.0.1:9/"), nil, ""},
		{"localhost, IPv6 loopback", lg("wss://[::1]:9/"), nil, ""},
		{"namespace host", lg("ws://10.203.2.11:9/"), nil, ""},
		{"the agent's list lacks it", lg("ws://10.1.2.3/", "10.1.2.3"), nil, "agent"},
		{"the coordinator's list lacks it", lg("ws://10.1.2.3/"), []string{"10.1.2.3"}, "coordinator"},
		{"both name it", lg("ws://10.1.2.3/", "10.1.2.3"), []string{"10.1.2.3"}, ""},
		{"both hold a prefix of it", lg("ws://10.244.1.7:80/", "10.244.0.0/16"), []string{"10.244.0.0/16"}, ""},
		{"a prefix that does not hold it", lg("ws://10.245.1.7:80/", "10.244.0.0/16"), []string{"10.244.0.0/16"}, "coordinator"},
		{"a name is not resolved", lg("ws://evil.example/", "10.0.0.0/8"), []string{"10.0.0.0/8"}, "coordinator"},
		{"proxy upstream", px("10.1.2.3:80"), nil, "coordinator"},
		{"proxy upstream on a namespace host", px("10.203.0.11:80"), nil, ""},
		{"target: no load", &Plan{Role: RoleTarget, Target: &TargetPlan{}}, nil, ""},
	} {
		err := CheckPlanLoad(tc.plan, tc.own)
		pe, _ := err.(*PlanLoadError)
		switch {
		case tc.by == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.by != "" && (pe == nil || pe.By != tc.by):
			t.Errorf("%s: %v; want refused by the %s's list", tc.name, err, tc.by)
		}
	}
}

// TestValidAllow: an entry is a host, an address or a prefix; a URL or a
// host with a port is refused.
func TestValidAllow(t *testing.T) {
	for _, ok := range []string{"10.1.2.3", "staging.example", "10.244.0.0/16", "::1", "[fd00::1]"} {
		if err := ValidAllow([]string{ok}); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "ws://10.1.2.3/", "10.1.2.3:80", "10.0.0.0/33"} {
		if err := ValidAllow([]string{bad}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
