package storm

import (
	"context"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/results/summary"
)

// PolicyRunner returns the run of base with one policy at a time, each
// into the folder it is given, recording settings(policy) as the run's
// settings (nil: base's): the real runs that check the policies advise
// compares (advise.Runner). A run that failed before it had figures
// returns its error and no summary.
func PolicyRunner(base Config, settings func(policy string) any) func(ctx context.Context, p backoff.Policy, dir string) (*summary.Summary, error) {
	return func(ctx context.Context, p backoff.Policy, dir string) (*summary.Summary, error) {
		cfg := base
		cfg.Fleet.Policy, cfg.Out = p, dir
		if settings != nil {
			cfg.Settings = settings(p.String())
		}
		res, err := Run(ctx, cfg)
		if res == nil {
			return nil, err
		}
		return res.Summary, err
	}
}
