package advise

import (
	"strings"
	"time"

	"github.com/stampede-dev/stampede/sim"
	"github.com/stampede-dev/stampede/spec"
)

// Objective is what the search minimises among the policies that bring
// the whole fleet back.
type Objective string

// The objectives.
const (
	// R99 is the seconds from ready until 99 % of the fleet is back.
	R99 Objective = "r99"
	// Wasted is the failed attempts per client after ready.
	Wasted Objective = "wasted"
	// Peak is the most attempts in one 100 ms window.
	Peak Objective = "peak"
)

// Defaults of a search.
const (
	// DefaultSeeds is how many seeds every candidate is simulated with.
	DefaultSeeds = 3
	// DefaultBudget is how many candidate policies are simulated (each
	// with every seed), the current one and the reference not counted.
	DefaultBudget = 36
	// MaxBudget and MaxSeeds bound a search: Budget × Seeds simulations.
	MaxBudget = 400
	MaxSeeds  = 20
	// DefaultShown is how many of the best candidates a result keeps.
	DefaultShown = 5
)

// ReferencePolicy is the policy `stampede run` uses without one: a
// candidate of every search, so the recommendation is never predicted
// worse than it.
const ReferencePolicy = "exp:initial=1s,max=60s,jitter=0.5,spread=100ms-500ms"

// Config is one search. Its zero value but Sim means the defaults.
type Config struct {
	// Sim is the fleet, the server, the chaos schedule and the model every
	// simulation runs; its Client.Policy is the current policy and its
	// Client.Seed the first seed (and the search's own).
	Sim sim.Config
	// Objective is what the search minimises; empty is R99.
	Objective Objective
	// MaxDelay, when positive, is the longest wait between attempts a
	// recommended policy may have: every candidate is fitted under it.
	MaxDelay time.Duration
	// Seeds is how many seeds each candidate runs with (Sim.Client.Seed,
	// +1, ...); 0 is DefaultSeeds.
	Seeds int
	// Budget is how many candidate policies are simulated; 0 is
	// DefaultBudget.
	Budget int
	// Shown is how many of the best candidates the result keeps; 0 is
	// DefaultShown.
	Shown int
	// Workers is how many simulations run at once; 0 is GOMAXPROCS.
	Workers int
	// Library, when set, names a client library (Libraries): the search
	// keeps to the policies that library's options can express, its
	// default rule is the current policy unless Sim's policy is a preset of
	// it, and Result.Snippet renders the recommendation in its own words.
	Library string
	// Capacity, when its AcceptRate is positive, is the server's capacity
	// as measured (Infer); zero derives it from Sim (CapacityOf).
	Capacity Capacity
}

// capacity is the server's capacity the search scores against: the
// measured one when given, else the one Sim's server has (CapacityOf).
func (c Config) capacity() Capacity {
	if c.Capacity.AcceptRate > 0 {
		return c.Capacity
	}
	return CapacityOf(c.Sim)
}

// withDefaults returns c with every zero field set to its default.
func (c Config) withDefaults() Config {
	if c.Objective == "" {
		c.Objective = R99
	}
	if c.Seeds == 0 {
		c.Seeds = DefaultSeeds
	}
	if c.Budget == 0 {
		c.Budget = DefaultBudget
	}
	if c.Shown == 0 {
		c.Shown = DefaultShown
	}
	return c
}

// Validate reports the first field that makes the search unusable as a
// *spec.FieldError ("Advise.Seeds"); the simulation's own fields are
// checked by sim.Config.Validate.
func (c Config) Validate() error {
	bad := func(field, format string, a ...any) error { return spec.Errorf("Advise."+field, format, a...) }
	switch {
	case c.Objective != "" && c.Objective != R99 && c.Objective != Wasted && c.Objective != Peak:
		return bad("Objective", "must be r99, wasted or peak, got %q", string(c.Objective))
	case c.Library != "" && libraryOf(c.Library) == nil:
		return bad("Library", "no advice for %q; libraries: %s", c.Library, strings.Join(Libraries(), ", "))
	case c.MaxDelay < 0:
		return bad("MaxDelay", "must not be negative, got %s", c.MaxDelay)
	case c.MaxDelay > 0 && c.MaxDelay < 10*time.Millisecond:
		return bad("MaxDelay", "must be at least 10ms, got %s", c.MaxDelay)
	case c.Seeds < 0 || c.Seeds > MaxSeeds:
		return bad("Seeds", "must be within 1..%d, got %d", MaxSeeds, c.Seeds)
	case c.Budget < 0 || c.Budget > MaxBudget:
		return bad("Budget", "must be within 1..%d, got %d", MaxBudget, c.Budget)
	case c.Shown < 0:
		return bad("Shown", "must not be negative, got %d", c.Shown)
	case c.Workers < 0:
		return bad("Workers", "must not be negative, got %d", c.Workers)
	case c.Capacity.AcceptRate < 0:
		return bad("Capacity", "accept rate must not be negative, got %g", c.Capacity.AcceptRate)
	case c.Sim.Schedule == nil || len(c.Sim.Schedule.Entries) == 0:
		return spec.Errorf("Sim.Schedule", "advise needs a chaos event to recover from, e.g. 'at 8s restart abrupt down=2s'")
	}
	return c.Sim.Validate()
}
