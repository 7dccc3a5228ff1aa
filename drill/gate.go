package drill

import (
	"context"
	"fmt"
	"time"

	"github.com/stampede-dev/stampede/loadgen"
)

// DefaultMinConnected is the share of the fleet that must be connected
// before a deploy runs (Config.MinConnected).
const DefaultMinConnected = 0.9

// HandDeployGrace is how long after the end of its ramp a fleet whose
// deploy is done by hand (Config.WaitForOutage) has to reach
// Config.MinConnected.
const HandDeployGrace = 10 * time.Second

// reportLag is how long the fleet's live counters may trail it: each
// loadgen reports them once a second (agent.ProgressInterval), so a
// gate whose time has come waits this much longer for a report that
// reaches its share before it gives up.
const reportLag = 2 * time.Second

// gatePoll is how often a gate reads the fleet's counters.
const gatePoll = 100 * time.Millisecond

// NotConnectedError ends a drill whose fleet was not connected when its
// deploy was due: a deploy nothing measures is a deploy for nothing, so
// none ran (Config.MinConnected).
type NotConnectedError struct {
	// Connected is the number of clients connected at the last report.
	Connected int64
	// Clients is the fleet's size.
	Clients int
	// Min is the share that had to be connected.
	Min float64
	// At is when the drill gave up, from the start barrier.
	At time.Duration
	// ByHand is true for a deploy by hand (Config.WaitForOutage): the
	// user is told not to start it.
	ByHand bool
}

func (e *NotConnectedError) Error() string {
	what := "the deploy command was not run"
	if e.ByHand {
		what = "do not deploy now: nothing would measure it"
	}
	share := 0.0
	if e.Clients > 0 {
		share = float64(e.Connected) / float64(e.Clients)
	}
	return fmt.Sprintf("the fleet is not connected: %d of %d clients (%.0f%%) at %.1fs, short of the %.0f%% a deploy needs; %s",
		e.Connected, e.Clients, 100*share, e.At.Seconds(), 100*e.Min, what)
}

// fleetGate holds a deploy until the fleet is connected.
type fleetGate struct {
	live    func() loadgen.Stats // the fleet's latest counters; nil: no gate
	clients int
	min     float64 // share of clients; zero means DefaultMinConnected
	byHand  bool
	stop    func(error) // ends the run early, with the reason
}

// minShare is the share the gate requires.
func (g *fleetGate) minShare() float64 {
	if g.min == 0 {
		return DefaultMinConnected
	}
	return g.min
}

// reached reports whether the fleet's connected share is at least
// minShare, and the number connected.
func (g *fleetGate) reached() (bool, int64) {
	n := g.live().Connected
	return float64(n) >= g.minShare()*float64(g.clients), n
}

// wait returns nil as soon as the fleet's connected share reaches
// minShare, polling from now until by (from start). At by it stops the
// run (g.stop) and returns a *NotConnectedError; when ctx ends first it
// returns ctx.Err(). Without live counters it returns nil at once.
func (g *fleetGate) wait(ctx context.Context, start time.Time, by time.Duration) error {
	if g.live == nil {
		return nil
	}
	tick := time.NewTicker(gatePoll)
	defer tick.Stop()
	for {
		ok, n := g.reached()
		if ok {
			return nil
		}
		if at := time.Since(start); at >= by {
			err := &NotConnectedError{Connected: n, Clients: g.clients, Min: g.minShare(), At: at, ByHand: g.byHand}
			if g.stop != nil {
				g.stop(err)
			}
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}
