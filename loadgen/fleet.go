package loadgen

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stampede-dev/stampede/internal/rawsys"
	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/spec"
)

// Fleet is a configured set of clients, ready to run once.
type Fleet struct {
	cfg      Config // defaults applied
	url      *url.URL
	dst      netip.AddrPort
	up       *upgrade
	reactors []*reactor
	tls      *tls.Config // wss://: the fleet's (Config.TLSConfig, with the server name), nil for ws://
	end      time.Time   // the run's end: Run's context deadline, zero if none
	streamed bool        // NewStreamed: results leave only by Drain
	ran      atomic.Bool
}

// New validates cfg, resolves the target, checks that this process may hold
// cfg.Clients connections (CheckLimits; the soft open-file limit is raised
// to the hard one) and lays out the clients. No socket is opened before
// Run.
func New(cfg Config) (*Fleet, error) { return newFleet(cfg, false) }

// NewStreamed is New for a process that takes every result with Drain, as
// a loadgen worker streams them (docs/agent.md): the fleet keeps no copy
// of what it drains, and the Report that Run returns holds the clients'
// Transitions, Messages, Stopped and Track, but no Timeline, Intervals or
// histograms (and is not made from five dense total histograms). Drain's
// pieces are the same as New's fleet gives.
func NewStreamed(cfg Config) (*Fleet, error) { return newFleet(cfg, true) }

func newFleet(cfg Config, streamed bool) (*Fleet, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	u, _ := url.Parse(cfg.URL) // Validate parsed it
	dst, err := resolve(u)
	if err != nil {
		return nil, err
	}
	if err := CheckLimits(cfg.Clients, len(cfg.SourceIPs)); err != nil {
		return nil, err
	}
	f := &Fleet{cfg: cfg, url: u, dst: dst, up: newUpgrade(u, cfg.Header, offered(cfg), cfg.Seed), streamed: streamed}
	if u.Scheme == "wss" {
		tc, err := cfg.TLSConfig()
		if err != nil {
			return nil, err
		}
		if tc.ServerName == "" {
			tc.ServerName = u.Hostname()
		}
		f.tls = tc
	}
	for r := 0; r < cfg.Reactors; r++ {
		f.reactors = append(f.reactors, newReactor(f, r, cfg.Reactors))
	}
	return f, nil
}

// resolve returns the target's address: an IP literal as is, a name
// resolved once (the fleet does not resolve per attempt).
func resolve(u *url.URL) (netip.AddrPort, error) {
	port := 80
	if u.Scheme == "wss" {
		port = 443
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return netip.AddrPort{}, spec.Errorf("Client.URL", "bad port %q", p)
		}
		port = n
	}
	if ip, err := netip.ParseAddr(u.Hostname()); err == nil {
		return netip.AddrPortFrom(ip.Unmap(), uint16(port)), nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", u.Hostname())
	if err != nil || len(ips) == 0 {
		return netip.AddrPort{}, fmt.Errorf("loadgen: URL: resolving %s: %w", u.Hostname(), err)
	}
	best := ips[0]
	for _, ip := range ips {
		if ip.Unmap().Is4() {
			best = ip
			break
		}
	}
	return netip.AddrPortFrom(best.Unmap(), uint16(port)), nil
}

// Config returns the fleet's configuration with defaults applied.
func (f *Fleet) Config() Config { return f.cfg }

