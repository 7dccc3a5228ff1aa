package backoff

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	ms = time.Millisecond
	s  = time.Second
)

// TestDelaysExact pins the schedule of each kind where it has no randomness
// (or its randomness is pinned by the seed).
func TestDelaysExact(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    Policy
		want []time.Duration
	}{
		{
			// docs/policy.md's worked example: must hold exactly.
			name: "exp 1s x2 max 60s",
			p:    Policy{Kind: Exp, Initial: s, Multiplier: 2, Max: 60 * s},
			want: []time.Duration{1 * s, 2 * s, 4 * s, 8 * s, 16 * s, 32 * s, 60 * s, 60 * s, 60 * s},
		},
		{
			// docs/policy.md's HTTP example.
			name: "http exp 500ms x2 max 30s",
			p:    Policy{Kind: Exp, Initial: 500 * ms, Multiplier: 2, Max: 30 * s},
			want: []time.Duration{500 * ms, 1 * s, 2 * s, 4 * s},
		},
		{
			// The zero value is exp from 1 s doubling, no ceiling.
			name: "zero value",
			p:    Policy{},
			want: []time.Duration{1 * s, 2 * s, 4 * s, 8 * s},
		},
		{
			name: "exp x1.5",
			p:    Policy{Kind: Exp, Initial: s, Multiplier: 1.5},
			want: []time.Duration{1 * s, 1500 * ms, 2250 * ms, 3375 * ms},
		},
		{
			name: "fixed 1s",
			p:    Policy{Kind: Fixed, Initial: s},
			want: []time.Duration{s, s, s, s},
		},
		{
			// A ceiling below Initial caps even the first retry.
			name: "exp max below initial",
			p:    Policy{Kind: Exp, Initial: 2 * s, Max: s},
			want: []time.Duration{s, s},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.p.Delays(1, 0, len(tc.want)); !slices.Equal(got, tc.want) {
				t.Errorf("Delays = %v, want %v", got, tc.want)
			}
			for i, want := range tc.want {
				if got := tc.p.Delay(42, 7, i+1); got != want {
					t.Errorf("Delay(attempt %d) = %v, want %v", i+1, got, want)
				}
			}
		})
	}
}

// TestDelaySeeded pins a few seeded delays of every kind. They are the
// reproducibility contract: a change here means a recorded seed no longer
// replays the same schedule, which must be a deliberate decision.
func TestDelaySeeded(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want []time.Duration // clients 0, 1, 2; attempts 1, 2, 3 (client-major)
	}{
		{"fixed:initial=1s,jitter=0.5", []time.Duration{1249389122, 893590206, 1466783946, 1482585764, 619709122, 759520589, 1049456858, 730071157, 1421730658}},
		{"exp:initial=1s,max=60s,jitter=0.5,spread=100ms-500ms", []time.Duration{422180958, 603905961, 1982563290, 439924173, 367769649, 901483004, 314725646, 437887684, 1705473060}},
		{"full:initial=1s", []time.Duration{749389122, 787180412, 3867135787, 982585764, 239418244, 1038082356, 549456858, 460142315, 3686922632}},
		{"equal:initial=1s", []time.Duration{874694561, 1393590206, 3933567893, 991292882, 1119709122, 2519041178, 774728429, 1230071157, 3843461316}},
		{"decorrelated:initial=1s,max=60s", []time.Duration{2498778244, 3556893726, 10349459317, 2965171529, 1945165119, 2254910603, 2098913716, 2218627367, 6213199931}},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			p := MustParse(tc.spec)
			var got []time.Duration
			for c := uint64(0); c < 3; c++ {
				got = append(got, p.Delays(1, c, 3)...)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("seed 1 delays = %#v, want %#v", got, tc.want)
			}
		})
	}
}

