package storm_test

import (
	"cmp"
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/chaos"
	"github.com/stampede-dev/stampede/internal/testenv"
	"github.com/stampede-dev/stampede/loadgen"
	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/results/summary"
	"github.com/stampede-dev/stampede/spec"
	"github.com/stampede-dev/stampede/storm"
	"github.com/stampede-dev/stampede/target"
	"github.com/stampede-dev/stampede/target/listener"
)

// Each test here is one small storm with real processes and sockets: a
// target group, loadgen workers and the chaos supervisor, a few hundred
// clients for a few seconds. Assertions are on counts the event must
// produce, with bounds loose enough for a noisy 2-core machine.

// bigBacklog lets every first connect of a test's fleet into the accept
// queue: with the default 128, a burst of 200 drops SYNs that come back
// only after the kernel's 1 s retransmit, into the test's event.
var bigBacklog = target.Config{Server: spec.Server{Backlog: 1024}}

// bigBacklogProcs is bigBacklog in a group of n processes.
func bigBacklogProcs(n int) target.Config {
	c := bigBacklog
	c.Procs = n
	return c
}

// fixed is a fixed-interval policy without jitter.
func fixed(d time.Duration) backoff.Policy {
	return backoff.Policy{Kind: backoff.Fixed, Initial: d, Multiplier: 1}
}

// chaosStorm runs one storm with schedule and returns its result; the
// storm's log goes to the test log when the test fails.
func chaosStorm(t *testing.T, cfg storm.Config, schedule string) *storm.Result {
	t.Helper()
	sched, err := chaos.Parse(schedule)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Schedule, cfg.ScheduleText = sched, schedule
	cfg.Exe = stampedeExe
	cfg.Out = t.TempDir()
	cfg.LoadgenProcs = max(cfg.LoadgenProcs, 1)
	cfg.Target.Procs = max(cfg.Target.Procs, 1)
	var log lockedBuffer
	cfg.Log = &log
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Duration+30*time.Second)
	defer cancel()
	res, err := storm.Run(ctx, cfg)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("storm log:\n%s", log.String())
		}
	})
	if err != nil {
		t.Fatalf("storm.Run: %v", err)
	}
	return res
}

