package storm

import (
	"context"
	"sync"
	"time"

	"github.com/stampede-dev/stampede/loadgen"
	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/results/summary"
)

// A Sidecar runs beside the fleet for the length of a run and adds to its
// results: a drill's deploy command (drill.Deploy), a load balancer's
// counters. Run calls its methods in this order:
//
//	Run(ctx, start)   at the start barrier, in its own goroutine; ctx ends at
//	                  the run's end (Duration) or at once on Ctrl-C, and Run
//	                  must return soon after, unless it is finishing what it
//	                  must not leave halfway (a deploy command): the run's
//	                  folder waits for it, the load already stopped
//	Events()          after Run returned: what it saw on the run's time axis
//	                  (offsets from start), merged into summary.json's events
//	                  and the report's timeline (an event with End or Ready
//	                  is drawn as a span); also while Run goes, for the live
//	                  page (an event without End yet is under way), so it
//	                  must be safe for concurrent use
//	WriteFiles(dir)   after summary.json and before report.html are written,
//	                  only with an Out folder: its own files, mode 0600
//
// A sidecar that fails says so through its events (Event.Exit) or its
// checks; the run goes on. A sidecar that is also a Checker gates the run.
type Sidecar interface {
	Run(ctx context.Context, start time.Time)
	Events() []results.Event
	WriteFiles(dir string) error
}

// A Checker is a sidecar that gates the run: Checks is called after Run
// returned with every event of the run (the sidecars' and the detected
// ones), and its outcomes go into summary.json "checks" and "pass", as an
// SLO's do.
type Checker interface {
	Checks(events []results.Event) []summary.Check
}

// A FleetReader is a sidecar that reads the fleet's live counters while
// it runs (a drill's deploy waits for the fleet to be connected): before
// Run, ReadFleet is given a function that returns the sum of the
// loadgens' latest counters, which they report every
// agent.ProgressInterval.
type FleetReader interface {
	ReadFleet(live func() loadgen.Stats)
}

// sidecars runs a run's sidecars.
type sidecars struct {
	list   []Sidecar
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// startSidecars starts every sidecar at the start barrier, a FleetReader
// reading live; they stop when ctx ends or stop is called.
func startSidecars(ctx context.Context, list []Sidecar, start time.Time, live func() loadgen.Stats) *sidecars {
	ctx, cancel := context.WithCancel(ctx)
	s := &sidecars{list: list, cancel: cancel}
	for _, sc := range list {
		if fr, ok := sc.(FleetReader); ok {
			fr.ReadFleet(live)
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			sc.Run(ctx, start)
		}()
	}
	return s
}

// stop ends every sidecar and waits for them; then their events.
func (s *sidecars) stop() []results.Event {
	s.cancel()
	s.wg.Wait()
	var out []results.Event
	for _, sc := range s.list {
		out = append(out, sc.Events()...)
	}
	return out
}