// TestStep checks the pure core with given draws u.
func TestStep(t *testing.T) {
	band := Policy{Kind: Fixed, Initial: s, Jitter: 0.5}
	expBand := Policy{Kind: Exp, Initial: s, Jitter: 0.2}
	full := Policy{Kind: Full, Initial: s}
	equal := Policy{Kind: Equal, Initial: s}
	dec := Policy{Kind: Decorrelated, Initial: s, Max: 5 * s}
	for _, tc := range []struct {
		name    string
		p       Policy
		attempt int
		base    time.Duration
		prev    time.Duration
		u       float64
		want    time.Duration
	}{
		{"band low end", band, 1, s, 0, 0, 500 * ms},
		{"band middle", band, 1, s, 0, 0.5, s},
		{"band three quarters", band, 7, s, 0, 0.75, 1250 * ms},
		{"exp band attempt 3", expBand, 3, s, 0, 0, 3200 * ms},
		{"exp band attempt 3 high", expBand, 3, s, 0, 0.75, 4400 * ms},
		{"full zero draw is the floor", full, 3, s, 0, 0, MinDelay},
		{"full draw under the floor", full, 1, s, 0, 0.0004, MinDelay},
		{"full draw at the floor", full, 1, s, 0, 0.001, MinDelay},
		{"full quarter of 4s", full, 3, s, 0, 0.25, s},
		{"equal half of 4s", equal, 3, s, 0, 0, 2 * s},
		{"equal 4s u=0.5", equal, 3, s, 0, 0.5, 3 * s},
		{"decorrelated first (prev 0 counts as base)", dec, 1, s, 0, 0.5, 2 * s},
		{"decorrelated from 2s", dec, 2, s, 2 * s, 0.25, 2250 * ms},
		{"decorrelated capped by max", dec, 3, s, 4 * s, 0.5, 5 * s},
		{"decorrelated zero draw is base", dec, 9, s, 4 * s, 0, s},
		{"spread base replaces initial", Policy{Kind: Exp, Initial: s, SpreadMin: 100 * ms, SpreadMax: 500 * ms}, 2, 300 * ms, 0, 0, 600 * ms},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.p.Step(tc.attempt, tc.base, tc.prev, tc.u); got != tc.want {
				t.Errorf("Step(%d, %v, %v, %v) = %v, want %v", tc.attempt, tc.base, tc.prev, tc.u, got, tc.want)
			}
		})
	}
}

// TestBase checks the per-client spread draw maps onto [SpreadMin, SpreadMax].
func TestBase(t *testing.T) {
	p := Policy{SpreadMin: 100 * ms, SpreadMax: 500 * ms}
	for _, tc := range []struct {
		u    float64
		want time.Duration
	}{{0, 100 * ms}, {0.5, 300 * ms}, {0.25, 200 * ms}} {
		if got := p.Base(tc.u); got != tc.want {
			t.Errorf("Base(%v) = %v, want %v", tc.u, got, tc.want)
		}
	}
	if got := (Policy{Initial: 3 * s}).Base(0.9); got != 3*s {
		t.Errorf("Base without spread = %v, want Initial 3s", got)
	}
	if got := (Policy{}).Base(0.9); got != DefaultInitial {
		t.Errorf("Base of zero policy = %v, want DefaultInitial", got)
	}
}

// TestOverflow: a long outage takes an uncapped policy to huge attempt
// numbers; the delay saturates at the longest Duration, never wraps
// negative, and never shrinks as attempts grow.
func TestOverflow(t *testing.T) {
	for _, spec := range []string{
		"exp", "exp:multiplier=10", "exp:jitter=1", "exp:initial=24h,multiplier=1000,jitter=1",
		"full", "equal", "decorrelated", "fixed:initial=24h,jitter=1",
	} {
		p := MustParse(spec)
		for _, attempt := range []int{1, 62, 63, 64, 100, 1000, 10_000, math.MaxInt32} {
			for _, u := range []float64{0, 0.5, math.Nextafter(1, 0)} {
				if d := p.Step(attempt, p.ClientBase(1, 0), math.MaxInt64, u); d < 0 {
					t.Errorf("%s: Step(attempt %d, u %v) = %v < 0", spec, attempt, u, d)
				}
			}
		}
		if d := p.Delay(1, 0, 10_000); d < 0 {
			t.Errorf("%s: Delay(attempt 10000) = %v < 0", spec, d)
		}
		if p.Kind == Exp && p.Jitter == 0 {
			if d := p.Delay(1, 0, 10_000); d != math.MaxInt64 {
				t.Errorf("%s: Delay(attempt 10000) = %v, want saturated %v", spec, d, time.Duration(math.MaxInt64))
			}
		}
		prev := time.Duration(0)
		for attempt := 1; attempt <= 2000; attempt++ {
			d := p.Nominal(attempt, p.ClientBase(1, 0))
			if d < prev {
				t.Fatalf("%s: Nominal(%d) = %v < Nominal(%d) = %v", spec, attempt, d, attempt-1, prev)
			}
			prev = d
		}
	}
}

