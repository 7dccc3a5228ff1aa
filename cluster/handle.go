package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stampede-dev/stampede/agent"
	"github.com/stampede-dev/stampede/results"
)

// Agent is the coordinator's view of one agent.
type Agent struct {
	// Name names the agent in logs and results ("loadgen 0", "target").
	Name string
	// Transport reaches the agent.
	Transport agent.Transport
	// Plan is the agent's role and configuration.
	Plan agent.Plan
	// Proc is the agent's process when it runs on this machine (its exit
	// status explains a lost agent); nil otherwise.
	Proc *agent.Proc
	// Ready is what the agent said when it accepted the plan.
	Ready agent.Ready
	// Member names the agent process on another host that runs this
	// role (one of several roles or loadgen shares it may run); empty for
	// an agent of this machine.
	Member string
	// MemberHost and MemberPID are where that agent process runs.
	MemberHost string
	MemberPID  int
	// Offset is the agent's clock estimate (the coordinator's clock minus
	// the agent's) within OffsetError; zero on this machine.
	Offset, OffsetError time.Duration

	index   int
	co      *Coordinator
	nextID  atomic.Uint64
	mu      sync.Mutex
	pending map[uint64]chan agent.Reply
	pids    []int
	readyc  chan error // one value: nil on ready, else why not
	final   chan error // one value: nil when its part is over, else why it ended early
	// partials are the recovery chunks received so far; recovered gets
	// one value: nil when the last chunk came, else why it never will.
	partials  []results.RecoveryPartial
	resubs    []results.RecoveryPartial // the same of the re-subscribed transitions
	recovered chan error
	gone      chan struct{}    // closed when the agent's messages end
	stopped   atomic.Bool      // the coordinator told it to stop
	lostFlag  atomic.Bool      // its messages ended before its final one
	started   time.Time        // when a loadgen began (its Progress.Started)
	lostAt    time.Time        // when it was found lost
	heard     atomic.Int64     // when its last message came (Unix ns; 0: none yet)
	host      *agent.HostStats // the latest figures of its host (another host's agent)
}

// HostStats returns the latest figures of the agent's host that it sent
// (the highest HostStats.N), or nil: an agent of this machine sends none.
func (a *Agent) HostStats() *agent.HostStats {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.host
}

// keepHost keeps h when it is later than what the agent sent before.
func (a *Agent) keepHost(h *agent.HostStats) {
	if h == nil {
		return
	}
	a.mu.Lock()
	if a.host == nil || h.N > a.host.N {
		a.host = h
	}
	a.mu.Unlock()
}

// Started returns when a loadgen agent began its load, on the
// coordinator's clock (zero until it said so).
func (a *Agent) Started() time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.started
}

// LostAt returns when the agent was found lost (zero unless Lost).
func (a *Agent) LostAt() time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.lostAt
}

// MemberName is the member the agent belongs to, or its own name.
func (a *Agent) MemberName() string {
	if a.Member != "" {
		return a.Member
	}
	return a.Name
}

// Stop tells the agent to stop, without waiting: an agent that failed no
// longer reads, and a send to it may block until its transport is closed.
func (a *Agent) Stop() {
	if a.stopped.Swap(true) {
		return
	}
	go func() { _ = a.send(agent.Message{Kind: agent.KindStop}) }()
}

// MaxMessageBytes is the size of the largest message received from the
// agent (0 when its transport does not say).
func (a *Agent) MaxMessageBytes() int {
	if m, ok := a.Transport.(interface{ MaxReceived() int }); ok {
		return m.MaxReceived()
	}
	return 0
}

// Index is the agent's place in the run, in the order agents were placed.
func (a *Agent) Index() int { return a.index }

// Lost reports whether the agent's messages ended before its final one
// without the coordinator stopping it.
func (a *Agent) Lost() bool { return a.lostFlag.Load() }

// PIDs returns the processes of the agent's role: a group's processes, or
// the agent itself.
func (a *Agent) PIDs() []int {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.pids != nil {
		return append([]int(nil), a.pids...)
	}
	if a.Ready.PID != 0 {
		return []int{a.Ready.PID}
	}
	return nil
}

// Call sends a control request and waits for its reply.
func (a *Agent) Call(ctx context.Context, c agent.Control) (agent.Reply, error) {
	c.ID = a.nextID.Add(1)
	ch := make(chan agent.Reply, 1)
	a.mu.Lock()
	a.pending[c.ID] = ch
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		delete(a.pending, c.ID)
		a.mu.Unlock()
	}()
	if err := a.send(agent.Message{Kind: agent.KindControl, Control: &c}); err != nil {
		return agent.Reply{}, fmt.Errorf("cluster: %s: %w", a.Name, err)
	}
	select {
	case r := <-ch:
		if r.Error != "" {
			return r, fmt.Errorf("%s: %s", a.Name, r.Error)
		}
		return r, nil
	case <-a.gone:
		return agent.Reply{}, fmt.Errorf("cluster: %s is gone", a.Name)
	case <-ctx.Done():
		return agent.Reply{}, ctx.Err()
	}
}

