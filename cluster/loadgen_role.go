package cluster

import (
	"context"
	"fmt"
	"time"

	"github.com/stampede-dev/stampede/loadgen"
)

// loadgen runs a loadgen share: ready, wait for the start barrier, run the
// fleet until the planned duration ends or the coordinator says stop (or
// goes away), then send the final report.
func (a *agent) loadgen(ctx context.Context) error {
	cfg := *a.plan.Loadgen
	if err := a.ready(Ready{}); err != nil {
		return err
	}
	m, err := a.t.Recv()
	if err != nil {
		return fmt.Errorf("cluster: agent %d waiting for start: %w", a.id, err)
	}
	if m.Kind == KindStop {
		return nil
	}
	if m.Kind != KindStart || m.Start == nil {
		return fail(a.t, a.id, fmt.Errorf("cluster: agent %d expected start, got %q", a.id, m.Kind))
	}
	cfg.Start = m.Start.At
	fleet, err := loadgen.New(cfg)
	if err != nil {
		return fail(a.t, a.id, err)
	}

	runCtx, cancel := context.WithDeadline(ctx, m.Start.At.Add(m.Start.Duration))
	defer cancel()
	// The coordinator may stop the run early; a closed transport (the
	// coordinator is gone) stops it at once.
	go func() {
		for {
			m, err := a.t.Recv()
			if err != nil || m.Kind == KindStop {
				cancel()
				return
			}
		}
	}()
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(ProgressInterval)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case now := <-tick.C:
				_ = a.send(Message{Kind: KindProgress, Progress: &Progress{At: now, Stats: fleet.Stats()}})
			}
		}
	}()
	rep, err := fleet.Run(runCtx)
	close(done)
	if err != nil {
		return fail(a.t, a.id, err)
	}
	wire, err := EncodeReport(rep)
	if err != nil {
		return fail(a.t, a.id, err)
	}
	return a.send(Message{Kind: KindFinal, Final: &Final{Report: &wire}})
}