// TestDeterminism: a delay depends only on (policy, seed, client, attempt):
// the same grid computed in order and shuffled across goroutines agrees,
// and Delays agrees with Delay (decorrelated included).
func TestDeterminism(t *testing.T) {
	const clients, attempts = 50, 12
	for _, spec := range []string{
		"fixed:jitter=0.3", "exp:max=60s,jitter=0.5,spread=100ms-500ms", "full:max=30s", "equal", "decorrelated:max=20s",
	} {
		p := MustParse(spec)
		want := make([]time.Duration, clients*attempts)
		for c := 0; c < clients; c++ {
			ds := p.Delays(9, uint64(c), attempts)
			copy(want[c*attempts:], ds)
			for a := 1; a <= attempts; a++ {
				if d := p.Delay(9, uint64(c), a); d != ds[a-1] {
					t.Fatalf("%s: Delay(client %d, attempt %d) = %v, Delays gives %v", spec, c, a, d, ds[a-1])
				}
			}
		}
		order := rand.New(rand.NewPCG(1, 2)).Perm(len(want))
		got := make([]time.Duration, len(want))
		var wg sync.WaitGroup
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for _, i := range order[g*len(order)/4 : (g+1)*len(order)/4] {
					got[i] = p.Delay(9, uint64(i/attempts), i%attempts+1)
				}
			}()
		}
		wg.Wait()
		if !slices.Equal(got, want) {
			t.Errorf("%s: shuffled concurrent delays differ from sequential ones", spec)
		}
		if other := p.Delays(10, 0, attempts); slices.Equal(other, want[:attempts]) {
			t.Errorf("%s: seeds 9 and 10 gave the same schedule", spec)
		}
	}
}

// TestReset documents the reset semantics: the policy keeps no state; the
// caller's attempt counter restarts at 1 after a successful connect, so the
// schedule after the next disconnect starts from the first delay again (and,
// for the same seed and client, repeats the same draws).
func TestReset(t *testing.T) {
	p := MustParse("exp:initial=1s,max=60s,jitter=0.5")
	// A client fails three times, connects, is dropped again, fails twice.
	outcomes := []bool{false, false, false, true, false, false}
	var got []time.Duration
	attempt := 1
	for _, ok := range outcomes {
		got = append(got, p.Delay(1, 3, attempt))
		if ok {
			attempt = 1 // reset on success
		} else {
			attempt++
		}
	}
	first := p.Delays(1, 3, 4)
	want := append(append([]time.Duration{}, first...), first[:2]...)
	if !slices.Equal(got, want) {
		t.Errorf("delays around a reset = %v, want %v", got, want)
	}
}

// TestRetry checks the attempt limit.
func TestRetry(t *testing.T) {
	for _, tc := range []struct {
		max, attempt int
		want         bool
	}{{0, 1, true}, {0, 1_000_000, true}, {0, 0, false}, {3, 3, true}, {3, 4, false}, {3, -1, false}} {
		if got := (Policy{MaxAttempts: tc.max}).Retry(tc.attempt); got != tc.want {
			t.Errorf("MaxAttempts %d: Retry(%d) = %v, want %v", tc.max, tc.attempt, got, tc.want)
		}
	}
}

