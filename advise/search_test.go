package advise

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/chaos"
	"github.com/stampede-dev/stampede/sim"
	"github.com/stampede-dev/stampede/spec"
)

// benchLike is the bench's storm at a size of clients: backlog 128,
// accept rate 200 per 1,000 clients, TCP_SYNCNT 2, a 5 s upgrade
// deadline, an abrupt restart with 2 s down.
func benchLike(t testing.TB, clients int, policy string) sim.Config {
	t.Helper()
	sched, err := chaos.Parse("at 8s restart abrupt down=2s")
	if err != nil {
		t.Fatal(err)
	}
	cfg := sim.Config{Duration: 45 * time.Second, Schedule: sched}
	cfg.Client = spec.Client{Clients: clients, Policy: backoff.MustParse(policy), Seed: 1, SynRetries: 2, HandshakeTimeout: 5 * time.Second}
	cfg.Server = spec.Server{Backlog: 128, AcceptRate: float64(clients) / 5}
	cfg.Ramp = 0.9 * cfg.AcceptRate
	return cfg
}

func TestExplore(t *testing.T) {
	if os.Getenv("ADVISE_EXPLORE") == "" {
		t.Skip()
	}
	start := time.Now()
	cfg := Config{Sim: benchLike(t, 10000, ReferencePolicy)}
	if d := os.Getenv("ADVISE_MAXDELAY"); d != "" {
		cfg.MaxDelay, _ = time.ParseDuration(d)
	}
	res, err := Search(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d sims in %s, outage %s bound %s cap %.0f", res.Simulations, time.Since(start), res.Outage, res.Bound, res.Capacity.Per100ms())
	for _, c := range append([]Candidate{res.Current}, res.Best...) {
		t.Logf("%-70s r50 %.2f r99 %.2f r100 %.2f peak %.0f wasted %.3f within %v", c.Policy, c.R50, c.R99, c.R100, c.Peak, c.Wasted, c.WithinCapacity)
	}
	t.Log(res.Reason)
}
