package sim

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/stampede-dev/stampede/calibration"
	"github.com/stampede-dev/stampede/spec"
)

// CPUCosts are the CPU times the machine's cores give each operation when
// Config.Cores models them: what one end's process (or the kernel on its
// behalf) spends. A zero field is DefaultCPUCosts'.
type CPUCosts struct {
	// Attempt is the loadgen's CPU per connect attempt, whatever its
	// outcome: socket, connect (on loopback the kernel handles the SYN at
	// the listener in the connecting process's context, and drops it
	// there when the accept queue is full), epoll registration, the
	// failure's close and the backoff.
	Attempt time.Duration `json:"attempt"`
	// Upgrade is the loadgen's CPU per upgrade answered 101: the request
	// written, the answer read, the connection registered.
	Upgrade time.Duration `json:"upgrade"`
	// Disconnect is the loadgen's CPU per connection that ends (the
	// client's close).
	Disconnect time.Duration `json:"disconnect"`
	// Accept is the target process's CPU per connection accepted and
	// upgraded (an orphan's too).
	Accept time.Duration `json:"accept"`
	// Close is the target's CPU per connection a stopping process closes.
	Close time.Duration `json:"close"`
	// Segment is the kernel's CPU per retransmitted segment: a SYN, a
	// data or SYN-ACK retransmit of a stalled handshake, an orphan's, its
	// timer and its trip to the listener, dropped or not.
	Segment time.Duration `json:"segment"`
	// Ping is both ends' CPU per ping of a connected client, one every
	// Client.PingInterval (its default by the fleet's size, as run) from
	// an interval after it connected.
	Ping time.Duration `json:"ping"`
	// Slice is the scheduler's time slice: a process with work runs that
	// long (as many operations as fit, at least one) before the next
	// process with work has the core.
	Slice time.Duration `json:"slice"`
	// LoadgenShare is how much longer a loadgen process's slice is than a
	// target process's: the share of the cores the scheduler gives the
	// loadgen over the target when both have work.
	LoadgenShare float64 `json:"loadgen_share"`
	// LoadgenGrowth is how much the loadgen's Attempt and Upgrade grow
	// with the fleet, a fraction a million clients: a fleet of N clients
	// pays them times 1 + LoadgenGrowth × N/1,000,000 (AtFleet), as a
	// first connect measured on this machine grows with the fleet
	// (docs/performance.md "The cost law"); so Attempt, Upgrade and
	// Accept are a small fleet's costs.
	LoadgenGrowth float64 `json:"loadgen_growth"`
	// TargetGrowth is the same for the target's Accept.
	TargetGrowth float64 `json:"target_growth"`
}

// DefaultCPUCosts are the costs measured on this project's two-core
// machine, both ends on it: the embedded calibration file's sim.cpu.*
// figures, each with the command, date and machine it came from
// (package calibration; docs/simulator.md "Calibration").
var DefaultCPUCosts = CPUCosts{
	Attempt:       calibration.MustDuration("sim.cpu.attempt"),
	Upgrade:       calibration.MustDuration("sim.cpu.upgrade"),
	Disconnect:    calibration.MustDuration("sim.cpu.disconnect"),
	Accept:        calibration.MustDuration("sim.cpu.accept"),
	Close:         calibration.MustDuration("sim.cpu.close"),
	Segment:       calibration.MustDuration("sim.cpu.segment"),
	Ping:          calibration.MustDuration("sim.cpu.ping"),
	Slice:         calibration.MustDuration("sim.cpu.slice"),
	LoadgenShare:  calibration.MustFloat("sim.cpu.loadgen_share"),
	LoadgenGrowth: calibration.MustFloat("sim.cpu.loadgen_growth"),
	TargetGrowth:  calibration.MustFloat("sim.cpu.target_growth"),
}

// CPUUse is the CPU the model charged over a run (Config.Cores), by who
// spent it: the loadgen's processes (attempts, 101s read, disconnects),
// the target's (accepts and upgrades, closes), the kernel's retransmits,
// and both ends' pings.
type CPUUse struct {
	Loadgen, Target, Kernel, Pings time.Duration
	// Closes is, of the last restart that closed connections, how long
	// its stopping processes took to close them at their share of the
	// cores, from its Start; they exit after the last (with shape=stall,
	// at StopTime, closing any left).
	Closes time.Duration
}

// Whose work a charge is.
const (
	byLoadgen = iota
	byTarget
	byKernel
)

// costField is one of CPUCosts' durations, by its Go name and its key (the
// JSON name, which ParseCPUCosts reads).
type costField struct {
	name, key string
	v         *time.Duration
}

