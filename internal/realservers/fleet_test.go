package realservers

import (
	"context"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/backoff"
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
