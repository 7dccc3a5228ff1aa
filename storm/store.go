package storm

import (
	"context"
	"time"

	"github.com/stampede-dev/stampede/spec"
	"github.com/stampede-dev/stampede/store"
)

// scopeStore puts the run's data in the target's store under its run id
// (store.ForRun: the Redis key prefix stampede:RUNID:, a PostgreSQL table
// of its own), checks that the store answers before any role is placed
// (store.Check), and removes the data when the run ends, after its results
// are counted and its agents stopped, unless the URL says keep=1 or names
// the prefix or table itself. A run with --agents only scopes it.
func (r *run) scopeStore(ctx context.Context) error {
	if r.cfg.external() || r.tcfg.Store == "" {
		return nil
	}
	u, owned, err := store.ForRun(r.tcfg.Store, r.runID)
	// With --agents the target's host opens the store, which this one
	// may not reach by the same address: it is neither checked nor
	// dropped from here.
	local := r.cfg.Agents <= 0
	if err == nil && local {
		err = store.Check(ctx, u)
	}
	if err != nil {
		return spec.Wrap("Server.Store", err)
	}
	r.tcfg.Store = u
	if owned && local {
		r.defer_(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := store.Drop(ctx, u); err != nil {
				r.logf("store: %v", err)
			}
		})
	}
	return nil
}
