package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/stampede-dev/stampede/agent"
	"github.com/stampede-dev/stampede/loadgen"
	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/spec"
)

// Coordinator places agents, starts them on one barrier, relays control
// requests, and collects their results.
type Coordinator struct {
	// StartDelay is the margin between the last agent being ready and the
	// start instant, so every agent is waiting when it comes. Zero means
	// DefaultStartDelay.
	StartDelay time.Duration
	// ReadyTimeout bounds the wait for an agent to accept its plan. Zero
	// means DefaultReadyTimeout.
	ReadyTimeout time.Duration
	// FinalTimeout bounds the wait for an agent's final report after the
	// run's end, and for its recovery figures after they are asked for:
	// the agent is given up once it has been silent that long (at the
	// latest FinalWaitLimit times that long). Zero means
	// DefaultFinalTimeout.
	FinalTimeout time.Duration
	// OnProgress, if set, receives each agent's live state.
	OnProgress func(a *Agent, p agent.Progress)
	// OnEvent, if set, hears of what nobody scheduled: a crash an agent
	// reports, or an agent lost (its messages ended before its final one).
	OnEvent func(a *Agent, e agent.Event)
	// OnLost, if set, hears of an agent lost: its messages ended (its
	// process died, its transport broke, its host went silent) before its
	// final one, without the coordinator stopping it.
	OnLost func(a *Agent, err error)
	// PerMember keeps each member's pieces apart as well (MemberReports):
	// its own histograms beside the merged ones.
	PerMember bool
	// Now reads the clock; nil means time.Now.
	Now func() time.Time

	mu      sync.Mutex
	agents  []*Agent
	abort   chan struct{}
	aborted sync.Once
	resubs  []results.RecoveryPartial // Recover's merged partials to re-subscribed

	// asmMu guards the assemblers alone: merging pieces is the
	// coordinator's heaviest work, and on a machine its fleet keeps busy it
	// must never hold up what needs the agents (the resource sampler's
	// pids, placing, the loss watch).
	asmMu   sync.Mutex
	asm     *results.Assembler            // the loadgens' pieces, merged as they come
	members map[string]*results.Assembler // each member's, with PerMember
	merging func()                        // tests: called as a merge begins
}

// Abort ends the collection early, as ctx ending does: the loadgens are
// told to stop and their reports still collected (--on-agent-loss fail).
func (c *Coordinator) Abort() {
	c.mu.Lock()
	if c.abort == nil {
		c.abort = make(chan struct{})
	}
	ch := c.abort
	c.mu.Unlock()
	c.aborted.Do(func() { close(ch) })
}

func (c *Coordinator) abortChan() chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.abort == nil {
		c.abort = make(chan struct{})
	}
	return c.abort
}

// MemberReports returns each member's own report (PerMember), by member
// name; the run's report is their exact merge.
func (c *Coordinator) MemberReports(start time.Time) (map[string]*results.Report, error) {
	clients := map[string]int{}
	procs := map[string]int{}
	for _, a := range c.Agents() {
		if a.Plan.Loadgen != nil {
			clients[a.MemberName()] += a.Plan.Loadgen.Clients
			procs[a.MemberName()]++
		}
	}
	c.asmMu.Lock()
	defer c.asmMu.Unlock()
	out := map[string]*results.Report{}
	for name, asm := range c.members {
		r, err := asm.Report(start, clients[name], procs[name])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out[name] = r
	}
	return out, nil
}

// Defaults of Coordinator.
const (
	DefaultStartDelay   = 500 * time.Millisecond
	DefaultReadyTimeout = 30 * time.Second
	DefaultFinalTimeout = 60 * time.Second
)

// Timeline returns a copy of the loadgens' timeline merged so far: the
// run's counters per 100 ms while it goes, merged across hosts (a live
// view's). Nil before the first piece.
func (c *Coordinator) Timeline() results.Timeline {
	c.asmMu.Lock()
	defer c.asmMu.Unlock()
	if c.asm == nil {
		return nil
	}
	return c.asm.Timeline()
}