// ratioField is one of CPUCosts' numbers, as costField.
type ratioField struct {
	name, key string
	v         *float64
}

// ratios are c's number fields, in one order for every CPUCosts.
func (c *CPUCosts) ratios() []ratioField {
	return []ratioField{
		{"LoadgenShare", "loadgen_share", &c.LoadgenShare}, {"LoadgenGrowth", "loadgen_growth", &c.LoadgenGrowth},
		{"TargetGrowth", "target_growth", &c.TargetGrowth},
	}
}

// durations are c's duration fields, in one order for every CPUCosts:
// WithDefaults, validate, ParseCPUCosts and String walk the same list.
func (c *CPUCosts) durations() []costField {
	return []costField{
		{"Attempt", "attempt", &c.Attempt}, {"Upgrade", "upgrade", &c.Upgrade}, {"Disconnect", "disconnect", &c.Disconnect},
		{"Accept", "accept", &c.Accept}, {"Close", "close", &c.Close}, {"Segment", "segment", &c.Segment}, {"Ping", "ping", &c.Ping},
		{"Slice", "slice", &c.Slice},
	}
}

// WithDefaults returns c with every zero field DefaultCPUCosts': the costs
// a run with Config.Cores uses.
func (c CPUCosts) WithDefaults() CPUCosts {
	d := DefaultCPUCosts
	defs := d.durations()
	for i, f := range c.durations() {
		if *f.v == 0 {
			*f.v = *defs[i].v
		}
	}
	ratios := d.ratios()
	for i, f := range c.ratios() {
		if *f.v == 0 {
			*f.v = *ratios[i].v
		}
	}
	return c
}

// AtFleet returns c, its zero fields DefaultCPUCosts', with each end's
// per-connect costs at a fleet of clients (LoadgenGrowth, TargetGrowth):
// what the model charges a run of that fleet.
func (c CPUCosts) AtFleet(clients int) CPUCosts {
	c = c.WithDefaults()
	lg, tg := c.Growth(clients)
	grow := func(d time.Duration, f float64) time.Duration { return time.Duration(math.Round(float64(d) * f)) }
	c.Attempt, c.Upgrade = grow(c.Attempt, lg), grow(c.Upgrade, lg)
	c.Accept = grow(c.Accept, tg)
	return c
}

// Growth returns the factors AtFleet multiplies each end's per-connect
// costs by at a fleet of clients, 1 + growth × clients/1,000,000, with
// c's growths (DefaultCPUCosts' where zero).
func (c CPUCosts) Growth(clients int) (loadgen, target float64) {
	c = c.WithDefaults()
	n := float64(max(clients, 0)) / 1e6
	return 1 + c.LoadgenGrowth*n, 1 + c.TargetGrowth*n
}

// validate reports a negative cost.
func (c CPUCosts) validate() error {
	for _, f := range c.durations() {
		if *f.v < 0 {
			return spec.Errorf("Sim.CPU."+f.name, "must not be negative, got %s", *f.v)
		}
	}
	for _, f := range c.ratios() {
		if *f.v < 0 || math.IsNaN(*f.v) || math.IsInf(*f.v, 0) {
			return spec.Errorf("Sim.CPU."+f.name, "must be a positive ratio (0: the default), got %g", *f.v)
		}
	}
	return nil
}

// loadgenPerProcess is how many clients one real loadgen process runs
// (storm.PerProcess): the model's loadgen processes, among which the
// fleet's clients are dealt by ID.
const loadgenPerProcess = 18000

// cpuModel is the machine's cores, shared by both ends (Config.Cores):
// one pool of work, drained at Cores core-seconds a second, in the order
// it was charged (a FIFO CPU queue in virtual time). backlog is how long
// the cores take over the work charged so far, from last.
//
// A process does its work a slice at a time (a target process's accepts
// and upgrades, a loadgen process's connect attempts: as many as fit in
// CPUCosts.Slice, at least one), so it has at most one slice in the pool:
// the processes with work share the cores' time about equally, as the
// scheduler shares them, and the loadgen, whose attempts cost less than
// the target's upgrades, starts more attempts than the target completes.
// A slice of cost c a process starts at t is done at t+c (one core at
// most) or when the pool has run everything charged before it and it,
// whichever is later. The rest is charged to the pool without a process waiting on it,
// the kernel's or an end's work that delays what comes after it: a
// retransmitted segment, a client's 101 read, a connection closed (both
// ends), and the connected clients' pings, a steady load.
type cpuModel struct {
	cores    float64
	costs    CPUCosts
	backlog  float64 // ns
	last     int64
	conns    int     // clients connected for a ping interval or more: each pings
	pingLoad float64 // cores a connected client's pings take
	// ripe holds the clients connected for less than a ping interval, by
	// the pingTick from which they ping (a client pings after an interval
	// of silence, so a fleet back from a restart pings nothing for one);
	// ripeQ is those ticks in order. nil without pings.
	ripe      map[int64]int
	ripeQ     []int64
	pingEvery int64 // ns
	lg        []lgProc
	closes    [][]closing // per target process, the connections its stop has still to close
	closer    []closer    // per target process
	use       CPUUse
	pings     float64 // ns of ping CPU so far
}

