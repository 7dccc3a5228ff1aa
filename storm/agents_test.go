package storm_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/cluster/hub"
	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/results/folder"
	"github.com/stampede-dev/stampede/results/summary"
	"github.com/stampede-dev/stampede/storm"
)

// agentProc is one `stampede agent --nats` process of a test.
type agentProc struct {
	name string
	cmd  *exec.Cmd
	log  *lockedBuffer
	done chan error
}

// startAgent starts `stampede agent` joining url with the token in
// tokenFile, as a process of its own (its own group, so a kill -9 of it
// leaves the test alone).
func startAgent(t *testing.T, url, tokenFile, name, role string, extra ...string) *agentProc {
	t.Helper()
	args := append([]string{"agent", "--nats", url, "--token-file", tokenFile, "--name", name, "--role", role, "--join-timeout", "30s"}, extra...)
	return runAgent(t, name, "", exec.Command(stampedeExe, args...))
}

// runAgent starts cmd as agent name in a process group of its own, its
// output kept; the test's end kills the group and waits, and a failed test
// logs the output (where, when set, says on which host it ran).
func runAgent(t *testing.T, name, where string, cmd *exec.Cmd) *agentProc {
	t.Helper()
	a := &agentProc{name: name, cmd: cmd, log: &lockedBuffer{}, done: make(chan error, 1)}
	a.cmd.Stdout, a.cmd.Stderr = a.log, a.log
	a.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { a.done <- a.cmd.Wait() }()
	t.Cleanup(func() {
		_ = syscall.Kill(-a.cmd.Process.Pid, syscall.SIGKILL)
		<-a.done
		if t.Failed() {
			if where != "" {
				name += " on " + where
			}
			t.Logf("agent %s:\n%s", name, a.log.String())
		}
	})
	return a
}

var natsURL = regexp.MustCompile(`(nats|tls)://[0-9.]+:[0-9]+`)

// waitURL returns the hub's URL once the run's log prints it.
func waitURL(t *testing.T, log *lockedBuffer) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if u := natsURL.FindString(log.String()); u != "" {
			return u
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the run printed no join URL:\n%s", log.String())
	return ""
}

// agentsConfig is a small run spread over n agents of this machine that
// join over the embedded NATS server.
func agentsConfig(t *testing.T, n int, schedule string) storm.Config {
	cfg := stormConfig(t, schedule)
	cfg.Agents = n
	cfg.AgentTimeout = 60 * time.Second
	cfg.Hub = hub.Config{TokenFile: filepath.Join(t.TempDir(), "token")}
	return cfg
}

// runAsync runs cfg in the background; the log is returned at once.
func runAsync(cfg *storm.Config) (*lockedBuffer, chan runOutcome) {
	log := &lockedBuffer{}
	cfg.Log = log
	out := make(chan runOutcome, 1)
	c := *cfg
	go func() {
		res, err := storm.Run(context.Background(), c)
		out <- runOutcome{res, err}
	}()
	return log, out
}

type runOutcome struct {
	res *storm.Result
	err error
}

// awaitRun waits up to d for the run of runAsync to end, failing the test
// with the run's log when it does not.
func awaitRun(t *testing.T, done <-chan runOutcome, log *lockedBuffer, d time.Duration) runOutcome {
	t.Helper()
	select {
	case o := <-done:
		return o
	case <-time.After(d):
		t.Fatalf("the run did not end:\n%s", log.String())
		return runOutcome{}
	}
}

