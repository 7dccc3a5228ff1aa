package group

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/stampede-dev/stampede/childproc"
	"github.com/stampede-dev/stampede/controlapi"
	"github.com/stampede-dev/stampede/internal/procgroup"
	"github.com/stampede-dev/stampede/spec"
	"github.com/stampede-dev/stampede/store"
	"github.com/stampede-dev/stampede/target"
	"github.com/stampede-dev/stampede/target/listener"
)

// DefaultReadyTimeout is how long Start and Respawn wait for a process's
// ready line, on top of its Hold.
const DefaultReadyTimeout = 10 * time.Second

// Spawner starts one process of a Group serving cfg (its Addr is the
// group's port, its Hold set per start) with env added to its environment,
// and returns it once its childproc.ReadyLine came, waiting at most timeout. The
// process gets cfg as a typed plan, never as flags: agent.SpawnServer is
// the one the stampede binary uses (docs/agent.md); tests give their own.
type Spawner func(ctx context.Context, cfg target.Config, env []string, timeout time.Duration) (*childproc.Child, childproc.ReadyLine, error)

// Config configures a Group of target processes.
type Config struct {
	// Spawn starts one process. Required.
	Spawn Spawner
	// Procs is the number of processes. Default 1.
	Procs int
	// Config is every process's server configuration. Its Addr is the
	// group's address: with port 0 the group picks a free port.
	Config target.Config
	// ReadyTimeout bounds the wait for a process's ready line, on top of
	// its Hold. Default 10 s.
	ReadyTimeout time.Duration
	// FirstAtFullRate starts the first generation (Start's) without
	// the admission ramp (Config.AdmitRamp); processes started later by
	// Respawn or RespawnProc ramp. A run's first connects are not a
	// restart; a lone `stampede target` is one, and ramps from its start.
	FirstAtFullRate bool
	// OnExit, if set, is called once for every process that exits when the
	// group did not stop it (no Signal, Kill, Shutdown or Close reached
	// it): a crash, or a kill from outside. err is its exit error.
	OnExit func(p *Proc, err error)
}

// Group is a set of `stampede target` processes listening on one port as an
// SO_REUSEPORT group, because one process may hold at most 20,000 open
// files. The group keeps the port reserved (a bound socket that does not
// listen) for its whole life, so between a stop and a Respawn connects are
// refused and no other program can take the port. Its processes share a
// retry ledger (target.RetryLedgerEnv), so a client that comes back before its
// Retry-After is counted whichever process it reaches.
//
// A supervisor restarts the target with it: Signal or Kill, Wait, wait out
// the downtime, Respawn (optionally with a hold: the port open but nothing
// accepted, the "stall" shape), then read each Proc's Ready time. A rolling
// restart does the same one process at a time: SignalProc, the Proc's
// Wait, RespawnProc.
type Group struct {
	cfg    Config
	res    *listener.Reservation
	addr   string
	ledger string // the retry ledger file the processes share
	// ticketKeys is the session-ticket key file of a generation
	// (TicketKeysEnv); "" when the processes need none.
	ticketKeys string
	// storeStop stops the store server the group runs for its processes
	// (the embedded JetStream of a jetstream:///dir store), after them.
	storeStop func() error

	mu    sync.Mutex
	procs []*Proc

	closeOnce sync.Once
	closeErr  error
}

// Proc is one process of a Group.
type Proc struct {
	// PID is the process id.
	PID int
	// Control is the base URL of its control API, "http://127.0.0.1:PORT".
	Control string
	// Ready is when it started accepting, from its ready line.
	Ready time.Time
	// Token is the token of its control API, from its ready line.
	Token string

	*procgroup.Member // Signal, Kill, Wait, Done, Exited; its ready line
}

// ErrProcsRunning is returned by Respawn while processes of the previous
// generation are still running.
var ErrProcsRunning = errors.New("target: group processes still running")

