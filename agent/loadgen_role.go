package agent

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
	st, err := a.awaitStart(ctx, msgs, gone)
	if st == nil || err != nil {
		return err
	}
	start := st.At
	cfg.Start = start
	fleet, err := loadgen.NewStreamed(cfg) // every result leaves in pieces
	if err != nil {
		return fail(a.t, a.id, err)
	}
	if err := a.waitStart(ctx, start, gone); err != nil {
		return err
	}
	s := &shareStream{a: a, fleet: fleet, start: start}
	rep, err := s.run(ctx, st.Duration, msgs, gone)
	if err != nil {
		return fail(a.t, a.id, err)
	}
	if err := s.send(results.End); err != nil {
		return fail(a.t, a.id, err)
	}
	if err := s.finish(rep); err != nil {
		return err
	}
	return a.awaitRecover(ctx, rep, msgs, gone)
}

// awaitStart waits for the coordinator's start barrier; nil without an
// error when the coordinator said stop first.
func (a *agent) awaitStart(ctx context.Context, msgs <-chan Message, gone <-chan struct{}) (*Start, error) {
	var m Message
	select {
	case m = <-msgs:
	case <-gone:
		return nil, fmt.Errorf("agent: agent %d: the coordinator went away before the start", a.id)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if m.Kind == KindStop {
		return nil, nil
	}
	if m.Kind != KindStart || m.Start == nil {
		return nil, fail(a.t, a.id, fmt.Errorf("agent: agent %d expected start, got %q", a.id, m.Kind))
	}
	return m.Start, nil
}

// waitStart waits for the start instant here, so this share's start skew
// (how late it began, on the run's time axis) is measured and reported
// once, in its first progress message.
func (a *agent) waitStart(ctx context.Context, start time.Time, gone <-chan struct{}) error {
	if wait := time.Until(start); wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-gone:
			t.Stop()
			return fmt.Errorf("agent: agent %d: the coordinator went away before the start", a.id)
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
	started := time.Now()
	_ = a.send(Message{Kind: KindProgress, Progress: &Progress{At: started, Started: started}})
	return nil
}

// shareStream runs one loadgen share and streams its results.
type shareStream struct {
	a      *agent
	fleet  *loadgen.Fleet
	start  time.Time
	pieces int // results pieces sent so far
}

// send streams what the fleet recorded up to upTo from the start.
func (s *shareStream) send(upTo time.Duration) error {
	ps, err := s.fleet.Drain(upTo, pieceBytes)
	if err != nil {
		return err
	}
	for i := range ps {
		if err := s.a.send(Message{Kind: KindResults, Piece: &ps[i]}); err != nil {
			return err
		}
		s.pieces++
	}
	return nil
}

// run runs the fleet for duration from the start, sending progress and
// pieces every interval; the coordinator may stop the run early, and a
// closed transport (the coordinator is gone) stops it at once.
func (s *shareStream) run(ctx context.Context, duration time.Duration, msgs <-chan Message, gone <-chan struct{}) (*results.Report, error) {
	runCtx, cancel := context.WithDeadline(ctx, s.start.Add(duration))
	defer cancel()
	done := make(chan struct{})
	streamErr := make(chan error, 1)
	go func() {
		tick := time.NewTicker(ProgressInterval)
		defer tick.Stop()
		gone := gone // this loop's own copy: the recovery wait after the run still needs the channel
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
				_ = s.a.send(Message{Kind: KindProgress, Progress: &Progress{At: now, Stats: s.fleet.Stats()}})
				if err := s.send(now.Sub(s.start)); err != nil {
					cancel()
					streamErr <- err
					return
				}
			}
		}
	}()
	rep, err := s.fleet.Run(runCtx)
	close(done)
	if serr := <-streamErr; err == nil {
		err = serr
	}
	return rep, err
}

// finish sends the flow of transitions (what outage detection and the
// first-connect rate need of them, bounded by the run's length) and the
// final message. The transitions are sorted in place for the flow and then
// for the recovery partials, which then read them without a copy each.
func (s *shareStream) finish(rep *results.Report) error {
	results.SortByTime(rep.Transitions)
	fl := results.FlowOf(rep.Transitions)
	results.SortByClient(rep.Transitions)
	ps, err := fl.Pieces(pieceBytes) // not an Assembler's: it holds a cell per millisecond of the run
	if err != nil {
		return fail(s.a.t, s.a.id, err)
	}
	for i := range ps {
		if err := s.a.send(Message{Kind: KindResults, Piece: &ps[i]}); err != nil {
			return err
		}
		s.pieces++
	}
	return s.a.send(Message{Kind: KindFinal, Final: &Final{Pieces: s.pieces}})
}

// awaitRecover is the recovery exchange: wait for the run's events, answer
// with this share's partials, then stop.
func (a *agent) awaitRecover(ctx context.Context, rep *results.Report, msgs <-chan Message, gone <-chan struct{}) error {
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
	if len(rep.Resubscribed) > 0 {
		results.SortByClient(rep.Resubscribed)
		for _, c := range results.SplitPartials(results.RecoveryPartials(rep.Resubscribed, events, r.End), maxReturns) {
			if err := a.send(Message{Kind: KindRecovery, Recovery: &Recovery{Resubscribed: c}}); err != nil {
				return err
			}
		}
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
