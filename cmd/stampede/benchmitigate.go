package main

import (
	"fmt"
	"path/filepath"
	"slices"

	"github.com/urfave/cli/v2"

	"github.com/stampede-dev/stampede/chaos"
	"github.com/stampede-dev/stampede/mitigation"
	"github.com/stampede-dev/stampede/storm"
)

// benchMitigationPolicy is the policy a bench of mitigations runs without
// --policy: the fixed interval a fleet already in the field may have.
const benchMitigationPolicy = "fixed:initial=1s"

// benchMitigations sets a bench up to compare the mitigations: one
// policy, every kind with one window, checked before any socket opens.
func benchMitigations(c *cli.Context, bc *storm.BenchConfig) error {
	switch n := len(bc.Policies); {
	case n == 0:
		bc.Policies = []string{benchMitigationPolicy}
	case n > 1:
		return fmt.Errorf("--policy: --mitigations compares one policy, not %d", n)
	}
	if bc.Storm.Schedule == nil || !slices.ContainsFunc(bc.Storm.Schedule.Entries, isRestart) {
		return fmt.Errorf("--chaos: --mitigations needs a restart in the schedule (the mitigations act on one)")
	}
	window := mitigation.Window(bc.Storm.Fleet.Clients, bc.Storm.Target.AcceptRate)
	if c.IsSet("mitigation-window") {
		window = c.Duration("mitigation-window")
		if window < 1e9 {
			return fmt.Errorf("--mitigation-window: %v is below 1s (Retry-After carries whole seconds)", window)
		}
	}
	bc.Mitigations = mitigation.All(window)
	// A wss:// target adds its own: the ticket keys kept across the
	// restart (in the bench's folder), ECDSA instead of RSA.
	bc.Mitigations = append(bc.Mitigations, mitigation.TLS(bc.Storm.Target.Server, filepath.Join(bc.Out, "ticket.keys"))...)
	for _, m := range bc.Mitigations {
		if err := m.Check(bc.Storm.Target.Server); err != nil {
			return fmt.Errorf("--mitigations: %s: %w", m, flagError(err))
		}
	}
	return nil
}

func isRestart(e chaos.Entry) bool { return e.Event.Kind == chaos.Restart }
