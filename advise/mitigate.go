package advise

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/chaos"
	"github.com/stampede-dev/stampede/mitigation"
	"github.com/stampede-dev/stampede/spec"
)

// Mitigated is one server-side mitigation's prediction for the current
// policy: what the server could do for a fleet it cannot change.
type Mitigated struct {
	// Mitigation is the change simulated.
	Mitigation mitigation.Mitigation
	// Candidate holds the current policy's figures under it, over every
	// seed.
	Candidate
}

// Mitigations simulates the current policy (cfg.Sim's) against each of
// ms, every one with every seed, and returns their predictions in the
// order given. A mitigation the server spec cannot take (an admission
// ramp without an accept rate) is an error.
func Mitigations(ctx context.Context, cfg Config, ms []mitigation.Mitigation) ([]Mitigated, int, error) {
	if err := cfg.Validate(); err != nil {
		return nil, 0, err
	}
	cfg = cfg.withDefaults()
	return mitigate(ctx, cfg, cfg.capacity(), ms)
}

// mitigate is Mitigations of a valid cfg with its defaults, scored
// against capy.
func mitigate(ctx context.Context, cfg Config, capy Capacity, ms []mitigation.Mitigation) ([]Mitigated, int, error) {
	out := make([]Mitigated, len(ms))
	n := 0
	for i, m := range ms {
		if err := m.Check(cfg.Sim.Server); err != nil {
			return nil, n, fmt.Errorf("mitigation %s: %w", m, err)
		}
		c := cfg
		c.Sim.Server, c.Sim.Schedule = m.Apply(cfg.Sim.Server, cfg.Sim.Schedule)
		c.Sim.ScheduleText = c.Sim.Schedule.String()
		r := &Result{Config: c, Capacity: capy}
		got, err := r.evaluate(ctx, []backoff.Policy{cfg.Sim.Policy})
		if err != nil {
			return nil, n, err
		}
		n += r.Simulations
		out[i] = Mitigated{Mitigation: m, Candidate: got[0]}
	}
	return out, n, nil
}

// ModelKeyFile is the ticket-key file a predicted tickets-kept
// mitigation names: the simulator reads no file, only that the keys
// survive the restart.
const ModelKeyFile = "(kept across the restart: the model reads no file)"

// mitigationsFor returns the mitigations a search predicts: every kind
// the server can take, with the window it needs to take the fleet back
// (mitigation.Window), then, for a wss:// server, the TLS kinds that
// would change it (keeping its ticket keys, an ECDSA certificate:
// mitigation.TLS); none when the schedule restarts nothing, since they
// act on a restart.
func mitigationsFor(srv spec.Server, sched *chaos.Schedule, clients int, acceptRate float64) []mitigation.Mitigation {
	if sched == nil || !slices.ContainsFunc(sched.Entries, func(e chaos.Entry) bool { return e.Event.Kind == chaos.Restart }) {
		return nil
	}
	var out []mitigation.Mitigation
	for _, m := range append(mitigation.All(mitigation.Window(clients, acceptRate)), mitigation.TLS(srv, ModelKeyFile)...) {
		if m.Check(srv) == nil {
			out = append(out, m)
		}
	}
	return out
}

// Order returns the mitigations' names from fewest to most wasted
// attempts per client (then shortest R99), the order a bench of
// mitigations compares with what it measured; figures within 0.01
// attempts and 1 % of R99 tie, and a tie keeps the given order.
func Order(names []string, wasted, r99 []float64) []string {
	idx := make([]int, len(names))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		if d := cmp.Compare(math.Round(wasted[a]*100), math.Round(wasted[b]*100)); d != 0 {
			return d
		}
		if math.Abs(r99[a]-r99[b]) <= 0.01*max(r99[a], r99[b]) {
			return 0
		}
		return cmp.Compare(r99[a], r99[b])
	})
	out := make([]string, len(idx))
	for i, j := range idx {
		out[i] = names[j]
	}
	return out
}

// OrderText is an order as one line: "hint=5s < shed=5s < none".
func OrderText(order []string) string { return strings.Join(order, " < ") }
