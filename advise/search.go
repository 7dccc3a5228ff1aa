package advise

import (
	"cmp"
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/results/summary"
	"github.com/stampede-dev/stampede/sim"
	"github.com/stampede-dev/stampede/spec"
)

// Candidate is one policy's prediction over every seed.
type Candidate struct {
	// Policy is the policy simulated.
	Policy backoff.Policy
	// R50, R99 and R100 are the means over the seeds of the seconds from
	// ready until that share of the fleet was back; NaN when a seed never
	// got there.
	R50, R99, R100 float64
	// Peak is the worst seed's herd peak per 100 ms.
	Peak float64
	// Wasted is the mean of failed attempts per client after ready.
	Wasted float64
	// WithinCapacity is true when every seed's herd peak stayed within
	// the server's capacity per 100 ms.
	WithinCapacity bool
	// first is the first seed's run, kept for the curves and the folder.
	first *sim.Result
	// event indexes the recovery the figures come from.
	event int
}

// Recovered reports whether every seed brought 99 % of the fleet back.
func (c Candidate) Recovered() bool { return !math.IsNaN(c.R99) }

// Result is a search's outcome.
type Result struct {
	// Config is the search's config, with its defaults.
	Config Config
	// Capacity is the server's, as scored against.
	Capacity Capacity
	// Bound is the physical bound: clients over the accept rate.
	Bound time.Duration
	// Outage is the event's start to ready, as simulated.
	Outage time.Duration
	// Current is the current policy's prediction.
	Current Candidate
	// Best are the best candidates, best first; Best[0] is recommended.
	Best []Candidate
	// Simulations counts the simulated runs.
	Simulations int
	// Reason is the one line of reasoning behind Best[0].
	Reason string
	// Mitigations are the current policy's predictions under each
	// server-side mitigation the server can take (Mitigations), with the
	// window the server needs to take the fleet back; empty when the
	// schedule restarts nothing.
	Mitigations []Mitigated
}

// Recommended is the recommended candidate.
func (r *Result) Recommended() Candidate { return r.Best[0] }

// Search simulates the current policy, then a bounded, seeded set of
// candidate policies drawn around the herd's physics (each with every
// seed), refines around the best, and ranks them: the same Config gives
// the same Result.
func Search(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	capy := cfg.capacity()
	lib := libraryOf(cfg.Library)
	if lib != nil && cfg.Sim.Policy.Library.Name != lib.name {
		cfg.Sim.Policy = backoff.MustParse(lib.name) // the library's default is the current policy
	}
	res := &Result{Config: cfg, Capacity: capy, Bound: capy.Bound(cfg.Sim.Clients)}
	ref := backoff.MustParse(ReferencePolicy)
	start := []backoff.Policy{cfg.Sim.Policy, ref}
	if ref.String() == cfg.Sim.Policy.String() || lib != nil {
		start = start[:1] // a library's search keeps to what its options express
	}
	var n int
	first, err := res.evaluate(ctx, start)
	if err != nil {
		return nil, err
	}
	first = append(first, first[0]) // the reference, when it is the current policy
	res.Current = first[0]
	res.Outage = outageOf(first[0])
	rng := rand.New(rand.NewPCG(cfg.Sim.Seed, 0x616476697365)) // "advise"
	var pool []Candidate
	if lib != nil {
		pool, err = res.searchLibrary(ctx, lib, rng)
	} else {
		pool, err = res.searchKinds(ctx, first[1], rng)
	}
	if err != nil {
		return nil, err
	}
	if len(pool) == 0 {
		return nil, spec.Errorf("Advise.MaxDelay", "no policy fits under %s", cfg.MaxDelay)
	}
	res.Best = distinct(pool, cfg.Shown)
	res.Reason = res.reason()
	ms := mitigationsFor(cfg.Sim.Server, cfg.Sim.Schedule, cfg.Sim.Clients, capy.AcceptRate)
	if res.Mitigations, n, err = mitigate(ctx, cfg, capy, ms); err != nil {
		return nil, err
	}
	res.Simulations += n
	return res, nil
}