// TestValidate checks each rule names its spec key.
func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    Policy
		key  string // "" = valid
	}{
		{"zero value", Policy{}, ""},
		{"fixed multiplier 1", Policy{Kind: Fixed, Multiplier: 1}, ""},
		{"unknown kind", Policy{Kind: 9}, "kind"},
		{"negative initial", Policy{Initial: -1}, "initial"},
		{"initial above a day", Policy{Initial: 25 * time.Hour}, "initial"},
		{"initial under the floor", Policy{Kind: Fixed, Initial: time.Nanosecond}, "initial"},
		{"initial at the floor", Policy{Kind: Fixed, Initial: MinDelay}, ""},
		{"spread under the floor", Policy{SpreadMax: MinDelay - 1}, "spread"},
		{"spread from zero", Policy{Kind: Full, SpreadMax: MinDelay}, ""},
		{"multiplier below 1", Policy{Multiplier: 0.5}, "multiplier"},
		{"multiplier NaN", Policy{Multiplier: math.NaN()}, "multiplier"},
		{"multiplier Inf", Policy{Multiplier: math.Inf(1)}, "multiplier"},
		{"fixed multiplier 2", Policy{Kind: Fixed, Multiplier: 2}, "multiplier"},
		{"decorrelated multiplier", Policy{Kind: Decorrelated, Multiplier: 3}, "multiplier"},
		{"negative max", Policy{Max: -s}, "max"},
		{"jitter above 1", Policy{Jitter: 1.5}, "jitter"},
		{"jitter NaN", Policy{Jitter: math.NaN()}, "jitter"},
		{"jitter on full", Policy{Kind: Full, Jitter: 0.1}, "jitter"},
		{"spread inverted", Policy{SpreadMin: s, SpreadMax: ms}, "spread"},
		{"spread low end only", Policy{SpreadMin: s}, "spread"},
		{"spread negative", Policy{SpreadMin: -s, SpreadMax: s}, "spread"},
		{"spread above a day", Policy{SpreadMax: 25 * time.Hour}, "spread"},
		{"negative attempts", Policy{MaxAttempts: -1}, "attempts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.p.Validate()
			var ie *InvalidError
			switch {
			case tc.key == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tc.key != "" && !errors.As(err, &ie):
				t.Errorf("Validate() = %v, want *InvalidError for %q", err, tc.key)
			case tc.key != "" && ie.Key != tc.key:
				t.Errorf("Validate() names %q, want %q (%v)", ie.Key, tc.key, err)
			}
		})
	}
}

// TestHinted checks the Retry-After spread is never below the hint.
func TestHinted(t *testing.T) {
	for _, tc := range []struct {
		hint   time.Duration
		spread float64
		u      float64
		want   time.Duration
	}{
		{5 * s, HintSpread, 0, 5 * s},
		{5 * s, HintSpread, 0.5, 5500 * ms},
		{5 * s, -1, 0.5, 5 * s},
		{0, HintSpread, 0.5, 0},
		{-s, HintSpread, 0.5, 0},
		{math.MaxInt64, 1, 0.9, math.MaxInt64},
	} {
		if got := Hinted(tc.hint, tc.spread, tc.u); got != tc.want {
			t.Errorf("Hinted(%v, %v, %v) = %v, want %v", tc.hint, tc.spread, tc.u, got, tc.want)
		}
	}
}

// TestKindJSON checks that a policy travels as JSON with its kind by name,
// as it does inside worker plans and summary.json.
func TestKindJSON(t *testing.T) {
	p := MustParse("decorrelated:initial=100ms,max=5s")
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"kind":"decorrelated"`) {
		t.Fatalf("kind not by name: %s", b)
	}
	var q Policy
	if err := json.Unmarshal(b, &q); err != nil {
		t.Fatal(err)
	}
	if q != p {
		t.Fatalf("round trip: got %+v, want %+v", q, p)
	}
	if err := json.Unmarshal([]byte(`{"kind":"linear"}`), &q); err == nil {
		t.Fatal("unknown kind accepted")
	}
}

// TestWait checks the one retry decision: the policy's delay without a
// hint, the hint spread upwards with its own draw with one.
func TestWait(t *testing.T) {
	p := Policy{Kind: Exp, Initial: time.Second, Jitter: 0.5}
	for a := 1; a <= 5; a++ {
		if got, want := p.Wait(7, 3, a, 0), p.Delay(7, 3, a); got != want {
			t.Errorf("Wait(attempt %d, no hint) = %s, want Delay %s", a, got, want)
		}
		want := max(p.Delay(7, 3, a), Hinted(5*time.Second, HintSpread, U(7, StreamHint, 3, uint64(a))))
		if got := p.Wait(7, 3, a, 5*time.Second); got != want {
			t.Errorf("Wait(attempt %d, hint 5s) = %s, want %s", a, got, want)
		}
		if got := p.Wait(7, 3, a, time.Millisecond); got != p.Delay(7, 3, a) {
			t.Errorf("Wait(attempt %d, hint 1ms) = %s, want the policy's longer delay %s", a, got, p.Delay(7, 3, a))
		}
	}
}