// TestRunOverAgents: a run whose target and fleet are on agents that
// joined over NATS (child processes here): the restart storm recovers
// every client, summary.json lists the agents with their clock estimates,
// and the merged connect and TTR histograms are exactly the merge of each
// agent's own .hlog files.
func TestRunOverAgents(t *testing.T) {
	cfg := agentsConfig(t, 3, "at 3s restart abrupt down=1s")
	log, done := runAsync(&cfg)
	url := waitURL(t, log)
	startAgent(t, url, cfg.Hub.TokenFile, "tgt", hub.RoleTarget)
	startAgent(t, url, cfg.Hub.TokenFile, "lg-a", hub.RoleLoadgen, "--capacity", "300")
	startAgent(t, url, cfg.Hub.TokenFile, "lg-b", hub.RoleLoadgen, "--capacity", "100")
	o := awaitRun(t, done, log, 90*time.Second)
	if o.err != nil {
		t.Fatalf("run: %v\n%s", o.err, log.String())
	}
	sum := o.res.Summary
	if len(sum.Agents) != 3 {
		t.Fatalf("summary lists %d agents, want 3: %+v", len(sum.Agents), sum.Agents)
	}
	clients := map[string]int{}
	for _, a := range sum.Agents {
		clients[a.Name] = a.Clients
		if a.OffsetErrorMS <= 0 || a.Lost {
			t.Errorf("agent %s: offset error %v ms, lost %v; want a positive bound, not lost", a.Name, a.OffsetErrorMS, a.Lost)
		}
	}
	if clients["lg-a"] != 3*testClients/4 || clients["lg-b"] != testClients/4 || clients["tgt"] != 0 {
		t.Errorf("clients by agent %v, want 3:1 by capacity and none on the target", clients)
	}
	if rec := sum.Recovery; len(rec) != 1 || rec[0].ConnectedBefore != testClients || rec[0].Recovered != testClients {
		t.Errorf("recovery %+v, want one restart with all %d clients back", rec, testClients)
	}
	for _, f := range []string{results.ConnectLogFile, results.TTRLogFile} {
		merged, err := folder.ReadHistogramLogFile(filepath.Join(cfg.Out, f))
		if err != nil {
			t.Fatal(err)
		}
		sum := results.NewHistogram()
		for _, a := range []string{"lg-a", "lg-b"} {
			h, err := folder.ReadHistogramLogFile(filepath.Join(cfg.Out, storm.AgentsDir, a, f))
			if err != nil {
				t.Fatal(err)
			}
			sum.Merge(h)
		}
		if merged.TotalCount() == 0 || !sum.Equals(merged) {
			t.Errorf("%s: %d values merged, the agents' own add up to %d and differ", f, merged.TotalCount(), sum.TotalCount())
		}
	}
}

