package storm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/internal/netnshost"
	"github.com/stampede-dev/stampede/internal/testpki"
	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/results/folder"
	"github.com/stampede-dev/stampede/results/slo"
	"github.com/stampede-dev/stampede/storm"
)

// manifestCommand returns the args and environment the Kubernetes
// manifests give the agent of Indexed Job job at completion index index,
// with the token file, the coordinator's URL and its CA put in. They come from
// deploy/kubernetes/testdata/commands.json, which that module's
// TestCommandsFile keeps equal to the manifests (decoded strictly against
// the Kubernetes API types, which this module does not import).
func manifestCommand(job string, index int, tokenFile, natsURL, caFile string) (args, env []string, err error) {
	data, err := os.ReadFile("../deploy/kubernetes/testdata/commands.json")
	if err != nil {
		return nil, nil, err
	}
	var all map[string][]struct{ Args, Env []string }
	if err := json.Unmarshal(data, &all); err != nil {
		return nil, nil, err
	}
	if index < 0 || index >= len(all[job]) {
		return nil, nil, fmt.Errorf("commands.json: no %s agent at index %d", job, index)
	}
	r := strings.NewReplacer("{{token-file}}", tokenFile, "{{nats-url}}", natsURL, "{{nats-ca}}", caFile)
	for _, a := range all[job][index].Args {
		args = append(args, r.Replace(a))
	}
	for _, e := range all[job][index].Env {
		env = append(env, r.Replace(e))
	}
	return args, env, nil
}

// startHostAgent starts `stampede agent` inside namespace host h with the
// command line and environment the Kubernetes manifests give an agent
// (deploy/kubernetes: args and env of the Indexed Job's container, the
// token file and the coordinator's URL put in), plus extra flags: the
// coordinator runs in the root namespace, as on a machine of its own, and
// reaches the host over the bridge only.
func startHostAgent(t *testing.T, h netnshost.Host, args, env []string, extra ...string) *agentProc {
	t.Helper()
	args = append(append([]string(nil), args...), extra...)
	name := h.Name
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "STAMPEDE_AGENT_NAME="); ok {
			name = v
		}
	}
	cmd := h.Command(context.Background(), stampedeExe, args...)
	cmd.Env = append(os.Environ(), env...)
	return runAgent(t, name, h.Name, cmd)
}

// TestRunOverNamespaceHosts: the coordinator in the root namespace, the
// target agent on one namespace host, loadgen agents on two others, each
// with its own source addresses, all started with the command line and
// environment the Kubernetes manifests give them (so the manifests cannot
// drift from the binary): the target listens on its host's address,
// the fleet crosses the bridge, every client recovers from the restart,
// and the merged histograms are exactly the agents' own merged. Skipped
// when namespaces cannot be made here, except in CI.
func TestRunOverNamespaceHosts(t *testing.T) {
	set := netnshost.UpAddrs(t, 3, 2)
	cfg := agentsConfig(t, 3, "at 3s restart abrupt down=1s")
	cfg.Hub.Listen = netip.AddrPortFrom(set.Root, 0).String()
	// TLS as in the manifests: a certificate for the bridge address,
	// which the agents verify with its CA (--ca).
	pki := testpki.Write(t, t.TempDir(), set.Root.AsSlice())
	ca := pki.CA
	cfg.Hub.TLSCert, cfg.Hub.TLSKey = pki.Cert, pki.Key
	log, done := runAsync(&cfg)
	url := waitURL(t, log)
	if !strings.Contains(url, set.Root.String()) {
		t.Fatalf("join URL %s, want the bridge address %s", url, set.Root)
	}
	tgt := set.Hosts[0]
	args, env, err := manifestCommand("stampede-target", 0, cfg.Hub.TokenFile, url, ca)
	if err != nil {
		t.Fatal(err)
	}
	startHostAgent(t, tgt, args, env)
	var loadgens []string
	for i, h := range set.Hosts[1:] {
		var src []string
		for _, a := range h.Addrs {
			src = append(src, a.String())
		}
		args, env, err := manifestCommand("stampede-loadgen", i, cfg.Hub.TokenFile, url, ca)
		if err != nil {
			t.Fatal(err)
		}
		a := startHostAgent(t, h, args, env, "--source-ips", strings.Join(src, ","))
		loadgens = append(loadgens, a.name)
	}
	o := awaitRun(t, done, log, 120*time.Second)
	if o.err != nil {
		t.Fatalf("run: %v\n%s", o.err, log.String())
	}
	if want := "target: 1 process(es) on " + tgt.Addr.String() + ":"; !strings.Contains(log.String(), want) {
		t.Errorf("the target does not listen on its host's address (%q):\n%s", want, log.String())
	}
	sum := o.res.Summary
	if len(sum.Agents) != 3 {
		t.Fatalf("summary lists %d agents, want 3", len(sum.Agents))
	}
	for _, a := range sum.Agents {
		if a.OffsetErrorMS <= 0 || a.Lost {
			t.Errorf("agent %s: offset error %v ms, lost %v", a.Name, a.OffsetErrorMS, a.Lost)
		}
	}
	if rec := sum.Recovery; len(rec) != 1 || rec[0].ConnectedBefore != testClients || rec[0].Recovered != testClients {
		t.Errorf("recovery %+v, want all %d clients back", rec, testClients)
	}
	for _, f := range []string{results.ConnectLogFile, results.TTRLogFile} {
		merged, err := folder.ReadHistogramLogFile(filepath.Join(cfg.Out, f))
		if err != nil {
			t.Fatal(err)
		}
		own := results.NewHistogram()
		for _, name := range loadgens {
			hh, err := folder.ReadHistogramLogFile(filepath.Join(cfg.Out, storm.AgentsDir, name, f))
			if err != nil {
				t.Fatal(err)
			}
			own.Merge(hh)
		}
		if merged.TotalCount() == 0 || !own.Equals(merged) {
			t.Errorf("%s: merged %d values differ from the agents' own merged (%d)", f, merged.TotalCount(), own.TotalCount())
		}
	}
}