// Start reserves the address, starts cfg.Procs processes on it and
// returns when every one printed its ready line. On error, every process
// started is killed.
func Start(ctx context.Context, cfg Config) (*Group, error) {
	if cfg.Spawn == nil {
		return nil, spec.Errorf("GroupConfig.Spawn", "required")
	}
	if cfg.Procs < 0 || cfg.ReadyTimeout < 0 {
		return nil, spec.Errorf("GroupConfig.Procs", "Procs and ReadyTimeout must not be negative")
	}
	if err := cfg.Config.Validate(); err != nil {
		return nil, err
	}
	if err := storeNeedsOneProc(cfg.Procs, cfg.Config); err != nil {
		return nil, err
	}
	cfg.Procs = max(cfg.Procs, 1)
	cfg.Config.Procs = 0 // each member is one process, never a group of its own
	if cfg.ReadyTimeout == 0 {
		cfg.ReadyTimeout = DefaultReadyTimeout
	}
	res, err := listener.Reserve(cfg.Config.Server.WithDefaults().Addr)
	if err != nil {
		return nil, err
	}
	ledger, err := target.CreateRetryLedger("", time.Now())
	if err != nil {
		res.Close()
		return nil, err
	}
	// A store the owner serves (the embedded JetStream) runs here, in
	// the group's owner, so that it outlives every process's restart;
	// the processes open it by the URL it hands out.
	shared, storeStop, err := store.Host(ctx, cfg.Config.Store)
	if err != nil {
		res.Close()
		os.Remove(ledger)
		return nil, err
	}
	cfg.Config.Store = shared
	g := &Group{cfg: cfg, res: res, addr: res.Addr(), ledger: ledger, storeStop: storeStop}
	if g.ticketKeys, err = groupTicketKeys(cfg.Config.Server); err != nil {
		res.Close()
		os.Remove(ledger)
		storeStop()
		return nil, err
	}
	var first []func(*target.Config)
	if cfg.FirstAtFullRate {
		first = append(first, func(c *target.Config) { c.AdmitRamp, c.AdmitFloor = 0, 0 })
	}
	if err := g.Respawn(ctx, cfg.Config.Hold, first...); err != nil {
		res.Close()
		os.Remove(ledger)
		removeIf(g.ticketKeys)
		storeStop()
		return nil, err
	}
	return g, nil
}

// Addr returns the group's listen address, "127.0.0.1:PORT".
func (g *Group) Addr() string { return g.addr }

// URL returns the group's ws:// (or wss://) URL.
func (g *Group) URL() string { return target.WSURL(g.addr, g.cfg.Config.Server.WithDefaults().TLS) }

// Procs returns the processes of the current generation.
func (g *Group) Procs() []*Proc {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]*Proc(nil), g.procs...)
}

