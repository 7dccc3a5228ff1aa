package group_test

// The agent's chaos adapter is tested here, beside the target's own test
// processes and helpers (export_test.go), which start a real group.

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/agent"
	"github.com/stampede-dev/stampede/chaos"
	"github.com/stampede-dev/stampede/chaos/supervisor"
	"github.com/stampede-dev/stampede/internal/wstest"
	"github.com/stampede-dev/stampede/target"
	"github.com/stampede-dev/stampede/target/group"
)

// The agent's ChaosGroup: its graceful restart with spread= and hint= stops its
// processes through /shutdown: their clients get 1013 with a delay in
// [down, down+hint], and the group comes back.
func TestChaosGroupRestartHint(t *testing.T) {
	g := group.StartTestGroup(t, 2, target.Config{})
	ct := agent.NewChaosGroup(g, 0, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const down, hint = 300 * time.Millisecond, time.Second
	for _, procs := range []string{chaos.ProcsOne, chaos.ProcsAll} {
		before := g.Procs()
		var conns []net.Conn
		for range 12 {
			conns = append(conns, wstest.MustDial(t, g.URL()))
		}
		wstest.Eventually(t, "12 conns", func() bool { st, err := g.Stats(ctx); return err == nil && st.Conns == 12 })
		stopped := len(conns)
		if procs == chaos.ProcsOne {
			st, err := before[0].Stats(ctx)
			if err != nil {
				t.Fatal(err)
			}
			stopped = int(st.Conns)
		}
		ev := chaos.Event{Kind: chaos.Restart, Mode: chaos.ModeGraceful, Procs: procs, Shape: chaos.ShapeClosed,
			Down: down, Spread: 200 * time.Millisecond, Hint: hint}
		type result struct {
			res supervisor.Restarted
			err error
		}
		rc := make(chan result, 1)
		go func() { res, err := ct.RestartSteps(ctx, ev); rc <- result{res, err} }()
		for _, c := range conns {
			c.SetReadDeadline(time.Now().Add(20 * time.Second))
		}
		all := make(chan []wstest.CloseSeen, 1)
		go func() { all <- wstest.ReadAll(conns) }()
		r := <-rc
		if r.err != nil {
			t.Fatalf("%s: RestartSteps: %v", procs, r.err)
		}
		// The stopped process exited: its clients have their close frame;
		// the others' reads end now.
		for _, c := range conns {
			c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		}
		var seen []wstest.CloseSeen
		for _, c := range <-all {
			if c.Err == nil {
				seen = append(seen, c)
			}
		}
		if len(seen) != stopped {
			t.Fatalf("%s: %d clients closed; want the stopped processes' %d", procs, len(seen), stopped)
		}
		wstest.CheckHinted(t, seen, down, hint)
		if before[0].PID == g.Procs()[0].PID {
			t.Fatalf("%s: process 0 was not restarted", procs)
		}
		for _, c := range conns {
			c.Close()
		}
	}
}
