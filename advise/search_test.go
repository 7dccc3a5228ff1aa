package advise

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/chaos"
	"github.com/stampede-dev/stampede/mitigation"
	"github.com/stampede-dev/stampede/sim"
	"github.com/stampede-dev/stampede/spec"
)

// benchLike is the bench's storm at a size of clients: backlog 128 (16
// below 1,000 clients), an accept rate that brings the fleet back in 5 s,
// TCP_SYNCNT 2, a 5 s upgrade deadline, an abrupt restart with 2 s down.
func benchLike(t testing.TB, clients int, policy string) sim.Config {
	t.Helper()
	sched, err := chaos.Parse("at 8s restart abrupt down=2s")
	if err != nil {
		t.Fatal(err)
	}
	cfg := sim.Config{Duration: 40 * time.Second, Schedule: sched}
	cfg.Client = spec.Client{Clients: clients, Policy: backoff.MustParse(policy), Seed: 1, SynRetries: 2, HandshakeTimeout: 5 * time.Second}
	cfg.Server = spec.Server{Backlog: 128, AcceptRate: float64(clients) / 5}
	if clients < 1000 {
		cfg.Backlog = 16
	}
	cfg.Ramp = 0.9 * cfg.AcceptRate
	return cfg
}

// small is a search of 300 clients, 8 candidates and 2 seeds: seconds.
func small(t testing.TB, policy string) Config {
	return Config{Sim: benchLike(t, 300, policy), Budget: 8, Seeds: 2, Workers: 2}
}

