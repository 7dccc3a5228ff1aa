package realservers

import (
	"context"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/connerr"
	"github.com/stampede-dev/stampede/loadgen"
	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/session"
	"github.com/stampede-dev/stampede/spec"
)

// fleet is a loadgen fleet running in the background.
type fleet struct {
	t    *testing.T
	f    *loadgen.Fleet
	stop context.CancelFunc
	done chan struct{}
	rep  *results.Report
	err  error
}

// startFleet runs n clients speaking sc against url for at most max.
func startFleet(t *testing.T, url string, n int, sc session.Config, max time.Duration) *fleet {
	t.Helper()
	pol, err := backoff.Parse("exp:initial=100ms,max=500ms,jitter=0.5")
	if err != nil {
		t.Fatal(err)
	}
	f, err := loadgen.New(loadgen.Config{Client: spec.Client{
		URL: url, Clients: n, Policy: pol, Seed: 7, Session: sc, Reactors: 2,
		ConnectTimeout: 2 * time.Second, HandshakeTimeout: 2 * time.Second, PingInterval: -1,
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), max)
	fl := &fleet{t: t, f: f, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(fl.done)
		fl.rep, fl.err = f.Run(ctx)
	}()
	t.Cleanup(fl.finish)
	return fl
}

// finish stops the fleet and returns its report.
func (fl *fleet) finish() {
	fl.stop()
	<-fl.done
}

func (fl *fleet) report() *results.Report {
	fl.t.Helper()
	fl.finish()
	if fl.err != nil {
		fl.t.Fatal(fl.err)
	}
	return fl.rep
}

// ups counts each client's Up transitions in trs.
func ups(trs []results.Transition) map[uint32]int {
	m := map[uint32]int{}
	for _, tr := range trs {
		if tr.Up {
			m[tr.Client]++
		}
	}
	return m
}

// checkBackTwice checks that every one of n clients was back, and
// re-subscribed, exactly twice: at its first connect and after the
// restart.
func checkBackTwice(t *testing.T, rep *results.Report, n int) {
	t.Helper()
	for name, trs := range map[string][]results.Transition{"back": rep.Transitions, "re-subscribed": rep.Resubscribed} {
		u := ups(trs)
		if len(u) != n {
			t.Errorf("%s: %d clients, want %d", name, len(u), n)
		}
		for c, k := range u {
			if k != 2 {
				t.Errorf("%s: client %d %d times, want 2", name, c, k)
				break
			}
		}
	}
}

// restartable is a real server a test kills and starts again: a
// nodeServer, or a RabbitMQ node of the test's own.
type restartable interface {
	// waitStats polls the server's own counts until ok accepts them, or
	// fails the test after d.
	waitStats(ctx context.Context, d time.Duration, what string, ok func(map[string]int) bool) map[string]int
	// restart kills the server (SIGKILL) and returns once it listens again.
	restart()
}

// holdKillRestart is every real server's test: n clients speaking sc hold
// their sessions for hold (several of the server's heartbeats) without a
// disconnect; the server counts every one joined and subscribed before it
// is killed and again after it starts anew; every client is back and
// re-subscribed twice, and none was dropped by a heartbeat or session
// timeout.
func holdKillRestart(t *testing.T, srv restartable, url string, n int, sc session.Config, hold time.Duration) {
	t.Helper()
	fl := startFleet(t, url, n, sc, 90*time.Second)
	ctx := context.Background()
	all := func(m map[string]int) bool { return m["joined"] == n && m["subscribed"] == n }
	srv.waitStats(ctx, 10*time.Second, "every client joined and subscribed", all)
	time.Sleep(hold)
	if s := fl.f.Stats(); s.DisconnectCount() != 0 {
		t.Fatalf("%d disconnects before the kill, want 0: %v", s.DisconnectCount(), s.Disconnects)
	}
	srv.restart()
	srv.waitStats(ctx, 15*time.Second, "every client joined and subscribed after the restart", all)
	deadline := time.Now().Add(5 * time.Second)
	for fl.f.Stats().Subscribed < int64(n) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	rep := fl.report()
	checkBackTwice(t, rep, n)
	var timeouts uint64
	for _, b := range rep.Timeline {
		timeouts += uint64(b.Disconnects[connerr.HeartbeatTimeout]) + uint64(b.Disconnects[connerr.SessionTimeout])
	}
	if timeouts != 0 {
		t.Errorf("%d clients dropped by a heartbeat or session timeout, want 0", timeouts)
	}
}

// stopsAs checks that all n clients speaking sc stop with class, as a 401
// stops them, and that the report keeps their last error; it returns the
// report.
func stopsAs(t *testing.T, url string, n int, sc session.Config, class connerr.Class) *results.Report {
	t.Helper()
	fl := startFleet(t, url, n, sc, 10*time.Second)
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if s := fl.f.Stats(); s.StoppedCount() >= uint64(n) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	s := fl.f.Stats()
	if got := s.Stopped[class]; got != uint64(n) {
		t.Fatalf("stopped as %s: %d, want %d (stopped %v)", class, got, n, s.Stopped)
	}
	rep := fl.report()
	if st := rep.Stopped[class.String()]; st.Count != n || st.LastError == "" {
		t.Errorf("report's stopped %s = %+v", class, st)
	}
	return rep
}
