package sim

import (
	"strings"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/connerr"
	"github.com/stampede-dev/stampede/spec"
)

// TestReactorSpreadsBurst: 400 connects that complete together wait for
// their reactor, which writes one upgrade request a ReactorCost (1 ms):
// on one reactor about 100 connect in each 100 ms, on two about 200;
// without the queue all 400 in the first 100 ms. The accept queue has room for all
// and the target no limit, so the reactors are all that paces them.
func TestReactorSpreadsBurst(t *testing.T) {
	upgraded := func(reactors int, cost time.Duration) []uint32 {
		res, _ := run(t, Config{Client: spec.Client{Clients: 400, Policy: backoff.MustParse("fixed:initial=1s"), Seed: 1,
			MaxInflight: 1000, Reactors: reactors}, Server: spec.Server{Backlog: 1024}, Duration: time.Second,
			ProcCapacity: 1e7, ReactorCost: cost})
		per := make([]uint32, 5) // the timeline ends at its last count
		for i, b := range res.Report.Timeline[:min(5, len(res.Report.Timeline))] {
			per[i] = b.Successes
		}
		return per
	}
	for _, c := range []struct {
		reactors int
		cost     time.Duration
		want     []uint32
	}{
		{1, time.Millisecond, []uint32{100, 100, 100, 100, 0}},
		{2, time.Millisecond, []uint32{200, 200, 0, 0, 0}},
		{1, 0, []uint32{400, 0, 0, 0, 0}},
	} {
		got := upgraded(c.reactors, c.cost)
		for i := range got { // a bucket's edge may take one a reactor from its neighbour
			if d := int(got[i]) - int(c.want[i]); d < -c.reactors || d > c.reactors {
				t.Errorf("%d reactors, %s an attempt: connected per 100 ms %v, want %v", c.reactors, c.cost, got, c.want)
				break
			}
		}
	}
}

// TestReactionStalls: the bench's storm at 10,000 clients, its requests
// one RTT after their SYNs or behind their reactors (44 µs an attempt).
// A fleet of devices sends its SYNs apart: while the requests of some
// wait for their reactors, more SYNs pass the accept queue's check, more
// requests find it full, stall and time out. A fleet on one machine
// (IssueRate) sends its retransmits together: they pass the check
// together whatever the reactors do, and the queue spreads their
// requests, so the accept queue drains between them and fewer stall.
func TestReactionStalls(t *testing.T) {
	timeouts := func(issueRate float64, cost time.Duration) uint64 {
		cfg := storm(t, 10000, "exp:initial=1s,max=60s,jitter=0.5,spread=100ms-500ms", 1)
		cfg.IssueRate, cfg.ReactorCost = issueRate, cost
		_, sum := run(t, cfg)
		return sum.Connect.Failures[connerr.HandshakeTimeout.String()]
	}
	if none, queued := timeouts(0, 0), timeouts(0, 44*time.Microsecond); queued < none+none/2 {
		t.Errorf("devices: %d handshake timeouts with the reactors' queue, %d without; want half as many again or more", queued, none)
	}
	if none, queued := timeouts(40000, 0), timeouts(40000, 44*time.Microsecond); queued > none-none/5 {
		t.Errorf("one machine: %d handshake timeouts with the reactors' queue, %d without; want a fifth fewer or less", queued, none)
	}
}

// TestReactorDefaults: the reactors default to the modelled machine's
// loadgen, not to the machine that simulates; a negative cost is refused.
func TestReactorDefaults(t *testing.T) {
	if cfg := (Config{Client: spec.Client{Clients: 10}}).withDefaults(); cfg.Client.Reactors != DefaultLoadgenReactors {
		t.Errorf("default: %d reactors, want %d", cfg.Client.Reactors, DefaultLoadgenReactors)
	}
	if cfg := (Config{Client: spec.Client{Clients: 10}, Cores: 8}).withDefaults(); cfg.Client.Reactors != 4 {
		t.Errorf("8 cores: %d reactors, want 4", cfg.Client.Reactors)
	}
	if cfg := (Config{Client: spec.Client{Clients: 10, Reactors: 3}}).withDefaults(); cfg.Client.Reactors != 3 {
		t.Errorf("3 reactors given: %d", cfg.Client.Reactors)
	}
	cfg := Config{Client: spec.Client{Clients: 10, Policy: backoff.MustParse("fixed:initial=1s")}, Duration: time.Second, ReactorCost: -1}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "ReactorCost") {
		t.Errorf("a negative ReactorCost: %v, want an error naming it", err)
	}
}
