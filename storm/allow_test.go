package storm_test

import (
	"context"
	"errors"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/agent"
	"github.com/stampede-dev/stampede/cluster"
	"github.com/stampede-dev/stampede/cluster/hub"
	"github.com/stampede-dev/stampede/internal/testenv"
	"github.com/stampede-dev/stampede/loadgen"
	"github.com/stampede-dev/stampede/spec"
)

// TestAgentRefusesPlanBeyondAllowList: a coordinator that holds the run's
// token (a compromised one) signs a loadgen plan to 10.1.2.3 and puts
// that host in its own allow list; a real agent process joined over the
// machine's NATS server (127.0.0.1:4222) refuses it with one line, since
// its own list (loopback and the namespace hosts) does not name the host,
// tells the coordinator, and exits 1 without starting the share.
func TestAgentRefusesPlanBeyondAllowList(t *testing.T) {
	const addr = "127.0.0.1:4222"
	if c, err := net.DialTimeout("tcp", addr, time.Second); err != nil {
		testenv.SkipUnlessRequired(t, "NATS unreachable on %s: %v", addr, err)
	} else {
		c.Close()
	}
	for _, tc := range []struct {
		name  string
		allow []string // the coordinator's
		by    string
	}{
		{"the coordinator allows it, the agent does not", []string{"10.1.2.3"}, "agent"},
		{"the coordinator does not allow it", nil, "coordinator"},
	} {
		t.Run(tc.by, func(t *testing.T) {
			url := "nats://" + addr
			tokenFile := filepath.Join(t.TempDir(), "token")
			h, err := hub.New(hub.Config{NATS: url, TokenFile: tokenFile})
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			ag := startAgent(t, url, tokenFile, "a1", hub.RoleLoadgen)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			members, err := h.Wait(ctx, 1, 30*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			fleet := loadgen.Config{Client: spec.Client{URL: "ws://10.1.2.3:9/ws", Clients: 5, Seed: 1}}
			co := &cluster.Coordinator{StartDelay: 200 * time.Millisecond}
			a := &cluster.Agent{Name: "a1", Transport: agent.OverLink(members[0].Channel()), Member: "a1",
				Plan: agent.Plan{RunID: "t", Role: agent.RoleLoadgen, Loadgen: &fleet, Allow: tc.allow}}
			if err := co.Place(a); err != nil {
				t.Fatal(err)
			}
			if err := co.WaitReady(ctx, a); err == nil || !strings.Contains(err.Error(), "agent refused the plan") {
				t.Errorf("the coordinator's wait for the share: %v; want the agent's refusal", err)
			}
			var exitErr *exec.ExitError
			select {
			case err := <-ag.done:
				if !errors.As(err, &exitErr) || exitErr.ExitCode() != 1 {
					t.Errorf("agent exit %v; want status 1", err)
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("the agent did not exit after refusing the plan:\n%s", ag.log.String())
			}
			ag.done <- nil // for the cleanup's wait
			want := "stampede: agent refused the plan: a loadgen plan sends load to ws://10.1.2.3:9/ws: host 10.1.2.3 is not loopback, " +
				"not a namespace host (10.203.0.0/16), and the " + tc.by + "'s allow list does not name it"
			lines := strings.Split(strings.TrimSpace(ag.log.String()), "\n")
			if last := lines[len(lines)-1]; last != want {
				t.Errorf("the agent's last line:\n%s\nwant\n%s", last, want)
			}
			if strings.Contains(ag.log.String(), "loadgen: started") {
				t.Errorf("the agent started the share:\n%s", ag.log.String())
			}
		})
	}
}