// searchKinds draws stampede's own policy kinds from the space around
// the herd, then their neighbours, and ranks them with the reference ref.
func (r *Result) searchKinds(ctx context.Context, ref Candidate, rng *rand.Rand) ([]Candidate, error) {
	cfg := r.Config
	sp := newSpace(r.Outage, r.Bound, cfg.MaxDelay)
	seen := map[string]bool{cfg.Sim.Policy.String(): true, ref.Policy.String(): true}
	pool := []Candidate{}
	if cfg.MaxDelay == 0 || within(ref.Policy, cfg.MaxDelay) {
		pool = append(pool, ref)
	}
	stage1 := draws(sp, rng, seen, sp.anchors(r.Outage, r.Bound), cfg.Budget*2/3)
	got, err := r.evaluate(ctx, stage1)
	if err != nil {
		return nil, err
	}
	pool = r.rank(append(pool, got...))
	var near []backoff.Policy
	for _, c := range pool[:min(3, len(pool))] {
		near = append(near, sp.neighbours(c.Policy)...)
	}
	stage2 := draws(sp, rng, seen, near, cfg.Budget-len(stage1))
	if got, err = r.evaluate(ctx, stage2); err != nil {
		return nil, err
	}
	return r.rank(append(pool, got...)), nil
}

// searchLibrary searches only what lib's options express: points of its
// grid, then their neighbours, ranked with the current policy (the
// library's preset). A library whose options cannot spread a fleet has
// its current policy alone.
func (r *Result) searchLibrary(ctx context.Context, lib *libraryAdvice, rng *rand.Rand) ([]Candidate, error) {
	cfg := r.Config
	pool := []Candidate{r.Current}
	if lib.grid == nil {
		return pool, nil
	}
	g := lib.grid(r.Outage, r.Bound)
	seen := map[string]bool{cfg.Sim.Policy.String(): true}
	fits := func(ps []backoff.Policy) []backoff.Policy {
		return slices.DeleteFunc(ps, func(p backoff.Policy) bool { return cfg.MaxDelay > 0 && !within(p, cfg.MaxDelay) })
	}
	stage1 := fits(lib.libraryDraws(g, rng, seen, cfg.Budget*2/3))
	got, err := r.evaluate(ctx, stage1)
	if err != nil {
		return nil, err
	}
	pool = r.rank(append(pool, got...))
	var near []backoff.Policy
	for _, c := range pool[:min(3, len(pool))] {
		for _, p := range lib.libraryNeighbours(g, c.Policy) {
			if s := p.String(); !seen[s] && len(near) < cfg.Budget-len(stage1) {
				seen[s] = true
				near = append(near, p)
			}
		}
	}
	if got, err = r.evaluate(ctx, fits(near)); err != nil {
		return nil, err
	}
	return r.rank(append(pool, got...)), nil
}

// distinct returns up to n of the ranked candidates, leaving out one
// whose figures are those of a better one: a ceiling the fleet never
// reaches changes the spec, not the herd.
func distinct(ranked []Candidate, n int) []Candidate {
	type figures struct{ r50, r99, r100, peak, wasted float64 }
	seen := map[figures]bool{}
	var out []Candidate
	for _, c := range ranked {
		f := figures{round3(c.R50), round3(c.R99), round3(c.R100), c.Peak, round3(c.Wasted)}
		if seen[f] {
			continue
		}
		seen[f] = true
		if out = append(out, c); len(out) == n {
			break
		}
	}
	return out
}

// within reports whether p never waits longer than limit.
func within(p backoff.Policy, limit time.Duration) bool {
	d, ok := LongestWait(p)
	return ok && d <= limit
}

// draws returns up to n policies not seen yet: first those given, then
// drawn from the space; only valid policies, each once. It gives up
// after a bounded number of draws.
func draws(sp space, rng *rand.Rand, seen map[string]bool, first []backoff.Policy, n int) []backoff.Policy {
	var out []backoff.Policy
	add := func(p backoff.Policy) {
		if len(out) >= n || p.Validate() != nil || sp.limit > 0 && !within(p, sp.limit) || seen[p.String()] {
			return
		}
		seen[p.String()] = true
		out = append(out, p)
	}
	for _, p := range first {
		add(p)
	}
	for i := 0; i < 50*n && len(out) < n; i++ {
		add(sp.draw(rng))
	}
	return out
}

// InterruptedError is Search's error when its context ended (Ctrl-C):
// Run is the simulation that was under way, its figures up to the
// virtual time it reached (sim.Result.Interrupted).
type InterruptedError struct {
	Run *sim.Result
}

func (e *InterruptedError) Error() string { return "advise: interrupted" }

// Unwrap returns sim.ErrInterrupted.
func (e *InterruptedError) Unwrap() error { return sim.ErrInterrupted }