// TestHostFiguresFromEachHost: a fleet over two namespace hosts (the
// target agent on one, a loadgen agent on the other) gets each host's
// kernel counters and resources from that host, through the agents'
// messages: the target's host accepted every client (PassiveOpens), the
// loadgen's host opened them (ActiveOpens), the run's kernel figures and
// its listen_overflows gate are the target host's, never the
// coordinator's, whose namespace saw none of the fleet.
func TestHostFiguresFromEachHost(t *testing.T) {
	set := netnshost.Up(t, 2)
	cfg := agentsConfig(t, 2, "at 2s restart abrupt down=1s")
	cfg.Duration = 5 * time.Second
	cfg.Hub.Listen = netip.AddrPortFrom(set.Root, 0).String()
	cfg.Hub.InsecureListen = true
	s, err := slo.ParseSLO("listen_overflows<=1000000")
	if err != nil {
		t.Fatal(err)
	}
	cfg.SLO = []slo.SLO{s}
	log, done := runAsync(&cfg)
	url := waitURL(t, log)
	tgt, lg := set.Hosts[0], set.Hosts[1]
	common := []string{"agent", "--nats", url, "--token-file", cfg.Hub.TokenFile}
	runAgent(t, "h1", tgt.Name, tgt.Command(context.Background(), stampedeExe, append(common, "--name", "h1", "--role", "target")...))
	runAgent(t, "h2", lg.Name, lg.Command(context.Background(), stampedeExe, append(common, "--name", "h2", "--role", "loadgen", "--source-ips", lg.Addr.String())...))
	o := awaitRun(t, done, log, 120*time.Second)
	if o.err != nil {
		t.Fatalf("run: %v\n%s", o.err, log.String())
	}
	sum := o.res.Summary
	hosts := map[string]results.HostSummary{}
	for _, h := range sum.Hosts {
		hosts[h.Name] = h
	}
	if len(sum.Hosts) != 3 || sum.Hosts[0].Name != results.RoleCoordinator {
		t.Fatalf("hosts %+v, want the coordinator's, h1's and h2's", sum.Hosts)
	}
	th, lh := hosts["h1"], hosts["h2"]
	if fmt.Sprint(th.Roles) != "[target]" || fmt.Sprint(lh.Roles) != "[loadgen]" {
		t.Errorf("roles: h1 %v, h2 %v; want [target], [loadgen]", th.Roles, lh.Roles)
	}
	if th.Kernel == nil || lh.Kernel == nil {
		t.Fatalf("kernel counters not read: h1 %v (%s), h2 %v (%s)", th.Kernel, th.KernelNote, lh.Kernel, lh.KernelNote)
	}
	if th.Kernel.PassiveOpens < testClients {
		t.Errorf("the target's host accepted %d connections (PassiveOpens), want at least %d", th.Kernel.PassiveOpens, testClients)
	}
	if lh.Kernel.ActiveOpens < testClients {
		t.Errorf("the loadgen's host opened %d connections (ActiveOpens), want at least %d", lh.Kernel.ActiveOpens, testClients)
	}
	if lh.Kernel.PassiveOpens >= testClients {
		t.Errorf("the loadgen's host accepted %d connections: another host's figures?", lh.Kernel.PassiveOpens)
	}
	if !sum.KernelRead || sum.Kernel != *th.Kernel {
		t.Errorf("run's kernel figures %+v (read %v, %s), want the target host's %+v", sum.Kernel, sum.KernelRead, sum.KernelNote, *th.Kernel)
	}
	if len(sum.SLO) != 1 || sum.SLO[0].Value == nil || *sum.SLO[0].Value != float64(th.Kernel.ListenOverflows) {
		t.Errorf("listen_overflows gate %+v, want it on the target host's %d", sum.SLO, th.Kernel.ListenOverflows)
	}
	if r := th.Resources["target"]; r.Processes < 1 || r.PeakRSSBytes == 0 {
		t.Errorf("target's resources on its host: %+v", r)
	}
	if r := lh.Resources["loadgen"]; r.Processes < 1 || r.PeakRSSBytes == 0 {
		t.Errorf("loadgen's resources on its host: %+v", r)
	}
	if r := sum.Resources["target"]; r.Processes < 1 {
		t.Errorf("the run's target resources %+v: the host's figures not added", r)
	}
	// The agents' hosts send CPU totals, not samples: no CPU per connect
	// for their roles; the coordinator's own, sampled here, has one.
	for _, role := range []string{"target", "loadgen"} {
		if r := sum.Resources[role]; r.CPUUsPerConnect != nil || r.CPUUsPerReconnect != nil {
			t.Errorf("%s, on other hosts: CPU per connect %s, per reconnect %s; want null", role, fmtPtr(r.CPUUsPerConnect), fmtPtr(r.CPUUsPerReconnect))
		}
	}
	if r := sum.Resources[results.RoleCoordinator]; r.CPUUsPerConnect == nil {
		t.Errorf("the coordinator's CPU per connect is null")
	}
}
