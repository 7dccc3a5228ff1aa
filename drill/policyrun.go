package drill

import (
	"context"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/results/summary"
)

// PolicyRunner returns the drill of base with one policy at a time, each
// into the folder it is given, recording settings(policy) as the run's
// settings (nil: base's): the real runs against a server of the user's
// that check the policies advise compares (advise.Runner). A drill that
// failed before it had figures returns its error and no summary.
func PolicyRunner(base Config, settings func(policy string) any) func(ctx context.Context, p backoff.Policy, dir string) (*summary.Summary, error) {
	return func(ctx context.Context, p backoff.Policy, dir string) (*summary.Summary, error) {
		cfg := base
		cfg.Run.Fleet.Policy, cfg.Run.Out = p, dir
		if settings != nil {
			cfg.Run.Settings = settings(p.String())
		}
		res, err := Run(ctx, cfg)
		if res == nil {
			return nil, err
		}
		return res.Summary, err
	}
}