// TestAgentKilled: a loadgen agent killed with -9 mid-run is marked lost
// within 5 s with its clients counted; with --on-agent-loss continue the
// run finishes and reports the rest.
func TestAgentKilled(t *testing.T) {
	cfg := agentsConfig(t, 3, "")
	cfg.Schedule, cfg.ScheduleText = nil, ""
	cfg.Duration = 10 * time.Second
	cfg.OnAgentLoss = storm.LossContinue
	log, done := runAsync(&cfg)
	url := waitURL(t, log)
	startAgent(t, url, cfg.Hub.TokenFile, "tgt", hub.RoleTarget)
	startAgent(t, url, cfg.Hub.TokenFile, "lg-a", hub.RoleLoadgen)
	victim := startAgent(t, url, cfg.Hub.TokenFile, "lg-b", hub.RoleLoadgen)
	for !strings.Contains(log.String(), "loadgen: ") {
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(3 * time.Second)
	killed := time.Now()
	_ = syscall.Kill(-victim.cmd.Process.Pid, syscall.SIGKILL) // the agent and its loadgen child
	o := awaitRun(t, done, log, 60*time.Second)
	if o.err != nil {
		t.Fatalf("--on-agent-loss continue: %v", o.err)
	}
	sum := o.res.Summary
	var lost *summary.AgentSummary
	for i, a := range sum.Agents {
		if a.Lost {
			lost = &sum.Agents[i]
		}
	}
	if lost == nil || lost.Name != "lg-b" || lost.ClientsLost != testClients/2 {
		t.Fatalf("agents %+v, want lg-b lost with its %d clients", sum.Agents, testClients/2)
	}
	after := time.Duration(lost.LostAtS*float64(time.Second)) - killed.Sub(o.res.Report.Start)
	if after > 5*time.Second {
		t.Errorf("lost %s after the kill, want within 5s", after)
	}
	if sum.Complete {
		t.Error("a run that lost an agent says it is complete")
	}
}

// TestAgentLossFails: by default a lost agent stops the run at once:
// ErrIncomplete (exit 2), the folder written.
func TestAgentLossFails(t *testing.T) {
	cfg := agentsConfig(t, 2, "")
	cfg.Schedule, cfg.ScheduleText = nil, ""
	cfg.Duration = 30 * time.Second
	cfg.OnAgentLoss = storm.LossFail
	log, done := runAsync(&cfg)
	url := waitURL(t, log)
	startAgent(t, url, cfg.Hub.TokenFile, "tgt", hub.RoleTarget)
	victim := startAgent(t, url, cfg.Hub.TokenFile, "lg", hub.RoleLoadgen)
	for !strings.Contains(log.String(), "loadgen: ") {
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(2 * time.Second)
	_ = syscall.Kill(-victim.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case o := <-done:
		if !errors.Is(o.err, storm.ErrIncomplete) {
			t.Errorf("run: %v, want ErrIncomplete", o.err)
		}
		if o.res == nil || o.res.Summary.DurationS > 20 {
			t.Errorf("the run went on after its agent was lost: %+v", o.res)
		}
		if _, err := os.Stat(filepath.Join(cfg.Out, folder.SummaryFile)); err != nil {
			t.Error(err)
		}
	case <-time.After(25 * time.Second):
		t.Fatalf("the run did not stop on its lost agent:\n%s", log.String())
	}
}

// TestCoordinatorKilled: when the coordinator dies (kill -9), every agent
// stops its load and exits within 5 s, saying why.
func TestCoordinatorKilled(t *testing.T) {
	dir := t.TempDir()
	token := filepath.Join(dir, "token")
	co := exec.Command(stampedeExe, "run", "--clients", "200", "--duration", "60s", "--agents", "2", "--token-file", token,
		"--out", filepath.Join(dir, "out"), "--progress-interval", "1s")
	log := &lockedBuffer{}
	co.Stdout, co.Stderr = log, log
	co.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := co.Start(); err != nil {
		t.Fatal(err)
	}
	coDone := make(chan error, 1)
	go func() { coDone <- co.Wait() }()
	t.Cleanup(func() { _ = syscall.Kill(-co.Process.Pid, syscall.SIGKILL) })
	url := waitURL(t, log)
	agents := []*agentProc{startAgent(t, url, token, "tgt", hub.RoleTarget), startAgent(t, url, token, "lg", hub.RoleLoadgen)}
	for !strings.Contains(log.String(), "connected 200/200") {
		select {
		case err := <-coDone:
			t.Fatalf("the coordinator ended: %v\n%s", err, log.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
	_ = syscall.Kill(-co.Process.Pid, syscall.SIGKILL)
	killed := time.Now()
	<-coDone
	for _, a := range agents {
		select {
		case err := <-a.done:
			if d := time.Since(killed); d > 5*time.Second {
				t.Errorf("agent %s exited %s after the coordinator died, want within 5s", a.name, d)
			}
			if err == nil || !strings.Contains(a.log.String(), "coordinator is gone") {
				t.Errorf("agent %s: exit %v, log:\n%s", a.name, err, a.log.String())
			}
			a.done <- err // for the cleanup
		case <-time.After(10 * time.Second):
			t.Fatalf("agent %s still runs 10s after its coordinator died", a.name)
		}
	}
}

// TestProxyOnTargetAgent: the fault proxy goes to the target's agent, and
// the schedule's proxy events reach it over NATS.
func TestProxyOnTargetAgent(t *testing.T) {
	cfg := agentsConfig(t, 2, "at 2s proxy reset for 1s")
	log, done := runAsync(&cfg)
	url := waitURL(t, log)
	startAgent(t, url, cfg.Hub.TokenFile, "tgt", hub.RoleTarget)
	startAgent(t, url, cfg.Hub.TokenFile, "lg", hub.RoleLoadgen)
	o := awaitRun(t, done, log, 90*time.Second)
	if o.err != nil {
		t.Fatalf("run: %v\n%s", o.err, log.String())
	}
	if !strings.Contains(log.String(), "proxy: ") {
		t.Errorf("no proxy placed:\n%s", log.String())
	}
	if len(o.res.Summary.Agents) != 2 {
		t.Errorf("agents %+v, want 2: the proxy runs on the target's agent", o.res.Summary.Agents)
	}
	if rec := o.res.Summary.Recovery; len(rec) != 1 || rec[0].Recovered != rec[0].ConnectedBefore || rec[0].ConnectedBefore == 0 {
		t.Errorf("recovery %+v, want every client back after the proxy's resets", rec)
	}
}