// Run runs the fleet until ctx is done, then closes every socket and
// returns the merged report; its Start is the Config's Start (or the time
// Run was called, if that was zero). Clients start at their ramp slots from
// Start, which may lie in the future (a start barrier). A Fleet runs once.
func (f *Fleet) Run(ctx context.Context) (*results.Report, error) {
	if f.ran.Swap(true) {
		return nil, errRunTwice
	}
	epoch := time.Now()
	if d, ok := ctx.Deadline(); ok {
		f.end = d
	}
	if f.cfg.Start.IsZero() {
		f.cfg.Start = epoch
		for _, r := range f.reactors {
			r.rec.mu.Lock()
			r.rec.rep.Start = epoch
			r.rec.mu.Unlock()
		}
	}
	defer func() {
		for _, r := range f.reactors {
			r.close()
		}
	}()
	for _, r := range f.reactors {
		if err := r.open(epoch, f.cfg.Start); err != nil {
			return nil, err
		}
	}
	errs := make(chan error, len(f.reactors))
	var wg sync.WaitGroup
	for _, r := range f.reactors {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- r.run()
		}()
	}
	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-errs: // a reactor failed: stop the others
	}
	for _, r := range f.reactors {
		r.stop()
	}
	wg.Wait()
	if runErr != nil {
		return nil, runErr
	}
	if f.streamed {
		// What is left of a worker's run (the last drains, the flow, the
		// recovery partials) needs none of the clients' state: let it go
		// first, so that work fits the heap the clients held.
		for _, r := range f.reactors {
			r.dropClients()
		}
		return f.streamedReport()
	}
	// Merged into a new report: each reactor's stays its own, which its
	// stream's last drain still reads.
	rep := results.NewReport(f.cfg.Start, 0)
	rep.Intervals = results.NewIntervals(f.cfg.HistInterval)
	for _, r := range f.reactors {
		if err := r.rec.close(); err != nil {
			return nil, err
		}
		if err := rep.Merge(r.rec.rep); err != nil {
			return nil, err
		}
	}
	rep.Processes = 1
	return rep, nil
}

// streamedReport closes the reactors' recorders and returns what a
// streamed fleet's Run returns (NewStreamed): the merge of their
// reports, whose timelines, intervals and histograms are empty, without
// making the five dense total histograms a merged report starts with.
// The transitions are moved into one array of their exact size.
func (f *Fleet) streamedReport() (*results.Report, error) {
	rep := &results.Report{Start: f.cfg.Start, Processes: 1, Intervals: results.NewIntervals(f.cfg.HistInterval)}
	n := 0
	for _, r := range f.reactors {
		if err := r.rec.close(); err != nil {
			return nil, err
		}
		n += len(r.rec.rep.Transitions)
	}
	rep.Transitions = make([]results.Transition, 0, n)
	for _, r := range f.reactors {
		r.rec.mu.Lock()
		o := *r.rec.rep
		r.rec.rep.Transitions = nil
		r.rec.mu.Unlock()
		rep.Transitions = append(rep.Transitions, o.Transitions...)
		o.Transitions = nil
		if err := rep.Merge(&o); err != nil {
			return nil, err
		}
	}
	rep.Processes = 1
	return rep, nil
}

// Drain returns what the fleet recorded since the last Drain that is
// complete before offset upTo from the run's start (timeline buckets and
// histogram intervals that end by upTo, and the message and stopped
// tallies), as pieces whose JSON encoding is at most limit bytes
// (results.DefaultPieceBytes if limit <= 0): what a worker streams to the
// coordinator (docs/results.md "Streamed results"). It is safe to call from
// any goroutine, before, during and after Run; what is recorded late into
// a bucket or interval already drained comes with a later Drain. After Run
// returns, Drain(results.End, limit) gives all that was not drained, so the
// pieces of every Drain, merged (results.Assembler), are the report Run
// returned: its timeline, histograms, intervals, messages and stopped
// clients.
func (f *Fleet) Drain(upTo time.Duration, limit int) ([]results.Piece, error) {
	a := results.NewAssembler(f.cfg.HistInterval)
	for _, r := range f.recorders() {
		if err := r.drain(a, upTo); err != nil {
			return nil, err
		}
	}
	return a.Pieces(limit)
}

// recorders returns the fleet's recorders: one per reactor.
func (f *Fleet) recorders() []*recorder {
	rs := make([]*recorder, len(f.reactors))
	for i, r := range f.reactors {
		rs[i] = r.rec
	}
	return rs
}

// Stats returns a snapshot of the live counters; safe to call from any
// goroutine, before, during and after Run. Syscalls are the process's.
func (f *Fleet) Stats() Stats {
	s := Stats{Clients: f.cfg.Clients, Syscalls: rawsys.Counts()}
	for _, r := range f.reactors {
		r.rec.cnt.snapshot(&s)
	}
	return s
}

// Run creates a fleet from cfg and runs it until ctx is done.
func Run(ctx context.Context, cfg Config) (*results.Report, error) {
	f, err := New(cfg)
	if err != nil {
		return nil, err
	}
	return f.Run(ctx)
}
