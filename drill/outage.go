package drill

import (
	"context"
	"fmt"
	"time"

	"github.com/stampede-dev/stampede/results"
)

// OutageWatch is --wait-for-outage as a storm.Sidecar: no command runs,
// the user deploys by hand, and the "outage" check passes when the
// clients saw at least one outage (results.DetectOutages, docs/results.md
// "Outages detected from the clients' side").
type OutageWatch struct{}

// Run does nothing: the outage is found in the fleet's record afterwards.
func (OutageWatch) Run(context.Context, time.Time) {}

// Events returns none: the detected outages are the run's own events.
func (OutageWatch) Events() []results.Event { return nil }

// WriteFiles writes nothing.
func (OutageWatch) WriteFiles(string) error { return nil }

// Checks returns the "outage" check.
func (OutageWatch) Checks(events []results.Event) []results.Check {
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
		return []results.Check{{Name: "outage", Pass: false, Detail: "no outage was detected from the clients' side during the run: was the deploy done?"}}
	}
	return []results.Check{{Name: "outage", Pass: true, Detail: fmt.Sprintf("%d outage(s) detected, the first at %.3fs", n, first.Seconds())}}
}