// Agents returns the agents placed so far.
func (c *Coordinator) Agents() []*Agent {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*Agent(nil), c.agents...)
}

// Place sends a its plan and starts reading its messages; WaitReady waits
// for its answer.
func (c *Coordinator) Place(a *Agent) error {
	c.mu.Lock()
	a.index = len(c.agents)
	c.agents = append(c.agents, a)
	c.mu.Unlock()
	a.co = c
	a.pending = map[uint64]chan agent.Reply{}
	a.readyc = make(chan error, 1)
	a.final = make(chan error, 1)
	a.recovered = make(chan error, 1)
	if a.Plan.Loadgen != nil {
		c.asmMu.Lock()
		if c.asm == nil {
			c.asm = results.NewAssembler(a.Plan.Loadgen.HistInterval)
		}
		c.asmMu.Unlock()
	}
	a.gone = make(chan struct{})
	if a.Plan.Name == "" {
		a.Plan.Name = a.Name
	}
	p := a.Plan
	if err := a.send(agent.Message{Kind: agent.KindPlan, Plan: &p}); err != nil {
		return fmt.Errorf("cluster: %s: %w", a.Name, err)
	}
	go a.read()
	return nil
}

// WaitReady waits until every agent given said ready, one refused its
// plan, the ready timeout passed or ctx ended.
func (c *Coordinator) WaitReady(ctx context.Context, agents ...*Agent) error {
	timer := time.NewTimer(orDefault(c.ReadyTimeout, DefaultReadyTimeout))
	defer timer.Stop()
	for _, a := range agents {
		select {
		case err := <-a.readyc:
			if err != nil {
				return fmt.Errorf("cluster: %s: %w", a.Name, err)
			}
		case <-timer.C:
			return fmt.Errorf("cluster: %s not ready after %s", a.Name, orDefault(c.ReadyTimeout, DefaultReadyTimeout))
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Start sends every placed agent the start barrier, an instant StartDelay
// from now, and returns it.
func (c *Coordinator) Start(duration time.Duration) (time.Time, error) {
	at := c.now().Add(orDefault(c.StartDelay, DefaultStartDelay))
	for _, a := range c.Agents() {
		if err := a.send(agent.Message{Kind: agent.KindStart, Start: &agent.Start{At: at, Duration: duration}}); err != nil {
			return at, fmt.Errorf("cluster: %s: %w", a.Name, err)
		}
	}
	return at, nil
}

// Collect waits until every loadgen agent said its part is over and
// returns the merged report of every piece they streamed; when ctx ends
// first, the loadgens are told to stop and their pieces are still
// collected. A loadgen agent lost on the way is reported among lost; what
// it streamed before is merged all the same (late pieces are merged,
// never dropped). The merged report starts at start.
func (c *Coordinator) Collect(ctx context.Context, start time.Time, duration time.Duration) (merged *results.Report, lost []error) {
	loadgens := c.loadgens()
	w := c.finalWait(start.Add(duration))
	tick := time.NewTicker(w.poll())
	defer tick.Stop()
	done := ctx.Done()
	abort := c.abortChan()
	stopAll := func() {
		for _, l := range loadgens {
			l.Stop()
		}
	}
	type final struct {
		a   *Agent
		err error
	}
	finals := make(chan final, len(loadgens))
	clients := 0
	for _, a := range loadgens {
		clients += a.Plan.Loadgen.Clients
		go func() { finals <- final{a, <-a.final} }()
	}
	got := map[*Agent]bool{}
	for len(got) < len(loadgens) {
		select {
		case f := <-finals:
			if got[f.a] {
				continue // given up on already
			}
			got[f.a] = true
			if f.err != nil {
				lost = append(lost, fmt.Errorf("%s: %w", f.a.Name, f.err))
			}
		case <-done:
			done = nil
			stopAll()
		case <-abort:
			abort = nil
			stopAll()
		case <-tick.C:
			for _, a := range loadgens {
				if got[a] {
					continue
				}
				if silent, over := w.over(a); over {
					got[a] = true
					a.Stop()
					lost = append(lost, fmt.Errorf("%s: no final message in time (silent for %s)", a.Name, silent.Round(time.Millisecond)))
				}
			}
		}
	}
	c.asmMu.Lock()
	defer c.asmMu.Unlock()
	if c.asm == nil {
		c.asm = results.NewAssembler(0)
	}
	merged, err := c.asm.Report(start, clients, len(loadgens))
	if err != nil {
		return results.NewReport(start, clients), append(lost, err)
	}
	return merged, lost
}

// Recover asks every loadgen agent still there for its share of each
// event's recovery and returns the merged partials, one per event (events
// in Start order, summary.SortEvents). end is the run's end from its
// start. An agent lost before it answered is left out and named in the
// error; the partials of the others are returned all the same.
func (c *Coordinator) Recover(ctx context.Context, events []results.Event, end time.Duration) ([]results.RecoveryPartial, error) {
	times := make([]agent.EventTimes, len(events))
	for i, e := range events {
		times[i] = agent.EventTimes{Start: e.Start, End: e.End, Ready: e.Ready, NeverReady: e.NeverReady}
	}
	parts := make([]results.RecoveryPartial, len(events))
	var errs []error
	var asked []*Agent
	for _, a := range c.loadgens() {
		if a.Lost() {
			continue
		}
		if err := a.send(agent.Message{Kind: agent.KindRecover, Recover: &agent.Recover{Events: times, End: end}}); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", a.Name, err))
			continue
		}
		asked = append(asked, a)
	}
	// One wait for all, from the ask: an agent silent for FinalTimeout
	// since is left out, not waited for again.
	w := c.finalWait(c.now())
	tick := time.NewTicker(w.poll())
	defer tick.Stop()
	for _, a := range asked {
		var err error
		answered, over := false, false
		var silent time.Duration
		for !answered && !over {
			select {
			case err = <-a.recovered:
				answered = true
			case <-tick.C:
				silent, over = w.over(a)
			case <-ctx.Done():
				return parts, ctx.Err()
			}
		}
		switch {
		case !answered:
			errs = append(errs, fmt.Errorf("%s: no recovery figures in time (silent for %s)", a.Name, silent.Round(time.Millisecond)))
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: %w", a.Name, err))
		default:
			a.mu.Lock()
			parts = results.MergeRecoveryPartials(parts, a.partials)
			if a.resubs != nil {
				c.resubs = results.MergeRecoveryPartials(c.resubs, a.resubs)
			}
			a.mu.Unlock()
		}
	}
	return parts, errors.Join(errs...)
}

// Resubscribed returns the merged partials of the clients' re-subscribed
// transitions that Recover gathered with the others, one per event; nil
// when no agent's clients speak a session protocol.
func (c *Coordinator) Resubscribed() []results.RecoveryPartial { return c.resubs }

// loadgens returns the placed agents of role loadgen.
func (c *Coordinator) loadgens() []*Agent {
	var out []*Agent
	for _, a := range c.Agents() {
		if a.Plan.Role == agent.RoleLoadgen {
			out = append(out, a)
		}
	}
	return out
}

// addPiece merges a loadgen's piece into the run's results (and its
// member's, with PerMember). A piece the run's assembler refuses (a
// histogram of another configuration) is refused whole.
func (c *Coordinator) addPiece(a *Agent, p *results.Piece) error {
	c.asmMu.Lock()
	asm := c.asm
	c.asmMu.Unlock()
	if asm == nil {
		return errors.New("a results piece from an agent that is no loadgen")
	}
	// Decoding the piece needs no lock: each agent's reader decodes its
	// own, in parallel, and only the merge is one at a time.
	d, err := asm.Decode(*p)
	if err != nil {
		return err
	}
	c.asmMu.Lock()
	defer c.asmMu.Unlock()
	if c.merging != nil {
		c.merging()
	}
	if err := asm.AddDecoded(d); err != nil {
		return err
	}
	if !c.PerMember {
		return nil
	}
	if c.members == nil {
		c.members = map[string]*results.Assembler{}
	}
	m := c.members[a.MemberName()]
	if m == nil {
		m = results.NewAssembler(asm.Interval())
		c.members[a.MemberName()] = m
	}
	return m.AddDecoded(d)
}

// StopAll tells every agent to stop and waits up to grace for each to
// send its final message or go away.
func (c *Coordinator) StopAll(grace time.Duration) {
	agents := c.Agents()
	for _, a := range agents {
		a.Stop()
	}
	timer := time.NewTimer(grace)
	defer timer.Stop()
	for _, a := range agents {
		select {
		case <-a.gone:
		case <-timer.C:
			return
		}
	}
}

// now reads the coordinator's clock (Now, or time.Now).
func (c *Coordinator) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// Split divides one fleet into n loadgen shares: consecutive client ID
// ranges, the ramp rate and the in-flight bound shared out so the whole
// fleet ramps as one. Every share keeps all source addresses: the port
// budget is per source address, whichever process binds it, and clients
// pick their address by their global ID. The fleet's defaults are applied
// to the whole fleet first (spec.Client.WithDefaults), so a default that
// depends on its size (the ping interval) or bounds it as a whole (the
// in-flight bound) is the whole fleet's in every share.
func Split(cfg loadgen.Config, n int) []loadgen.Config {
	cfg.Client = cfg.Client.WithDefaults()
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
		c.MaxAttemptRate = cfg.MaxAttemptRate / float64(n)
		c.MaxInflight = max(1, cfg.MaxInflight/n)
		out[i] = c
	}
	return out
}

// SplitCounts divides one fleet into shares of the given numbers of
// clients (they must add up to cfg.Clients): consecutive client ID
// ranges, the ramp rate and the in-flight bound shared in proportion, so
// the whole fleet ramps as one. Agents of unequal capacity take unequal
// shares this way. The defaults are the whole fleet's, as in Split.
func SplitCounts(cfg loadgen.Config, counts []int) []loadgen.Config {
	cfg.Client = cfg.Client.WithDefaults()
	out := make([]loadgen.Config, 0, len(counts))
	first := cfg.FirstID
	for _, n := range counts {
		if n <= 0 {
			continue
		}
		c := cfg
		c.Clients = n
		c.FirstID = first
		first += uint32(n)
		frac := float64(n) / float64(max(1, cfg.Clients))
		c.Ramp = cfg.Ramp * frac
		c.MaxAttemptRate = cfg.MaxAttemptRate * frac
		c.MaxInflight = max(1, int(float64(cfg.MaxInflight)*frac))
		out = append(out, c)
	}
	return out
}

// ShareByCapacity divides clients among agents of the given declared
// capacities (0: not declared): in proportion to what they declared, an
// agent that declared nothing counting as the mean of those that did (or
// all equal when none did). It fails when every agent declared a capacity
// and together they hold fewer than clients.
func ShareByCapacity(clients int, capacities []int) ([]int, error) {
	n := len(capacities)
	if n == 0 {
		return nil, errors.New("no loadgen agent")
	}
	declared, sum := 0, 0
	for _, c := range capacities {
		if c > 0 {
			declared++
			sum += c
		}
	}
	if declared == n && sum < clients {
		return nil, spec.Errorf("Client.Clients", "%d: the loadgen agents declared a capacity of %d clients in all", clients, sum)
	}
	w := make([]float64, n)
	mean := 1.0
	if declared > 0 {
		mean = float64(sum) / float64(declared)
	}
	total := 0.0
	for i, c := range capacities {
		w[i] = mean
		if c > 0 {
			w[i] = float64(c)
		}
		total += w[i]
	}
	out := make([]int, n)
	given := 0
	for i := range out {
		out[i] = int(float64(clients) * w[i] / total)
		given += out[i]
	}
	// The remainder of the rounding, one client each from the first.
	for i := 0; given < clients; i = (i + 1) % n {
		out[i]++
		given++
	}
	return out, nil
}
