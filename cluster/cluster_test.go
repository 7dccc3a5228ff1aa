package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/agent"
	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/loadgen"
	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/spec"
	"github.com/stampede-dev/stampede/target"
)

// TestSplit pins how a fleet is shared out: consecutive ID ranges, the
// remainder to the first workers, ramp and in-flight bound divided.
func TestSplit(t *testing.T) {
	cfg := loadgen.Config{Client: spec.Client{Clients: 10, Ramp: 900, MaxInflight: 30}, FirstID: 100}
	got := Split(cfg, 3)
	want := []struct {
		first    uint32
		clients  int
		ramp     float64
		inflight int
	}{{100, 4, 300, 10}, {104, 3, 300, 10}, {107, 3, 300, 10}}
	if len(got) != len(want) {
		t.Fatalf("%d workers, want %d", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.FirstID != w.first || g.Clients != w.clients || g.Ramp != w.ramp || g.MaxInflight != w.inflight {
			t.Errorf("worker %d: first %d clients %d ramp %v inflight %d; want %+v", i, g.FirstID, g.Clients, g.Ramp, g.MaxInflight, w)
		}
	}
	// The default bound (MaxInflight 0) is the fleet's, shared like a
	// given one: 56 shares of 2,000 each flooded a million-client run.
	// The ping interval is the whole fleet's too: a million clients ping
	// every 100 s, not each share's 10 s.
	var sum int
	for _, g := range Split(loadgen.Config{Client: spec.Client{Clients: 1000000}}, 56) {
		sum += g.MaxInflight
		if g.PingInterval != 100*time.Second {
			t.Fatalf("a share of a million clients pings every %s, want 100s", g.PingInterval)
		}
	}
	if sum > spec.DefaultMaxInflight || sum < spec.DefaultMaxInflight-56 {
		t.Errorf("default in-flight bound over 56 shares sums to %d, want about %d", sum, spec.DefaultMaxInflight)
	}
	sum = 0
	for _, g := range SplitCounts(loadgen.Config{Client: spec.Client{Clients: 100}}, []int{75, 25}) {
		sum += g.MaxInflight
	}
	if sum != spec.DefaultMaxInflight {
		t.Errorf("SplitCounts: default in-flight bound sums to %d, want %d", sum, spec.DefaultMaxInflight)
	}
	// More workers than clients: one client each, no empty worker.
	if n := len(Split(loadgen.Config{Client: spec.Client{Clients: 2}}, 5)); n != 2 {
		t.Errorf("2 clients over 5 workers gave %d workers, want 2", n)
	}
}

// TestCoordinatorRunsAgents runs two loadgen agents in this process
// against a real target on loopback: the plan, the start barrier, progress
// and the final reports all cross the protocol, and the merged report
// holds both agents' clients and histograms.
func TestCoordinatorRunsAgents(t *testing.T) {
	srv, err := target.Start(target.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Shutdown(target.Abrupt) })
	<-srv.Ready()

	fleet := loadgen.Config{Client: spec.Client{URL: srv.URL(), Clients: 40, Seed: 3, Policy: backoff.MustParse("fixed:initial=50ms")}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	coord := &Coordinator{StartDelay: 100 * time.Millisecond}
	var agents []*Agent
	for i, share := range Split(fleet, 2) {
		a, err := InProcess(ctx, coord, fmt.Sprintf("loadgen %d", i), agent.Plan{RunID: "test", Role: agent.RoleLoadgen, Loadgen: &share})
		if err != nil {
			t.Fatal(err)
		}
		agents = append(agents, a)
	}
	if err := coord.WaitReady(ctx, agents...); err != nil {
		t.Fatal(err)
	}
	startAt, err := coord.Start(1500 * time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	rep, lost := coord.Collect(ctx, startAt, 1500*time.Millisecond)
	if len(lost) > 0 {
		t.Fatal(lost)
	}
	if !rep.Start.Equal(startAt) {
		t.Errorf("report start %v, want the barrier %v", rep.Start, startAt)
	}
	if rep.Clients != 40 || rep.Processes != 2 {
		t.Errorf("merged %d clients from %d agents, want 40 from 2", rep.Clients, rep.Processes)
	}
	if n, _ := rep.FirstConnects(); n != 40 {
		t.Errorf("%d clients connected, want 40", n)
	}
	if got := rep.Connect.TotalCount(); got < 40 {
		t.Errorf("connect histogram holds %d values, want at least 40", got)
	}
	for _, a := range agents {
		if a.Ready.PID == 0 || a.MaxMessageBytes() == 0 {
			t.Errorf("%s: ready %+v, largest message %d bytes", a.Name, a.Ready, a.MaxMessageBytes())
		}
	}
}

// TestAgentRefusesBadPlan: a plan that does not validate, names no known
// role, carries another role's configuration or another protocol version
// is answered with an error naming the problem.
func TestAgentRefusesBadPlan(t *testing.T) {
	bad := loadgen.Config{Client: spec.Client{URL: "ws://127.0.0.1:1/", Clients: -1}}
	good := loadgen.Config{Client: spec.Client{URL: "ws://127.0.0.1:1/", Clients: 1, Policy: backoff.MustParse("fixed:initial=1s")}}
	for _, tc := range []struct {
		name string
		msg  agent.Message
		want string
	}{
		{"invalid config", agent.Message{V: agent.Version, Kind: agent.KindPlan, Plan: &agent.Plan{Role: agent.RoleLoadgen, Loadgen: &bad}}, "Clients"},
		{"unknown role", agent.Message{V: agent.Version, Kind: agent.KindPlan, Plan: &agent.Plan{Role: "juggler", Loadgen: &good}}, "unknown role"},
		{"wrong config", agent.Message{V: agent.Version, Kind: agent.KindPlan, Plan: &agent.Plan{Role: agent.RoleTarget, Loadgen: &good}}, "must carry its target"},
		{"other version", agent.Message{V: agent.Version + 1, Kind: agent.KindPlan, Plan: &agent.Plan{Role: agent.RoleLoadgen, Loadgen: &good}}, "version"},
	} {
		c, a := pipePair()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		served := make(chan error, 1)
		go func() { served <- agent.Serve(ctx, a, agent.AgentConfig{}) }()
		if err := c.Send(tc.msg); err != nil {
			t.Fatal(err)
		}
		m, err := c.Recv()
		if err != nil || m.Kind != agent.KindError || !strings.Contains(m.Error, tc.want) {
			t.Errorf("%s: answered %+v, %v; want an error naming %q", tc.name, m, err, tc.want)
		}
		if err := <-served; err == nil {
			t.Errorf("%s: Serve returned nil", tc.name)
		}
		cancel()
		c.Close()
		a.Close()
	}
}

// pipePair returns the two ends of an in-memory transport.
func pipePair() (coord, ag agent.Transport) {
	cr, aw := io.Pipe()
	ar, cw := io.Pipe()
	return agent.NewStream(cr, cw, closeAll{cw, cr}), agent.NewStream(ar, aw, closeAll{aw, ar})
}

// An agent of another protocol version (a stale stampede-worker beside a
// new stampede) is refused when it answers, with a line that says so,
// not trusted to mean the same by its messages.
func TestCoordinatorRefusesOtherVersion(t *testing.T) {
	c, a := pipePair()
	t.Cleanup(func() { c.Close(); a.Close() })
	go func() {
		if _, err := a.Recv(); err != nil {
			return
		}
		a.Send(agent.Message{V: agent.Version - 1, Kind: agent.KindReady, Ready: &agent.Ready{PID: 1}})
		for {
			if _, err := a.Recv(); err != nil {
				return
			}
		}
	}()
	coord := &Coordinator{}
	share := loadgen.Config{Client: spec.Client{URL: "ws://127.0.0.1:1/", Clients: 1, Policy: backoff.MustParse("fixed:initial=1s")}}
	ag := &Agent{Name: "loadgen 0", Transport: c, Plan: agent.Plan{Role: agent.RoleLoadgen, Loadgen: &share}}
	if err := coord.Place(ag); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := coord.WaitReady(ctx, ag)
	if err == nil || !strings.Contains(err.Error(), "protocol version") {
		t.Fatalf("WaitReady = %v; want a refusal naming the protocol version", err)
	}
}

// TestMergeHoldsNoAgents: while pieces are merged, which on a machine the
// fleet keeps busy can take seconds, the agents stay readable (the
// resource sampler reads their pids every second).
func TestMergeHoldsNoAgents(t *testing.T) {
	c := &Coordinator{asm: results.NewAssembler(0)}
	c.agents = []*Agent{{Name: "lg-0"}}
	in, release := make(chan struct{}), make(chan struct{})
	c.merging = func() { close(in); <-release }
	merged := make(chan error, 1)
	go func() {
		merged <- c.addPiece(c.agents[0], &results.Piece{Buckets: &results.BucketRange{First: 0, Buckets: []results.Bucket{{}}}})
	}()
	<-in
	got := make(chan int, 1)
	go func() { got <- len(c.Agents()) }()
	select {
	case n := <-got:
		if n != 1 {
			t.Errorf("Agents() = %d agents during a merge, want 1", n)
		}
	case <-time.After(10 * time.Second):
		t.Error("Agents() waited for a merge in progress")
	}
	close(release)
	if err := <-merged; err != nil {
		t.Fatal(err)
	}
}

// TestServeStdioReadsThePlanFirst: an agent on its standard streams takes
// its plan from the first line of stdin and answers on stdout as the
// message stream; a stdin without a plan is an error that says so.
func TestServeStdioReadsThePlanFirst(t *testing.T) {
	bad := loadgen.Config{Client: spec.Client{URL: "ws://127.0.0.1:1/", Clients: -1}}
	plan, _ := json.Marshal(agent.Message{V: agent.Version, Kind: agent.KindPlan, Plan: &agent.Plan{Role: agent.RoleLoadgen, Loadgen: &bad}})
	var out bytes.Buffer
	err := agent.ServeStdio(context.Background(), strings.NewReader(string(plan)+"\n"), &out, agent.AgentConfig{})
	if err == nil {
		t.Fatal("ServeStdio with an invalid plan returned nil")
	}
	var m agent.Message
	if jerr := json.Unmarshal(out.Bytes(), &m); jerr != nil || m.Kind != agent.KindError || !strings.Contains(m.Error, "Clients") {
		t.Errorf("answered %q (%v); want an error message naming Clients", out.String(), jerr)
	}
	out.Reset()
	err = agent.ServeStdio(context.Background(), strings.NewReader(""), &out, agent.AgentConfig{})
	if err == nil || !strings.Contains(err.Error(), "waiting for a plan") {
		t.Errorf("empty stdin: %v; want an error about the missing plan", err)
	}
}

// TestRecoverWaitsOnceForAll: agents that never send their recovery
// figures are each named once the one wait is over, and Recover returns;
// it does not wait for the second agent on a timer that already fired.
func TestRecoverWaitsOnceForAll(t *testing.T) {
	coord := &Coordinator{FinalTimeout: 200 * time.Millisecond}
	for i := range 3 {
		c, a := pipePair()
		t.Cleanup(func() { c.Close(); a.Close() })
		go func() { // reads every message, answers none
			for {
				if _, err := a.Recv(); err != nil {
					return
				}
			}
		}()
		share := loadgen.Config{Client: spec.Client{URL: "ws://127.0.0.1:1/", Clients: 1, Policy: backoff.MustParse("fixed:initial=1s")}}
		ag := &Agent{Name: fmt.Sprintf("loadgen %d", i), Transport: c, Plan: agent.Plan{Role: agent.RoleLoadgen, Loadgen: &share}}
		if err := coord.Place(ag); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() {
		_, err := coord.Recover(context.Background(), []results.Event{{Kind: "restart", Start: time.Second}}, 5*time.Second)
		done <- err
	}()
	select {
	case err := <-done:
		for i := range 3 {
			if want := fmt.Sprintf("loadgen %d: no recovery figures in time", i); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("Recover = %v; want it to name %q", err, want)
			}
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Recover still waiting 30 s after its 200 ms wait was over")
	}
}

// TestFinalWaitWhileTheAgentTalks: after the run's end an agent that keeps
// talking is waited for beyond FinalTimeout, for its final message and
// then for its recovery figures; one that is silent is given up after it,
// and named.
func TestFinalWaitWhileTheAgentTalks(t *testing.T) {
	const timeout = 200 * time.Millisecond
	coord := &Coordinator{FinalTimeout: timeout}
	// talk sends progress every 20 ms for d, then m.
	talk := func(a agent.Transport, d time.Duration, m agent.Message) {
		for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			if a.Send(agent.Message{V: agent.Version, Kind: agent.KindProgress, Progress: &agent.Progress{At: time.Now()}}) != nil {
				return
			}
		}
		m.V = agent.Version
		_ = a.Send(m)
	}
	for _, name := range []string{"slow", "silent"} {
		c, a := pipePair()
		t.Cleanup(func() { c.Close(); a.Close() })
		go func() {
			if name == "slow" {
				go talk(a, 4*timeout, agent.Message{Kind: agent.KindFinal, Final: &agent.Final{}})
			}
			for {
				m, err := a.Recv()
				if err != nil {
					return
				}
				if name == "slow" && m.Kind == agent.KindRecover {
					go talk(a, 3*timeout, agent.Message{Kind: agent.KindRecovery, Recovery: &agent.Recovery{Last: true}})
				}
			}
		}()
		share := loadgen.Config{Client: spec.Client{URL: "ws://127.0.0.1:1/", Clients: 1, Policy: backoff.MustParse("fixed:initial=1s")}}
		if err := coord.Place(&Agent{Name: name, Transport: c, Plan: agent.Plan{Role: agent.RoleLoadgen, Loadgen: &share}}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, lost := coord.Collect(ctx, time.Now(), 0)
	if len(lost) != 1 || !strings.Contains(lost[0].Error(), "silent: no final message in time") {
		t.Errorf("Collect lost %v; want only the silent agent, with no final message in time", lost)
	}
	_, err := coord.Recover(ctx, []results.Event{{Kind: "restart", Start: time.Second}}, 5*time.Second)
	if err == nil || !strings.Contains(err.Error(), "silent: no recovery figures in time") || strings.Contains(err.Error(), "slow") {
		t.Errorf("Recover = %v; want the silent agent named, and not the slow one", err)
	}
}