// onlyEvent returns the summary's one event of kind.
func onlyEvent(t *testing.T, s *summary.Summary, kind string) summary.EventSummary {
	t.Helper()
	var found []summary.EventSummary
	for _, e := range s.Events {
		if e.Kind == kind {
			found = append(found, e)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d %s events in %+v; want 1", len(found), kind, s.Events)
	}
	return found[0]
}

// maxDown is the most clients down at once in [from, to): clients that
// had connected and whose connection had ended, not yet back.
func maxDown(r *results.Report, from, to time.Duration) (most int, at time.Duration) {
	trs := slices.Clone(r.Transitions)
	slices.SortStableFunc(trs, func(a, b results.Transition) int { return cmp.Compare(a.At, b.At) })
	up := map[uint32]bool{}
	down := 0
	for _, tr := range trs {
		if tr.At >= to {
			break
		}
		was, seen := up[tr.Client]
		switch {
		case tr.Up && seen && !was:
			down--
		case !tr.Up && was:
			down++
		}
		up[tr.Client] = tr.Up
		if tr.At >= from && down > most {
			most, at = down, tr.At
		}
	}
	return most, at
}

// seconds converts summary seconds to a Duration.
func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// A rolling restart of a 3-process group takes one process down at a time:
// from one process's stop to the next one's, no more clients are down at
// once than the stopped process held (its share: it grows from step to
// step, as the clients of restarted processes reconnect to the others
// too). Every process restarts in turn, an interval after the previous is
// back.
func TestChaosRollingRestart(t *testing.T) {
	const clients, procs = 300, 3
	res := chaosStorm(t, storm.Config{
		Target:   bigBacklogProcs(procs),
		Fleet:    loadgen.Config{Client: spec.Client{Clients: clients, Policy: fixed(300 * time.Millisecond), Seed: 1}},
		Duration: 3500 * time.Millisecond,
	}, "at 700ms restart abrupt rolling interval=700ms")
	ev := onlyEvent(t, res.Summary, "restart")
	if len(ev.Steps) != procs {
		t.Fatalf("restart steps %+v; want %d", ev.Steps, procs)
	}
	var total int64
	for i, st := range ev.Steps {
		if st.Proc != i || st.ReadyS < st.EndS || st.EndS < st.StartS {
			t.Errorf("step %d = %+v; want process %d stopped, started, ready in order", i, st, i)
		}
		if i > 0 && st.StartS < ev.Steps[i-1].ReadyS+0.7 {
			t.Errorf("step %d stopped at %.3fs, before the previous was ready (%.3fs) plus the 700ms interval", i, st.StartS, ev.Steps[i-1].ReadyS)
		}
		// With all 300 on 3 processes, each holds ~100 at first; fewer
		// than 40 means the spread or the count went wrong.
		if st.Conns < clients/procs*4/10 {
			t.Errorf("step %d: the process held %d connections when stopped; want about a third or more of %d", i, st.Conns, clients)
		}
		total += st.Conns
		to := seconds(res.Summary.DurationS)
		if i+1 < procs {
			to = seconds(ev.Steps[i+1].StartS)
		}
		// Slack: clients that connected to the process between the count
		// and the signal.
		most, at := maxDown(res.Report, seconds(st.StartS), to)
		if limit := int(st.Conns) + clients/30; most > limit {
			t.Errorf("step %d: %d clients down at once at %v; want at most the %d the stopped process held (+%d)", i, most, at, st.Conns, clients/30)
		}
	}
	if *ev.ReadyS != ev.Steps[procs-1].ReadyS {
		t.Errorf("event ready %.3fs; want the last step's %.3fs", *ev.ReadyS, ev.Steps[procs-1].ReadyS)
	}
	if d := int64(ev.Disconnects["closed_1006"]); d < total-clients/30 || d > total+clients/30 {
		t.Errorf("%d closed_1006 disconnects; want what the stopped processes held, %d", d, total)
	}
	if r := res.Summary.Recovery[0]; r.Recovered != r.ConnectedBefore {
		t.Errorf("recovered %d of %d", r.Recovered, r.ConnectedBefore)
	}
}

// A restart of the whole group with the closed shape refuses connects
// while it is down; the event's outage covers the down time.
func TestChaosRestartClosedRefuses(t *testing.T) {
	const clients = 200
	res := chaosStorm(t, storm.Config{
		Target:   bigBacklog,
		Fleet:    loadgen.Config{Client: spec.Client{Clients: clients, Policy: fixed(200 * time.Millisecond), Seed: 2}},
		Duration: 3 * time.Second,
	}, "at 700ms restart abrupt down=1s")
	ev := onlyEvent(t, res.Summary, "restart")
	if *ev.OutageS < 1 || ev.EndS-ev.StartS < 1 {
		t.Errorf("outage %.3fs, end %.3fs after start; want at least the 1s down", *ev.OutageS, ev.EndS-ev.StartS)
	}
	// Every client retries about every 200 ms for 1 s: ~5 refusals each.
	if n := ev.Failures["refused"]; n < clients {
		t.Errorf("%d refused attempts during the restart; want at least %d", n, clients)
	}
	if r := res.Summary.Recovery[0]; r.Recovered != clients || r.ConnectedBefore != clients {
		t.Errorf("recovered %d of %d; want %d of %d", r.Recovered, r.ConnectedBefore, clients, clients)
	}
}

// A stall during the fleet's ramp: the accept queue (backlog 4) fills, the
// kernel drops SYNs (ListenOverflows), and connects time out in the TCP
// connect or wait for the 101 in vain.
func TestChaosStall(t *testing.T) {
	res := chaosStorm(t, storm.Config{
		Target: target.Config{Server: spec.Server{Backlog: 4}},
		Fleet: loadgen.Config{Client: spec.Client{Clients: 200, Ramp: 100, Policy: fixed(200 * time.Millisecond), Seed: 3,
			ConnectTimeout: 500 * time.Millisecond, HandshakeTimeout: 500 * time.Millisecond}},
		Duration: 3 * time.Second,
	}, "at 300ms stall 1200ms")
	ev := onlyEvent(t, res.Summary, "stall")
	if ev.EndS-ev.StartS < 1.2 || *ev.ReadyS != ev.EndS {
		t.Errorf("stall %.3fs..%.3fs ready %.3fs; want 1.2s long, ready at its end", ev.StartS, ev.EndS, *ev.ReadyS)
	}
	if n := ev.Failures["timeout"] + ev.Failures["handshake_timeout"]; n == 0 {
		t.Errorf("no timeout or handshake_timeout during the stall: %v", ev.Failures)
	}
	// Host-wide counter: other programs only add to it.
	if k := res.Summary.Kernel; k.ListenOverflows == 0 {
		t.Errorf("ListenOverflows did not grow during the stall: %+v", k)
	}
	if r := res.Summary.Recovery[0]; r.Recovered != r.ConnectedBefore {
		t.Errorf("recovered %d of %d", r.Recovered, r.ConnectedBefore)
	}
}

// "backlog N for D" changes the listener's backlog (ss shows it as Send-Q)
// and restores it after D.
func TestChaosBacklog(t *testing.T) {
	if _, err := exec.LookPath("ss"); err != nil {
		testenv.SkipUnlessRequired(t, "ss not installed (iproute2): cannot see a listener's backlog")
	}
	port, err := listener.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	seen := make(chan []int, 1)
	go func() { seen <- pollBacklog(ctx, port) }()
	res := chaosStorm(t, storm.Config{
		Target:   target.Config{Server: spec.Server{Addr: fmt.Sprintf("127.0.0.1:%d", port), Backlog: 64}},
		Fleet:    loadgen.Config{Client: spec.Client{Clients: 50, Policy: fixed(200 * time.Millisecond), Seed: 4}},
		Duration: 2500 * time.Millisecond,
	}, "at 700ms backlog 16 for 1s")
	cancel()
	values := <-seen
	if !slices.Equal(values, []int{64, 16, 64}) {
		t.Errorf("backlog seen by ss: %v; want 64, then 16, then 64 again", values)
	}
	ev := onlyEvent(t, res.Summary, "backlog")
	if ev.Mode != "16" || ev.EndS-ev.StartS < 1 {
		t.Errorf("backlog event %+v; want mode 16 lasting 1s", ev)
	}
}

// pollBacklog reads the backlog of the listener on port every 20 ms until
// ctx ends, and returns the distinct values in the order seen.
func pollBacklog(ctx context.Context, port int) []int {
	var values []int
	for ctx.Err() == nil {
		out, _ := exec.Command("ss", "-Hltn", fmt.Sprintf("sport = :%d", port)).Output()
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			f := strings.Fields(line)
			if len(f) < 3 {
				continue
			}
			if n, err := strconv.Atoi(f[2]); err == nil && (len(values) == 0 || values[len(values)-1] != n) {
				values = append(values, n)
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
	return values
}

// "accept-rate R/s for D" caps accepts during D: a ramp offering 100
// clients a second gets about R a second through, and the rest after.
func TestChaosAcceptRate(t *testing.T) {
	const clients, rate = 200, 20
	res := chaosStorm(t, storm.Config{
		Fleet: loadgen.Config{Client: spec.Client{Clients: clients, Ramp: 100, Policy: fixed(200 * time.Millisecond), Seed: 5,
			HandshakeTimeout: 5 * time.Second}},
		Duration: 3 * time.Second,
	}, "at 300ms accept-rate 20/s for 1500ms")
	ev := onlyEvent(t, res.Summary, "accept-rate")
	if ev.Mode != "20/s" || ev.EndS-ev.StartS < 1.5 {
		t.Fatalf("accept-rate event %+v; want 20/s for 1.5s", ev)
	}
	// Successes in the window's inner 1.3 s: the cap allows rate*1.3 plus
	// a burst; the ramp offers five times that.
	var ok uint32
	tl := res.Report.Timeline
	for i := int((ev.StartS + 0.1) * 10); i < int((ev.EndS-0.1)*10) && i < len(tl); i++ {
		ok += tl[i].Successes
	}
	if limit := uint32(rate*1.3) + 10; ok > limit {
		t.Errorf("%d upgrades within the 20/s window's inner 1.3s; want at most %d", ok, limit)
	}
	if r := res.Summary.Connect; r.Successes < clients {
		t.Errorf("%d successes; want every client (%d) connected in the end", r.Successes, clients)
	}
}

// During "reject 503 retry-after=1s", a fleet that honours Retry-After
// never comes back early; one that ignores it (retrying every 100 ms) does,
// and the target counts it.
func TestChaosRejectEarlyRetries(t *testing.T) {
	const clients = 120
	for _, c := range []struct {
		name   string
		ignore bool
		early  func(n uint64) bool
		want   string
	}{
		{"honoured", false, func(n uint64) bool { return n == 0 }, "0"},
		{"ignored", true, func(n uint64) bool { return n > 0 }, "> 0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // two small fleets; the counts do not depend on timing
			res := chaosStorm(t, storm.Config{
				Target: target.Config{Server: spec.Server{Procs: 2}},
				// First connects arrive over 1.2 s, into the window.
				Fleet: loadgen.Config{Client: spec.Client{Clients: clients, Ramp: 100, Policy: fixed(100 * time.Millisecond), Seed: 6,
					NoRetryAfter: c.ignore}},
				Duration: 3 * time.Second,
			}, "at 200ms reject 503 retry-after=1s for 1s")
			ev := onlyEvent(t, res.Summary, "reject")
			if ev.EarlyRetries == nil || !c.early(*ev.EarlyRetries) {
				t.Errorf("early_retries %v; want %s", ev.EarlyRetries, c.want)
			}
			if ev.Failures["http_503"] == 0 {
				t.Errorf("no http_503 during the reject: %v", ev.Failures)
			}
			if st := res.Summary.Connect; st.Successes < clients {
				t.Errorf("%d successes; want every client connected in the end", st.Successes)
			}
			t.Logf("early retries %d, 503s %d", *ev.EarlyRetries, ev.Failures["http_503"])
		})
	}
}

// Processes restarted during a reject window join it: clients that
// reconnect after the restart are still answered 503 until the window
// ends.
func TestChaosRestartDuringReject(t *testing.T) {
	const clients = 100
	res := chaosStorm(t, storm.Config{
		Target:   bigBacklogProcs(2),
		Fleet:    loadgen.Config{Client: spec.Client{Clients: clients, Policy: fixed(100 * time.Millisecond), Seed: 7, NoRetryAfter: true}},
		Duration: 3 * time.Second,
	}, "at 500ms reject 503 retry-after=1s for 1500ms; at 700ms restart abrupt")
	ev := onlyEvent(t, res.Summary, "restart")
	if n := ev.Failures["http_503"]; n < clients {
		t.Errorf("%d http_503 after the restart; want every reconnecting client rejected at least once (%d)", n, clients)
	}
	if r := res.Summary.Recovery[1]; r.Recovered != clients {
		t.Errorf("recovered %d of %d after the window", r.Recovered, clients)
	}
}
