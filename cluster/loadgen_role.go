package cluster

import (
	"context"
	"fmt"
	"time"

	"github.com/stampede-dev/stampede/loadgen"
	"github.com/stampede-dev/stampede/results"
)

// pieceBytes bounds the JSON of one results piece a loadgen sends: far
// under results.MaxMessageBytes, so that what the coordinator buffers and
// decodes at once per agent stays small (the last pieces of every agent
// arrive together).
const pieceBytes = 128 << 10

// maxReturns bounds the return counts of one recovery message: each is
// well under 48 bytes of JSON, so a message stays under pieceBytes.
const maxReturns = pieceBytes / 48

// loadgen runs a loadgen share: ready, wait for the start barrier, run the
// fleet until the planned duration ends or the coordinator says stop (or
// goes away), streaming its results in bounded pieces every
// ProgressInterval and the rest at the end; then answer the coordinator's
// recovery request from its clients' transitions, which never leave this
// process (docs/agent.md).
func (a *agent) loadgen(ctx context.Context) error {
	cfg := *a.plan.Loadgen
	if err := a.ready(Ready{}); err != nil {
		return err
	}
	msgs, gone := a.receive()
	var m Message
	select {
	case m = <-msgs:
	case <-gone:
		return fmt.Errorf("cluster: agent %d: the coordinator went away before the start", a.id)
	case <-ctx.Done():
		return ctx.Err()
	}
	if m.Kind == KindStop {
		return nil
	}
	if m.Kind != KindStart || m.Start == nil {
		return fail(a.t, a.id, fmt.Errorf("cluster: agent %d expected start, got %q", a.id, m.Kind))
	}
	start := m.Start.At
	cfg.Start = start
	fleet, err := loadgen.NewStreamed(cfg) // every result leaves in pieces
	if err != nil {
		return fail(a.t, a.id, err)
	}

	// Wait for the start here, so this share's start skew (how late it
	// began, on the run's time axis) is measured and reported once.
	if wait := time.Until(start); wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-gone:
			t.Stop()
			return fmt.Errorf("cluster: agent %d: the coordinator went away before the start", a.id)
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
	started := time.Now()
	_ = a.send(Message{Kind: KindProgress, Progress: &Progress{At: started, Started: started}})

	runCtx, cancel := context.WithDeadline(ctx, start.Add(m.Start.Duration))
	defer cancel()
	pieces := 0
	sendPieces := func(upTo time.Duration) error {
		ps, err := fleet.Drain(upTo, pieceBytes)
		if err != nil {
			return err
		}
		for i := range ps {
			if err := a.send(Message{Kind: KindResults, Piece: &ps[i]}); err != nil {
				return err
			}
			pieces++
		}
		return nil
	}
	// Progress and pieces every interval; the coordinator may stop the
	// run early, and a closed transport (the coordinator is gone) stops
	// it at once.
	done := make(chan struct{})
	streamErr := make(chan error, 1)
	go func() {
		tick := time.NewTicker(ProgressInterval)
		defer tick.Stop()
		gone := gone // this loop's own copy: the recovery wait below still needs the channel
		for {
			select {
			case <-done:
				streamErr <- nil
				return
			case m := <-msgs:
				if m.Kind == KindStop {
					cancel()
				}
			case <-gone:
				cancel()
				gone = nil // cancelled once; the loop ends with done
			case now := <-tick.C:
				_ = a.send(Message{Kind: KindProgress, Progress: &Progress{At: now, Stats: fleet.Stats()}})
				if err := sendPieces(now.Sub(start)); err != nil {
					cancel()
					streamErr <- err
					return
				}
			}
		}
	}()
	rep, err := fleet.Run(runCtx)
	close(done)
	if serr := <-streamErr; err == nil {
		err = serr
	}
	if err != nil {
		return fail(a.t, a.id, err)
	}
	if err := sendPieces(results.End); err != nil {
		return fail(a.t, a.id, err)
	}
	// The flow of transitions: what outage detection and the first-connect
	// rate need of them, bounded by the run's length. The transitions are
	// sorted in place for it and then for the recovery partials, which
	// then read them without a copy each.
	results.SortByTime(rep.Transitions)
	fl := results.FlowOf(rep.Transitions)
	results.SortByClient(rep.Transitions)
	ps, err := fl.Pieces(pieceBytes) // not an Assembler's: it holds a cell per millisecond of the run
	if err != nil {
		return fail(a.t, a.id, err)
	}
	for i := range ps {
		if err := a.send(Message{Kind: KindResults, Piece: &ps[i]}); err != nil {
			return err
		}
		pieces++
	}
	if err := a.send(Message{Kind: KindFinal, Final: &Final{Pieces: pieces}}); err != nil {
		return err
	}

	// The recovery exchange: wait for the run's events, answer with this
	// share's partials, then stop.
	for {
		select {
		case m := <-msgs:
			switch m.Kind {
			case KindStop:
				return nil
			case KindRecover:
				if m.Recover == nil {
					continue
				}
				return a.recovery(rep, m.Recover)
			}
		case <-gone:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// recovery sends this share's recovery partials for the run's events.
func (a *agent) recovery(rep *results.Report, r *Recover) error {
	events := make([]results.Event, len(r.Events))
	for i, e := range r.Events {
		events[i] = results.Event{Start: e.Start, End: e.End, Ready: e.Ready, NeverReady: e.NeverReady}
	}
	chunks := results.SplitPartials(results.RecoveryPartials(rep.Transitions, events, r.End), maxReturns)
	for i, c := range chunks {
		if err := a.send(Message{Kind: KindRecovery, Recovery: &Recovery{Partials: c, Last: i == len(chunks)-1}}); err != nil {
			return err
		}
	}
	return nil
}

// receive reads the agent's messages into a channel until the transport
// fails (the coordinator is gone), when it closes gone.
func (a *agent) receive() (msgs <-chan Message, gone <-chan struct{}) {
	ch := make(chan Message, 4)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			m, err := a.t.Recv()
			if err != nil {
				return
			}
			ch <- m
		}
	}()
	return ch, done
}