// send sends one message to the agent.
func (a *Agent) send(m agent.Message) error {
	m.V, m.Agent = agent.Version, a.index
	return a.Transport.Send(m)
}

// readState is what the coordinator has heard of an agent: whether its
// ready, final and recovery messages came (or their waits were ended).
type readState struct{ readied, finished, recovered bool }

// read dispatches the agent's messages until they end.
func (a *Agent) read() {
	defer close(a.gone)
	var st readState
	for {
		m, err := a.Transport.Recv()
		if err != nil {
			if !st.finished {
				err = a.lost(err)
			} else if !st.recovered {
				err = fmt.Errorf("gone before its recovery figures (%v)", err)
			}
			a.end(&st, err)
			return
		}
		if m.V != agent.Version {
			// Another build of the agent (a stale stampede-worker beside
			// stampede): its messages cannot be trusted to mean the same.
			a.Stop()
			a.end(&st, fmt.Errorf("the agent speaks protocol version %d, this coordinator %d: rebuild both binaries (make build)", m.V, agent.Version))
			for {
				if _, err := a.Transport.Recv(); err != nil {
					return
				}
			}
		}
		a.heard.Store(a.co.now().UnixNano())
		a.dispatch(m, &st)
	}
}

// heardAt is when the agent's last message came (zero: none yet).
func (a *Agent) heardAt() time.Time {
	if ns := a.heard.Load(); ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}

// end ends every wait on the agent not yet over with err.
func (a *Agent) end(st *readState, err error) {
	if !st.readied {
		a.readyc <- err
	}
	if !st.finished {
		a.final <- err
	}
	if !st.recovered {
		a.recovered <- err
	}
	st.readied, st.finished, st.recovered = true, true, true
}

// dispatch handles one message of the agent.
func (a *Agent) dispatch(m agent.Message, st *readState) {
	switch m.Kind {
	case agent.KindReady:
		if m.Ready != nil && !st.readied {
			a.mu.Lock()
			a.Ready = *m.Ready
			a.pids = m.Ready.PIDs
			a.mu.Unlock()
			a.keepHost(m.Ready.HostStats)
			st.readied = true
			a.readyc <- nil
		}
	case agent.KindProgress:
		if m.Progress == nil {
			return
		}
		a.mu.Lock()
		if m.Progress.PIDs != nil {
			a.pids = m.Progress.PIDs
		}
		if !m.Progress.Started.IsZero() && a.started.IsZero() {
			a.started = m.Progress.Started
		}
		a.mu.Unlock()
		a.keepHost(m.Progress.HostStats)
		if a.co.OnProgress != nil {
			a.co.OnProgress(a, *m.Progress)
		}
	case agent.KindReply:
		if m.Reply == nil {
			return
		}
		a.mu.Lock()
		ch := a.pending[m.Reply.ID]
		a.mu.Unlock()
		if ch != nil {
			ch <- *m.Reply
		}
	case agent.KindEvent:
		if m.Event != nil && a.co.OnEvent != nil {
			a.co.OnEvent(a, *m.Event)
		}
	case agent.KindResults:
		if m.Piece == nil {
			return
		}
		if err := a.co.addPiece(a, m.Piece); err != nil && !st.finished {
			st.finished = true
			a.final <- fmt.Errorf("refused a results piece: %w", err)
		}
	case agent.KindFinal:
		if m.Final != nil {
			a.keepHost(m.Final.HostStats)
		}
		if !st.finished {
			st.finished = true
			a.final <- nil
		}
	case agent.KindRecovery:
		if m.Recovery == nil || st.recovered {
			return
		}
		a.mu.Lock()
		a.partials = results.MergeRecoveryPartials(a.partials, m.Recovery.Partials)
		if m.Recovery.Resubscribed != nil {
			a.resubs = results.MergeRecoveryPartials(a.resubs, m.Recovery.Resubscribed)
		}
		a.mu.Unlock()
		if m.Recovery.Last {
			st.recovered = true
			a.recovered <- nil
		}
	case agent.KindError:
		a.end(st, errors.New(m.Error))
	}
}

// lost reports an agent whose messages ended before its final one: a crash
// event (with its exit status, when it is a local process) unless the
// coordinator had stopped it, and the error that explains it.
func (a *Agent) lost(err error) error {
	ev := agent.Event{Kind: agent.EventCrash, Role: a.Plan.Role, PID: a.Ready.PID, Exit: err.Error(), At: time.Now()}
	if a.Proc != nil {
		ev.PID = a.Proc.PID()
		select {
		case <-a.Proc.Done():
		case <-time.After(2 * time.Second):
		}
		if werr := a.Proc.ExitErr(); werr != nil {
			ev.Exit = werr.Error()
		}
	}
	if !a.stopped.Load() {
		a.mu.Lock()
		a.lostAt = time.Now()
		a.mu.Unlock()
		a.lostFlag.Store(true)
		if a.co.OnEvent != nil {
			a.co.OnEvent(a, ev)
		}
		if a.co.OnLost != nil {
			a.co.OnLost(a, err)
		}
	}
	return fmt.Errorf("agent lost (%s)", ev.Exit)
}