// evaluate simulates every policy with every seed, Workers at a time,
// and returns their candidates in the order given.
func (r *Result) evaluate(ctx context.Context, policies []backoff.Policy) ([]Candidate, error) {
	cfg := r.Config
	runs := make([]*sim.Result, len(policies)*cfg.Seeds)
	errs := make([]error, len(runs))
	workers := cfg.Workers
	if workers == 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, len(runs)) {
		wg.Go(func() {
			for j := range jobs {
				sc := cfg.Sim
				sc.Policy = policies[j/cfg.Seeds]
				sc.Seed = cfg.Sim.Seed + uint64(j%cfg.Seeds)
				sc.OnRetry = nil
				runs[j], errs[j] = sim.Run(ctx, sc)
			}
		})
	}
	for j := range runs {
		jobs <- j
	}
	close(jobs)
	wg.Wait()
	for j, err := range errs {
		if errors.Is(err, sim.ErrInterrupted) && runs[j] != nil {
			return nil, &InterruptedError{Run: runs[j]}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	r.Simulations += len(runs)
	out := make([]Candidate, len(policies))
	for i, p := range policies {
		out[i] = r.score(p, runs[i*cfg.Seeds:(i+1)*cfg.Seeds])
	}
	return out, nil
}

// score turns one policy's runs into its candidate: the recovery of the
// first event that took clients down, in every seed.
func (r *Result) score(p backoff.Policy, runs []*sim.Result) Candidate {
	c := Candidate{Policy: p, first: runs[0], WithinCapacity: true}
	n := float64(len(runs))
	for _, run := range runs {
		sum := sim.Summarize(run, nil)
		ev := recoveryOf(sum)
		c.event = ev
		if ev < 0 {
			c.R50, c.R99, c.R100 = math.NaN(), math.NaN(), math.NaN()
			continue
		}
		rec := sum.Recovery[ev]
		c.R50 += orNaN(rec.R50S) / n
		c.R99 += orNaN(rec.R99S) / n
		c.R100 += orNaN(rec.R100S) / n
		if rec.HerdPeakPer100ms != nil {
			c.Peak = max(c.Peak, float64(*rec.HerdPeakPer100ms))
		}
		c.Wasted += orNaN(rec.WastedAttemptsPerClient) / n
	}
	c.WithinCapacity = c.Peak <= r.Capacity.Per100ms()
	return c
}

// recoveryOf returns the index of the first recovery whose event took
// clients down; -1 if none did.
func recoveryOf(sum *summary.Summary) int {
	for i, rec := range sum.Recovery {
		if rec.Disconnected > 0 {
			return i
		}
	}
	return -1
}

func orNaN(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

// outageOf is the event's start to ready in c's first run.
func outageOf(c Candidate) time.Duration {
	if c.event < 0 {
		return 0
	}
	sum := sim.Summarize(c.first, nil)
	e := sum.Events[sum.Recovery[c.event].Event]
	if e.OutageS == nil {
		return 0
	}
	return time.Duration(*e.OutageS * float64(time.Second))
}

// rank sorts candidates best first: those that bring 99 % of the fleet
// back, then those whose herd stays within the server's capacity (among
// those that do not, the lowest herd peak first, in steps of 5 % of the
// capacity), then by the objective,
// then R99, wasted attempts, peak and the spec.
func (r *Result) rank(cs []Candidate) []Candidate {
	obj := func(c Candidate) float64 {
		switch r.Config.Objective {
		case Wasted:
			return c.Wasted
		case Peak:
			return c.Peak
		}
		return c.R99
	}
	slices.SortStableFunc(cs, func(a, b Candidate) int {
		if d := -cmp.Compare(boolInt(a.Recovered()), boolInt(b.Recovered())); d != 0 {
			return d
		}
		if d := -cmp.Compare(boolInt(a.WithinCapacity), boolInt(b.WithinCapacity)); d != 0 {
			return d
		}
		if !a.WithinCapacity { // neither is: the herd closest to capacity first
			if d := cmp.Compare(r.peakStep(a.Peak), r.peakStep(b.Peak)); d != 0 {
				return d
			}
		}
		for _, f := range []func(Candidate) float64{obj, func(c Candidate) float64 { return c.R99 },
			func(c Candidate) float64 { return c.Wasted }, func(c Candidate) float64 { return c.Peak }} {
			if d := cmp.Compare(round3(f(a)), round3(f(b))); d != 0 {
				return d
			}
		}
		return cmp.Compare(a.Policy.String(), b.Policy.String())
	})
	return cs
}

// peakStep is a herd peak in steps of 5 % of the capacity per 100 ms:
// peaks a step apart are the same herd to the server, and the objective
// decides between them.
func (r *Result) peakStep(peak float64) float64 {
	step := 0.05 * r.Capacity.Per100ms()
	if step <= 0 {
		return peak
	}
	return math.Floor(peak / step)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// round3 rounds to 3 decimals, so that noise below a millisecond (or a
// thousandth of an attempt) does not decide a rank.
func round3(v float64) float64 { return math.Round(v*1000) / 1000 }
