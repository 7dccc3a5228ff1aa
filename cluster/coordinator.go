package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stampede-dev/stampede/loadgen"
	"github.com/stampede-dev/stampede/results"
)

// Worker is the coordinator's view of one worker.
type Worker struct {
	// Transport reaches the worker.
	Transport Transport
	// Plan is the worker's share.
	Plan Plan
	// Ready is what the worker said when it accepted the plan.
	Ready Ready
}

// Coordinator drives a set of workers through one run.
type Coordinator struct {
	// Workers are the run's workers, each with its plan.
	Workers []*Worker
	// StartDelay is the margin between the last worker being ready and the
	// start instant, so every worker is waiting when it comes. Zero means
	// DefaultStartDelay.
	StartDelay time.Duration
	// ReadyTimeout bounds the wait for every worker to accept its plan.
	// Zero means DefaultReadyTimeout.
	ReadyTimeout time.Duration
	// FinalTimeout bounds the wait for final reports after the run's end.
	// Zero means DefaultFinalTimeout.
	FinalTimeout time.Duration
	// OnStart, if set, is called with the start instant once it is chosen,
	// before any worker starts: the chaos supervisor aligns to it.
	OnStart func(at time.Time)
	// OnProgress, if set, receives each worker's live counters.
	OnProgress func(worker int, p Progress)
	// Now reads the clock; nil means time.Now.
	Now func() time.Time
}

// Defaults of Coordinator.
const (
	DefaultStartDelay   = 500 * time.Millisecond
	DefaultReadyTimeout = 30 * time.Second
	DefaultFinalTimeout = 60 * time.Second
)

// Run plans, starts and collects the workers. The run lasts duration from
// the start instant, or until ctx is done, when the workers are told to stop
// and still send their final reports. It returns the merged report of every
// worker.
func (c *Coordinator) Run(ctx context.Context, duration time.Duration) (*results.Report, error) {
	if len(c.Workers) == 0 {
		return nil, errors.New("cluster: no workers")
	}
	now := c.Now
	if now == nil {
		now = time.Now
	}
	for i, w := range c.Workers {
		p := w.Plan
		if err := w.Transport.Send(Message{Kind: KindPlan, Worker: i, Plan: &p}); err != nil {
			return nil, fmt.Errorf("cluster: worker %d: %w", i, err)
		}
	}

	msgs := make(chan Message, 16*len(c.Workers))
	errs := make(chan error, len(c.Workers))
	for i, w := range c.Workers {
		go func(i int, t Transport) {
			for {
				m, err := t.Recv()
				if err != nil {
					errs <- fmt.Errorf("cluster: worker %d: %w", i, err)
					return
				}
				m.Worker = i
				msgs <- m
				if m.Kind == KindFinal || m.Kind == KindError {
					return
				}
			}
		}(i, w.Transport)
	}

	// Barrier: every worker ready.
	readyTimeout := orDefault(c.ReadyTimeout, DefaultReadyTimeout)
	timer := time.NewTimer(readyTimeout)
	defer timer.Stop()
	for ready := 0; ready < len(c.Workers); {
		select {
		case m := <-msgs:
			switch m.Kind {
			case KindReady:
				c.Workers[m.Worker].Ready = *m.Ready
				ready++
			case KindError:
				c.stopAll()
				return nil, fmt.Errorf("cluster: worker %d: %s", m.Worker, m.Error)
			}
		case err := <-errs:
			c.stopAll()
			return nil, err
		case <-timer.C:
			c.stopAll()
			return nil, fmt.Errorf("cluster: %d of %d workers not ready after %s", len(c.Workers)-ready, len(c.Workers), readyTimeout)
		case <-ctx.Done():
			c.stopAll()
			return nil, ctx.Err()
		}
	}

	at := now().Add(orDefault(c.StartDelay, DefaultStartDelay))
	if c.OnStart != nil {
		c.OnStart(at)
	}
	for i, w := range c.Workers {
		if err := w.Transport.Send(Message{Kind: KindStart, Worker: i, Start: &Start{At: at, Duration: duration}}); err != nil {
			c.stopAll()
			return nil, fmt.Errorf("cluster: worker %d: %w", i, err)
		}
	}

	merged := results.NewReport(at, 0)
	merged.Processes = 0
	finalWait := time.NewTimer(at.Add(duration).Sub(now()) + orDefault(c.FinalTimeout, DefaultFinalTimeout))
	defer finalWait.Stop()
	stopped := false
	var failures []error
	for pending := len(c.Workers); pending > 0; {
		select {
		case m := <-msgs:
			switch m.Kind {
			case KindProgress:
				if c.OnProgress != nil && m.Progress != nil {
					c.OnProgress(m.Worker, *m.Progress)
				}
			case KindFinal:
				pending--
				rep, err := m.Final.Report.Decode()
				if err == nil {
					err = merged.Merge(rep)
				}
				if err != nil {
					failures = append(failures, fmt.Errorf("cluster: worker %d: %w", m.Worker, err))
				}
			case KindError:
				pending--
				failures = append(failures, fmt.Errorf("cluster: worker %d: %s", m.Worker, m.Error))
			}
		case err := <-errs:
			pending--
			failures = append(failures, err)
		case <-ctx.Done():
			if !stopped {
				stopped = true
				c.stopAll()
			}
			ctx = context.Background() // keep collecting final reports
		case <-finalWait.C:
			c.stopAll()
			return nil, errors.Join(append(failures, fmt.Errorf("cluster: %d workers sent no final report in time", pending))...)
		}
	}
	if len(failures) > 0 {
		return nil, errors.Join(failures...)
	}
	return merged, nil
}

// stopAll tells every worker to stop, without waiting: a worker that has
// failed no longer reads, and a send to it may block until its transport is
// closed. Errors are ignored because a worker that cannot be reached has
// stopped already.
func (c *Coordinator) stopAll() {
	for i, w := range c.Workers {
		go func() { _ = w.Transport.Send(Message{Kind: KindStop, Worker: i}) }()
	}
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// Split divides one fleet into n worker configurations: consecutive client
// ID ranges, the ramp rate and the in-flight bound shared out so the whole
// fleet ramps as one. Every worker keeps all source addresses: the port
// budget is per source address, whichever process binds it, and clients
// pick their address by their global ID.
func Split(cfg loadgen.Config, n int) []loadgen.Config {
	if n < 1 {
		n = 1
	}
	if n > cfg.Clients && cfg.Clients > 0 {
		n = cfg.Clients
	}
	out := make([]loadgen.Config, n)
	first := cfg.FirstID
	for i := range out {
		c := cfg
		c.Clients = cfg.Clients / n
		if i < cfg.Clients%n {
			c.Clients++
		}
		c.FirstID = first
		first += uint32(c.Clients)
		c.Ramp = cfg.Ramp / float64(n)
		if cfg.MaxInflight > 0 {
			c.MaxInflight = max(1, cfg.MaxInflight/n)
		}
		out[i] = c
	}
	return out
}