// lgProc is a loadgen process: the clients whose attempts wait for its
// CPU, in order.
type lgProc struct {
	q       []qent // ring buffer; sock holds the client's gen
	head, n int
	busy    int64 // its current attempt is done at
	tick    bool  // an evLoadgen is pending
}

func newCPU(cfg Config) *cpuModel {
	if cfg.Cores <= 0 {
		return nil
	}
	m := &cpuModel{cores: cfg.Cores, costs: cfg.CPU.AtFleet(cfg.Clients)}
	m.lg = make([]lgProc, max(1, (cfg.Clients+loadgenPerProcess-1)/loadgenPerProcess))
	m.closes, m.closer = make([][]closing, cfg.Procs), make([]closer, cfg.Procs)
	if ping := cfg.Client.PingInterval; ping > 0 { // the spec's default, as run
		m.pingLoad = float64(m.costs.Ping) / float64(ping)
		m.pingEvery, m.ripe = int64(ping), map[int64]int{}
	}
	return m
}

// pingTick is the resolution of the instant a connected client starts
// pinging.
const pingTick = int64(100 * time.Millisecond)

// firstPing is the pingTick from which a client connected at at pings.
func (m *cpuModel) firstPing(at int64) int64 { return (at + m.pingEvery + pingTick - 1) / pingTick }

// up counts a client connected at now: it pings from a ping interval on.
func (m *cpuModel) up(now int64) {
	if m.ripe == nil {
		m.conns++
		return
	}
	k := m.firstPing(now)
	if n := len(m.ripeQ); n == 0 || m.ripeQ[n-1] != k {
		m.ripeQ = append(m.ripeQ, k)
	}
	m.ripe[k]++
}

// down uncounts a client whose connection, up since since, ended.
func (m *cpuModel) down(since int64) {
	if m.ripe != nil {
		if k := m.firstPing(since); m.ripe[k] > 0 {
			m.ripe[k]--
			return
		}
	}
	m.conns--
}

// advance runs the pool to now: the cores drain the backlog while the
// pings add to it, from each client's first ping on.
func (m *cpuModel) advance(now int64) {
	for len(m.ripeQ) > 0 && m.ripeQ[0]*pingTick <= now {
		k := m.ripeQ[0]
		m.drain(k * pingTick)
		m.conns += m.ripe[k]
		delete(m.ripe, k)
		m.ripeQ = m.ripeQ[1:]
	}
	m.drain(now)
}

// drain runs the pool to now at the pings of the clients counted.
func (m *cpuModel) drain(now int64) {
	if now <= m.last {
		return
	}
	dt := float64(now - m.last)
	m.pings += dt * float64(m.conns) * m.pingLoad
	m.backlog = max(0, m.backlog+dt*(float64(m.conns)*m.pingLoad/m.cores-1))
	m.last = now
}

// charge adds work of cost at now to the pool, done by who (byLoadgen...).
func (m *cpuModel) charge(now int64, cost time.Duration, who int) {
	m.advance(now)
	m.backlog += float64(cost) / m.cores
	switch who {
	case byLoadgen:
		m.use.Loadgen += cost
	case byTarget:
		m.use.Target += cost
	default:
		m.use.Kernel += cost
	}
}

// used returns the CPU charged so far.
func (m *cpuModel) used() CPUUse {
	u := m.use
	u.Pings = time.Duration(m.pings)
	return u
}

// job charges an operation of cost that a process starts at start (not
// before now) and returns when it is done.
func (m *cpuModel) job(now, start int64, cost time.Duration, who int) int64 {
	m.charge(now, cost, who)
	return max(start+int64(cost), now+int64(m.backlog))
}

