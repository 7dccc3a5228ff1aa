package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/stampede-dev/stampede/loadgen"
)

// ProgressInterval is how often a worker reports its live counters.
const ProgressInterval = time.Second

// Serve runs one worker over t: it takes a plan, says ready, waits for the
// start barrier, runs its fleet until the planned duration ends or the
// coordinator says stop, and sends its final report. It returns when the
// run is over or ctx is done.
func Serve(ctx context.Context, t Transport) error {
	m, err := t.Recv()
	if err != nil {
		return fmt.Errorf("cluster: worker waiting for a plan: %w", err)
	}
	if m.Kind != KindPlan || m.Plan == nil {
		return fail(t, m.Worker, fmt.Errorf("cluster: worker expected a plan, got %q", m.Kind))
	}
	id, cfg := m.Worker, m.Plan.Loadgen
	if err := cfg.Validate(); err != nil {
		return fail(t, id, err)
	}
	host, _ := os.Hostname()
	if err := t.Send(Message{Kind: KindReady, Worker: id, Ready: &Ready{Host: host, PID: os.Getpid()}}); err != nil {
		return err
	}

	m, err = t.Recv()
	if err != nil {
		return fmt.Errorf("cluster: worker %d waiting for start: %w", id, err)
	}
	if m.Kind == KindStop {
		return nil
	}
	if m.Kind != KindStart || m.Start == nil {
		return fail(t, id, fmt.Errorf("cluster: worker %d expected start, got %q", id, m.Kind))
	}
	cfg.Start = m.Start.At
	fleet, err := loadgen.New(cfg)
	if err != nil {
		return fail(t, id, err)
	}

	runCtx, cancel := context.WithDeadline(ctx, m.Start.At.Add(m.Start.Duration))
	defer cancel()
	// The coordinator may stop the run early; a closed transport stops it too.
	go func() {
		for {
			m, err := t.Recv()
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
				_ = t.Send(Message{Kind: KindProgress, Worker: id, Progress: &Progress{At: now, Stats: fleet.Stats()}})
			}
		}
	}()
	rep, err := fleet.Run(runCtx)
	close(done)
	if err != nil {
		return fail(t, id, err)
	}
	wire, err := EncodeReport(rep)
	if err != nil {
		return fail(t, id, err)
	}
	return t.Send(Message{Kind: KindFinal, Worker: id, Final: &Final{Report: wire}})
}

// fail tells the coordinator why the worker stopped and returns err.
func fail(t Transport, id int, err error) error {
	if sendErr := t.Send(Message{Kind: KindError, Worker: id, Error: err.Error()}); sendErr != nil && !errors.Is(sendErr, io.ErrClosedPipe) {
		return errors.Join(err, sendErr)
	}
	return err
}