// Respawn starts a new generation of cfg.Procs processes on the group's
// port, each with the given hold (0: accept at once), and returns when all
// are ready. Every process of the previous generation must have exited.
//
// Each of start, if given, adjusts the configuration the processes start
// with: a supervisor gives them the group's current backlog and accept
// rate, and a stall (Hold) or reject window (StartReject) under way, so
// they never admit a client in a state the schedule has changed.
func (g *Group) Respawn(ctx context.Context, hold time.Duration, start ...func(*target.Config)) error {
	for _, p := range g.Procs() {
		if !p.Exited() {
			return ErrProcsRunning
		}
	}
	if err := forgetTicketKeys(g.ticketKeys); err != nil {
		return err
	}
	procs := make([]*Proc, g.cfg.Procs)
	errs := make([]error, g.cfg.Procs)
	var wg sync.WaitGroup
	for i := range procs {
		wg.Go(func() { procs[i], errs[i] = g.startProc(ctx, hold, start) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, p := range procs {
			if p != nil {
				p.Stop(syscall.SIGKILL)
				p.Wait()
			}
		}
		return err
	}
	g.mu.Lock()
	g.procs = procs
	g.mu.Unlock()
	return nil
}

// RespawnProc starts a new process in slot i (0 <= i < Procs) of the
// current generation, with the given hold (0: accept at once), and returns
// when it is ready; the other processes keep running. The process it
// replaces must have exited (SignalProc, then Procs()[i].Wait). A rolling
// restart is SignalProc, Wait and RespawnProc for each slot in turn.
// start adjusts its configuration as in Respawn.
func (g *Group) RespawnProc(ctx context.Context, i int, hold time.Duration, start ...func(*target.Config)) error {
	g.mu.Lock()
	if i < 0 || i >= len(g.procs) {
		n := len(g.procs)
		g.mu.Unlock()
		return fmt.Errorf("target: no process %d in a group of %d", i, n)
	}
	old := g.procs[i]
	g.mu.Unlock()
	if !old.Exited() {
		return ErrProcsRunning
	}
	p, err := g.startProc(ctx, hold, start)
	if err != nil {
		return err
	}
	g.mu.Lock()
	g.procs[i] = p
	g.mu.Unlock()
	return nil
}

// SignalProc sends sig to process i of the current generation (see
// Proc.Signal); an exited process is not an error.
func (g *Group) SignalProc(i int, sig os.Signal) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if i < 0 || i >= len(g.procs) {
		return fmt.Errorf("target: no process %d in a group of %d", i, len(g.procs))
	}
	return g.procs[i].Stop(sig)
}

// startProc starts one process with the given hold, its configuration
// adjusted by start, and waits for its ready line; it watches the process
// for an exit nobody asked for.
func (g *Group) startProc(ctx context.Context, hold time.Duration, start []func(*target.Config)) (*Proc, error) {
	cfg := g.cfg.Config
	cfg.Addr, cfg.Hold = g.addr, hold
	for _, f := range start {
		f(&cfg)
	}
	if cfg.ControlToken == "" {
		cfg.ControlToken = controlapi.NewToken()
	}
	m, err := procgroup.Start(func() (*childproc.Child, childproc.ReadyLine, error) {
		env := append([]string{target.RetryLedgerEnv + "=" + g.ledger}, ticketKeysEnv(g.ticketKeys)...)
		return g.cfg.Spawn(ctx, cfg, env, g.cfg.ReadyTimeout+cfg.Hold)
	}, cfg.ControlToken)
	if err != nil {
		return nil, err
	}
	l := m.Line
	p := &Proc{PID: m.PID(), Control: "http://" + l.Control, Ready: l.T, Token: l.Token, Member: m}
	if g.cfg.OnExit != nil {
		m.Watch(func(err error) { g.cfg.OnExit(p, err) })
	}
	return p, nil
}

// Stats returns the process's counters from its control API.
func (p *Proc) Stats(ctx context.Context) (target.Stats, error) {
	var st target.Stats
	err := callControl(ctx, p.Control, p.Token, http.MethodGet, "/stats", nil, &st)
	return st, err
}

// post sends one control request to the process.
func (p *Proc) post(ctx context.Context, path string, params url.Values) error {
	return callControl(ctx, p.Control, p.Token, http.MethodPost, path, params, nil)
}

// SetBacklog sets the process's backlog (see target.Server.SetBacklog).
func (p *Proc) SetBacklog(ctx context.Context, n int) error {
	return p.post(ctx, "/backlog", backlogParams(n))
}

// SetAcceptRate sets the process's accept rate (see target.Server.SetAcceptRate).
func (p *Proc) SetAcceptRate(ctx context.Context, r float64) error {
	return p.post(ctx, "/accept-rate", rateParams(r))
}

// Stall stops the process accepting for d (see target.Server.Stall).
func (p *Proc) Stall(ctx context.Context, d time.Duration) error {
	return p.post(ctx, "/stall", stallParams(d))
}

// Reject makes the process reject upgrades (see target.Server.Reject).
func (p *Proc) Reject(ctx context.Context, status int, retryAfter, d time.Duration) error {
	return p.post(ctx, "/reject", rejectParams(status, retryAfter, d))
}

// Signal sends sig to every running process.
func (g *Group) Signal(sig os.Signal) error {
	var errs []error
	for _, p := range g.Procs() {
		errs = append(errs, p.Stop(sig))
	}
	return errors.Join(errs...)
}

// Kill sends SIGKILL to every running process.
func (g *Group) Kill() error { return g.Signal(syscall.SIGKILL) }

// Wait waits for every process to exit and returns their exit errors.
func (g *Group) Wait() error {
	var errs []error
	for _, p := range g.Procs() {
		if err := p.Wait(); err != nil {
			errs = append(errs, fmt.Errorf("target: process %d: %w", p.PID, err))
		}
	}
	return errors.Join(errs...)
}

// Close kills the processes still running, waits for them and releases the
// port. Later calls return the first call's result.
func (g *Group) Close() error {
	g.closeOnce.Do(func() {
		g.Kill()
		g.Wait()
		g.closeErr = errors.Join(g.res.Close(), os.Remove(g.ledger), removeIf(g.ticketKeys), g.storeStop())
	})
	return g.closeErr
}

// exitGrace is how long each waits, after a process could not be reached
// or answered that it is shutting down, to see whether it is exiting (a
// restart under way), which is not an error.
const exitGrace = time.Second

// each applies f to every running process at once. A process that fails
// and turns out to be exiting is skipped, as if it had exited first; a
// live process's refusal (a bad parameter) is returned at once.
func (g *Group) each(f func(p *Proc) error) error {
	return procgroup.Each(g.Procs(), func(p *Proc) error {
		if p.Exited() {
			return nil
		}
		err := f(p)
		var re *remoteError
		if err == nil || errors.As(err, &re) && re.status != http.StatusConflict {
			return err
		}
		t := time.NewTimer(exitGrace)
		defer t.Stop()
		select {
		case <-p.Done():
			return nil
		case <-t.C:
			return err
		}
	})
}

// post sends one control request to every running process.
func (g *Group) post(ctx context.Context, path string, params url.Values) error {
	return g.each(func(p *Proc) error { return p.post(ctx, path, params) })
}

// Stats returns the counters summed over the running processes.
func (g *Group) Stats(ctx context.Context) (target.Stats, error) {
	var mu sync.Mutex
	var sum target.Stats
	err := g.each(func(p *Proc) error {
		st, err := p.Stats(ctx)
		mu.Lock()
		sum = sum.Add(st)
		mu.Unlock()
		return err
	})
	return sum, err
}

// StatsByPID returns each running process's counters by process id; a
// process exiting meanwhile is left out.
func (g *Group) StatsByPID(ctx context.Context) (map[int]target.Stats, error) {
	var mu sync.Mutex
	out := map[int]target.Stats{}
	err := g.each(func(p *Proc) error {
		st, err := p.Stats(ctx)
		if err == nil {
			mu.Lock()
			out[p.PID] = st
			mu.Unlock()
		}
		return err
	})
	return out, err
}

// Stall stops every process accepting for d (see target.Server.Stall).
func (g *Group) Stall(ctx context.Context, d time.Duration) error {
	return g.post(ctx, "/stall", stallParams(d))
}

func stallParams(d time.Duration) url.Values { return url.Values{"for": {d.String()}} }

// SetBacklog sets every process's backlog (see target.Server.SetBacklog).
func (g *Group) SetBacklog(ctx context.Context, n int) error {
	return g.post(ctx, "/backlog", backlogParams(n))
}

func backlogParams(n int) url.Values { return url.Values{"n": {strconv.Itoa(n)}} }

func rateParams(r float64) url.Values {
	return url.Values{"r": {strconv.FormatFloat(r, 'g', -1, 64)}}
}

// SetAcceptRate sets every process's accept rate (see
// Server.SetAcceptRate); the group's capacity is Procs times r.
func (g *Group) SetAcceptRate(ctx context.Context, r float64) error {
	return g.post(ctx, "/accept-rate", rateParams(r))
}

// Reject makes every process reject upgrades (see target.Server.Reject).
func (g *Group) Reject(ctx context.Context, status int, retryAfter, d time.Duration) error {
	return g.post(ctx, "/reject", rejectParams(status, retryAfter, d))
}

func rejectParams(status int, retryAfter, d time.Duration) url.Values {
	return url.Values{"status": {strconv.Itoa(status)}, "retry_after": {retryAfter.String()}, "for": {d.String()}}
}

// Shutdown asks every process to shut down (see target.Server.Shutdown) and
// returns at once; Wait waits for the exits.
func (g *Group) Shutdown(ctx context.Context, mode target.ShutdownMode) error {
	return g.ShutdownWith(ctx, target.ShutdownOptions{Mode: mode})
}

// ShutdownWith asks every process to shut down with o (see
// Server.ShutdownWith) and returns at once; Wait waits for the exits.
func (g *Group) ShutdownWith(ctx context.Context, o target.ShutdownOptions) error {
	if err := o.Validate(); err != nil {
		return err
	}
	for _, p := range g.Procs() {
		p.MarkStopped()
	}
	return g.post(ctx, "/shutdown", shutdownParams(o))
}

// ShutdownWith asks the process to shut down with o (see
// Server.ShutdownWith) and returns at once; its Wait waits for the exit.
func (p *Proc) ShutdownWith(ctx context.Context, o target.ShutdownOptions) error {
	if err := o.Validate(); err != nil {
		return err
	}
	p.MarkStopped()
	return p.post(ctx, "/shutdown", shutdownParams(o))
}

func shutdownParams(o target.ShutdownOptions) url.Values {
	v := url.Values{"mode": {o.Mode.String()}}
	if o.Spread > 0 {
		v.Set("spread", o.Spread.String())
	}
	if o.Hint > 0 {
		v.Set("hint", o.Hint.String())
		v.Set("hint_after", o.HintAfter.String())
	}
	return v
}

// Handler returns the control API of the whole group (the endpoints of
// ControlHandler): each request goes to every process, /stats sums them.
func (g *Group) Handler() http.Handler { return controlMux(g) }