// queueAttempt puts client id's attempt, due at now, in its loadgen
// process's queue.
func (s *sim) queueAttempt(id uint32, now int64) {
	pi := int(id) % len(s.cpu.lg)
	p := &s.cpu.lg[pi]
	if p.n == len(p.q) {
		nq := make([]qent, max(16, 2*len(p.q)))
		for i := 0; i < p.n; i++ {
			nq[i] = p.q[(p.head+i)%len(p.q)]
		}
		p.q, p.head = nq, 0
	}
	p.q[(p.head+p.n)%len(p.q)] = qent{c: id, sock: uint32(s.clients[id].gen)}
	p.n++
	if !p.tick {
		p.tick = true
		s.q.push(entry{at: max(now, p.busy), who: uint32(pi), kind: evLoadgen})
	}
}

// perSlice is how many operations of cost fit in a slice, at least one.
func (m *cpuModel) perSlice(cost time.Duration) int {
	if cost <= 0 {
		return 1 << 30
	}
	return max(1, int(m.costs.Slice/cost))
}

// loadgenRun is loadgen process pi taking a slice's attempts from its
// queue: they start (their SYNs go out) when the process has had its CPU.
func (s *sim) loadgenRun(pi int, now int64) {
	m := s.cpu
	p := &m.lg[pi]
	p.tick = false
	k := min(p.n, max(1, int(float64(m.perSlice(m.costs.Attempt))*m.costs.LoadgenShare)))
	p.busy = m.job(now, now, time.Duration(k)*m.costs.Attempt, byLoadgen)
	for ; k > 0 && p.n > 0; k-- {
		e := p.q[p.head]
		p.head = (p.head + 1) % len(p.q)
		p.n--
		c := &s.clients[e.c]
		if uint32(c.gen) != e.sock || c.state != stWaiting {
			continue
		}
		c.flags |= flCPU
		s.q.push(entry{at: p.busy, who: e.c, gen: c.gen, kind: evStart})
	}
	if p.n > 0 {
		p.tick = true
		s.q.push(entry{at: p.busy, who: uint32(pi), kind: evLoadgen})
	}
}

// closing is a connection a stopping target process has to close: key
// draws the order it closes them in.
type closing struct {
	key float64
	c   uint32
	gen uint8
}

// closer is a stopping target process closing its connections, a slice
// at a time (as many closes as fit in CPUCosts.Slice), each slice's
// closes reaching their clients when the slice is done.
type closer struct {
	paced bool      // its last stop's closes are paced so (and charged here, not in sim.closed)
	on    bool      // the process is closing (from its stop to its last close or exit)
	next  int       // the next connection of closes to close
	start int64     // the stop's Start
	wait  *exitWait // the exit waiting for its last close, if any
}

// startClosers starts the stopping processes' closes at now.
func (s *sim) startClosers(procs []int, now int64) {
	for _, p := range procs {
		cs := s.cpu.closes[p]
		slices.SortFunc(cs, func(a, b closing) int { return cmp.Compare(a.key, b.key) })
		s.cpu.closer[p] = closer{paced: true, on: true, start: now}
		s.q.push(entry{at: now, who: uint32(p), kind: evCloser})
	}
}

// closeSlice is target process p closing a slice of its connections at
// now, no faster than CloseRate.
func (s *sim) closeSlice(p int, now int64) {
	m := s.cpu
	cl := &m.closer[p]
	if !cl.on {
		return
	}
	cs := m.closes[p]
	k := min(len(cs)-cl.next, m.perSlice(m.costs.Close))
	end := m.job(now, now, time.Duration(k)*m.costs.Close, byTarget)
	if s.cfg.CloseRate > 0 {
		end = max(end, now+int64(float64(k)*1e9/s.cfg.CloseRate))
	}
	for _, e := range cs[cl.next : cl.next+k] {
		s.q.push(entry{at: end, who: e.c, gen: e.gen, kind: evClosed})
	}
	cl.next += k
	if cl.next < len(cs) {
		s.q.push(entry{at: end, who: uint32(p), kind: evCloser})
		return
	}
	m.use.Closes = time.Duration(end - cl.start)
	w := cl.wait
	*cl = closer{paced: true}
	m.closes[p] = cs[:0]
	if w != nil {
		s.closedAll(w, end)
	}
}

// flushClosers is the stopped processes' exit: the connections they have
// not closed yet close with them, at now.
func (s *sim) flushClosers(procs []int, now int64) {
	m := s.cpu
	for _, p := range procs {
		cl := &m.closer[p]
		if !cl.on {
			continue
		}
		cs := m.closes[p][cl.next:]
		m.charge(now, time.Duration(len(cs))*m.costs.Close, byTarget)
		for _, e := range cs {
			s.q.push(entry{at: now, who: e.c, gen: e.gen, kind: evClosed})
		}
		m.use.Closes = time.Duration(now - cl.start)
		*cl = closer{paced: true}
		m.closes[p] = m.closes[p][:0]
	}
}