// TestSearchDeterministic: the same config gives the same advice, byte
// for byte, whatever the order the workers finish in.
func TestSearchDeterministic(t *testing.T) {
	var got [2][]byte
	for i, workers := range []int{1, 2} {
		cfg := small(t, "fixed:initial=1s")
		cfg.Workers, cfg.Budget = workers, 16 // 10 in the first stage: 5 anchors, 5 drawn
		res, err := Search(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if got[i], err = json.Marshal(res.Advice()); err != nil {
			t.Fatal(err)
		}
	}
	if string(got[0]) != string(got[1]) {
		t.Fatalf("two searches of one config differ:\n%s\n%s", got[0], got[1])
	}
}

// TestSearchBeatsLockstep: against a fixed 1 s fleet whose herd is three
// times what the server takes, the recommendation keeps the herd within
// capacity, recovers no later, and every candidate shown is ranked: no
// candidate within capacity comes after one outside it, and R99 grows
// down the list among those within it.
func TestSearchBeatsLockstep(t *testing.T) {
	res, err := Search(context.Background(), small(t, "fixed:initial=1s"))
	if err != nil {
		t.Fatal(err)
	}
	capy := res.Capacity.Per100ms()
	if capy != 0.1*60+16 {
		t.Fatalf("capacity per 100 ms %v, want 22", capy)
	}
	cur, rec := res.Current, res.Recommended()
	if cur.Peak <= capy || cur.WithinCapacity {
		t.Fatalf("the fixed fleet's herd peak %v should exceed the capacity %v", cur.Peak, capy)
	}
	if !rec.WithinCapacity || rec.Peak > capy {
		t.Errorf("recommended %s: herd peak %v over the capacity %v", rec.Policy, rec.Peak, capy)
	}
	if !(rec.R99 <= cur.R99) {
		t.Errorf("recommended %s: R99 %v later than the current %v", rec.Policy, rec.R99, cur.R99)
	}
	if b := res.Bound.Seconds(); rec.R99 < 0.9*b {
		t.Errorf("recommended R99 %v beats the physical bound %v by more than the last 1 %%", rec.R99, b)
	}
	for i := 1; i < len(res.Best); i++ {
		a, b := res.Best[i-1], res.Best[i]
		if !a.WithinCapacity && b.WithinCapacity {
			t.Errorf("candidate %d (%s) within capacity ranked after %d outside it", i, b.Policy, i-1)
		}
		if a.WithinCapacity && b.WithinCapacity && round3(a.R99) > round3(b.R99) {
			t.Errorf("candidate %d R99 %v ranked before %d with %v", i-1, a.R99, i, b.R99)
		}
	}
	if want := (2 + 8 + len(mitigation.Kinds)) * 2; res.Simulations != want {
		t.Errorf("%d simulations, want (current + reference + 8 candidates + %d mitigations) × 2 seeds = %d",
			res.Simulations, len(mitigation.Kinds), want)
	}
	// What the server can do for the fixed fleet: every kind, none first,
	// and a return hint spreads the herd below the server as it is.
	var names []string
	for _, m := range res.Mitigations {
		names = append(names, m.Mitigation.Kind)
	}
	if !slices.Equal(names, mitigation.Kinds) {
		t.Fatalf("mitigations %v, want %v", names, mitigation.Kinds)
	}
	if none, hint := res.Mitigations[0], res.Mitigations[len(names)-1]; !(hint.Peak < none.Peak) || none.Policy.String() != cur.Policy.String() {
		t.Errorf("hint: herd peak %v, none %v (policy %s): want the hint's lower, for the current policy", hint.Peak, none.Peak, none.Policy)
	}
}

// TestMaxDelay: with a longest wait of 2 s every candidate fits under it
// and the recommendation is not the unconstrained one, whose spread
// reaches past the outage plus the bound.
func TestMaxDelay(t *testing.T) {
	free, err := Search(context.Background(), small(t, ReferencePolicy))
	if err != nil {
		t.Fatal(err)
	}
	cfg := small(t, ReferencePolicy)
	cfg.MaxDelay = 2 * time.Second
	res, err := Search(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Best {
		if d, ok := LongestWait(c.Policy); !ok || d > cfg.MaxDelay {
			t.Errorf("candidate %s may wait %s (bounded %v), over %s", c.Policy, d, ok, cfg.MaxDelay)
		}
	}
	if d, _ := LongestWait(free.Recommended().Policy); d <= cfg.MaxDelay {
		t.Fatalf("the unconstrained recommendation %s waits at most %s: the test shows nothing", free.Recommended().Policy, d)
	}
	if res.Recommended().Policy.String() == free.Recommended().Policy.String() {
		t.Errorf("--max-delay did not change the recommendation %s", res.Recommended().Policy)
	}
}

// TestObjectives: each objective puts first the candidate best on it,
// among those recovered and within capacity.
func TestObjectives(t *testing.T) {
	mk := func(spec string, r99, peak, wasted float64, within bool) Candidate {
		return Candidate{Policy: backoff.MustParse(spec), R99: r99, Peak: peak, Wasted: wasted, WithinCapacity: within}
	}
	cs := []Candidate{
		mk("fixed:initial=1s", 3, 900, 0.1, false),             // fastest, over capacity
		mk("exp:initial=1s", 5, 300, 0.3, true),                // fastest within
		mk("full:initial=1s", 7, 100, 0.2, true),               // flattest
		mk("equal:initial=1s", 6, 200, 0.01, true),             // fewest wasted
		mk("decorrelated:initial=1s", math.NaN(), 50, 0, true), // never recovers
		mk("exp:initial=2s", 2, 1000, 0.1, false),              // faster, but further over capacity
	}
	for _, tc := range []struct {
		obj  Objective
		want string
	}{{R99, "exp:initial=1s"}, {Peak, "full:initial=1s"}, {Wasted, "equal:initial=1s"}} {
		r := &Result{Config: Config{Objective: tc.obj}}
		got := r.rank(append([]Candidate(nil), cs...))
		if got[0].Policy.String() != tc.want {
			t.Errorf("objective %s: first %s, want %s", tc.obj, got[0].Policy, tc.want)
		}
		if last := got[len(got)-1].Policy.Kind; last != backoff.Decorrelated {
			t.Errorf("objective %s: last is %s, want the one that never recovers", tc.obj, last)
		}
	}
}

func TestConfigFieldErrors(t *testing.T) {
	base := small(t, ReferencePolicy)
	for _, tc := range []struct {
		name  string
		edit  func(*Config)
		field string
	}{
		{"objective", func(c *Config) { c.Objective = "fast" }, "Advise.Objective"},
		{"max delay", func(c *Config) { c.MaxDelay = time.Millisecond }, "Advise.MaxDelay"},
		{"seeds", func(c *Config) { c.Seeds = MaxSeeds + 1 }, "Advise.Seeds"},
		{"budget", func(c *Config) { c.Budget = -1 }, "Advise.Budget"},
		{"no event", func(c *Config) { c.Sim.Schedule = nil }, "Sim.Schedule"},
		{"sim's own", func(c *Config) { c.Sim.Duration = 0 }, "Sim.Duration"},
	} {
		cfg := base
		tc.edit(&cfg)
		err := cfg.Validate()
		fe, ok := err.(*spec.FieldError)
		if !ok || fe.Field != tc.field {
			t.Errorf("%s: got %v, want a field error on %s", tc.name, err, tc.field)
		}
	}
}

// TestExplore prints a search of the acceptance storm (10,000 clients),
// when ADVISE_EXPLORE is set.
func TestExplore(t *testing.T) {
	if os.Getenv("ADVISE_EXPLORE") == "" {
		t.Skip("set ADVISE_EXPLORE=1 to print the 10,000-client search")
	}
	cfg := Config{Sim: benchLike(t, 10000, ReferencePolicy)}
	cfg.Sim.Duration = 45 * time.Second
	if d := os.Getenv("ADVISE_MAXDELAY"); d != "" {
		cfg.MaxDelay, _ = time.ParseDuration(d)
	}
	res, err := Search(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range append([]Candidate{res.Current}, res.Best...) {
		t.Logf("%-60s r50 %.2f r99 %.2f r100 %.2f peak %.0f wasted %.3f within %v", c.Policy, c.R50, c.R99, c.R100, c.Peak, c.Wasted, c.WithinCapacity)
	}
	t.Log(res.Reason)
}

// TestRankOverCapacity: when no candidate keeps the herd within capacity,
// the one closest to it comes first, whatever the objective.
func TestRankOverCapacity(t *testing.T) {
	mk := func(spec string, r99, peak float64) Candidate {
		return Candidate{Policy: backoff.MustParse(spec), R99: r99, Peak: peak}
	}
	r := &Result{Config: Config{Objective: R99}}
	got := r.rank([]Candidate{mk("fixed:initial=1s", 5.1, 650), mk("exp:initial=1s", 5.2, 350), mk("full:initial=1s", 5.0, 900)})
	if got[0].Policy.Kind != backoff.Exp {
		t.Errorf("first %s (peak %v), want the herd closest to capacity, exp (peak 350)", got[0].Policy, got[0].Peak)
	}
	// Peaks within 5 % of the capacity of each other are one herd: R99
	// decides.
	r.Capacity = Capacity{AcceptRate: 2000, Backlog: 128} // 328 per 100 ms
	got = r.rank([]Candidate{mk("full:initial=5s,max=5s", 5.33, 348), mk("exp:initial=1s", 5.21, 349), mk("fixed:initial=1s", 5.0, 666)})
	if got[0].Policy.Kind != backoff.Exp || got[2].Policy.Kind != backoff.Fixed {
		t.Errorf("order %s, %s, %s; want exp (349, R99 5.21s) before full (348, 5.33s), fixed (666) last", got[0].Policy, got[1].Policy, got[2].Policy)
	}
}

// TestSearchTLSMitigations: against a wss:// server with an RSA-2048
// certificate and its ticket keys in memory, the search also predicts
// keeping the keys and an ECDSA certificate, and both bring the fleet
// back in under half the time of the server as it is, whose process pays
// a full RSA handshake per reconnect, keeping the keys no later.
func TestSearchTLSMitigations(t *testing.T) {
	cfg := Config{Sim: benchLike(t, 3000, ReferencePolicy), Budget: 2, Seeds: 1, Workers: 2}
	cfg.Sim.AcceptRate, cfg.Sim.TLSCertKind = 5000, "rsa-2048" // the handshakes, not the rate, bound it
	res, err := Search(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	r99 := map[string]float64{}
	for _, m := range res.Mitigations {
		r99[m.Mitigation.Kind] = m.R99
	}
	none, kept, ecdsa := r99[mitigation.None], r99[mitigation.TicketsKept], r99[mitigation.ECDSA]
	t.Logf("R99: none %.2fs, tickets-kept %.2fs, ecdsa %.2fs", none, kept, ecdsa)
	if kept == 0 || ecdsa == 0 || !(kept <= ecdsa && ecdsa < none/2) {
		t.Errorf("R99: none %.2fs, tickets-kept %.2fs, ecdsa %.2fs; want tickets-kept <= ecdsa, both under half of none", none, kept, ecdsa)
	}
	cfg.Sim.TLSCertKind, cfg.Sim.TLS = "", false // ws://: no TLS row
	if ms := mitigationsFor(cfg.Sim.Server, cfg.Sim.Schedule, 3000, 5000); len(ms) != len(mitigation.Kinds) {
		t.Errorf("ws:// server: %d mitigations, want the %d kinds", len(ms), len(mitigation.Kinds))
	}
}
