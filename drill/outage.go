package drill

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/stampede-dev/stampede/loadgen"
	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/results/summary"
)

// OutageWatch is --wait-for-outage as a storm.Sidecar: no command runs,
// the user deploys by hand, and the "outage" check passes when the
// clients saw at least one outage (summary.DetectOutages, docs/results.md
// "Outages detected from the clients' side"). A fleet not connected by
// the end of its ramp and HandDeployGrace stops the run first, so that
// nobody deploys into a fleet that is not there.
type OutageWatch struct {
	gate     fleetGate
	deadline time.Duration // from the start: the end of the ramp and HandDeployGrace
	mu       sync.Mutex
	notReady error // the gate's *NotConnectedError
}

// ReadFleet is storm.FleetReader: the gate reads the fleet's counters.
func (w *OutageWatch) ReadFleet(live func() loadgen.Stats) { w.gate.live = live }

// Run waits for the fleet to be connected, and stops the run when it is
// not by the deadline; the outage is found in the fleet's record
// afterwards.
func (w *OutageWatch) Run(ctx context.Context, start time.Time) {
	if err := w.gate.wait(ctx, start, w.deadline); err != nil && ctx.Err() == nil {
		w.mu.Lock()
		w.notReady = err
		w.mu.Unlock()
	}
}

// Events returns none: the detected outages are the run's own events.
func (*OutageWatch) Events() []results.Event { return nil }

// WriteFiles writes nothing.
func (*OutageWatch) WriteFiles(string) error { return nil }

// Checks returns the "outage" check.
func (w *OutageWatch) Checks(events []results.Event) []summary.Check {
	w.mu.Lock()
	notReady := w.notReady
	w.mu.Unlock()
	if notReady != nil {
		return []summary.Check{{Name: "outage", Pass: false, Detail: notReady.Error()}}
	}
	n := 0
	var first time.Duration
	for _, e := range events {
		if e.Detected {
			if n == 0 {
				first = e.Start
			}
			n++
		}
	}
	if n == 0 {
		return []summary.Check{{Name: "outage", Pass: false, Detail: "no outage was detected from the clients' side during the run: was the deploy done?"}}
	}
	return []summary.Check{{Name: "outage", Pass: true, Detail: fmt.Sprintf("%d outage(s) detected, the first at %.3fs", n, first.Seconds())}}
}
