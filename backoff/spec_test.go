package backoff

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestParse checks specs that parse, with the Policy and canonical String
// each gives.
func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec string
		want Policy
		str  string // canonical form
	}{
		{"bare exp", "exp", Policy{Kind: Exp}, "exp"},
		{"bare fixed", "fixed", Policy{Kind: Fixed}, "fixed"},
		{"empty parameter list", "full:", Policy{Kind: Full}, "full"},
		{"docs example fixed", "fixed:initial=1s", Policy{Kind: Fixed, Initial: s}, "fixed:initial=1s"},
		{
			"docs example exp",
			"exp:initial=1s,multiplier=2,max=60s,jitter=0.2",
			Policy{Kind: Exp, Initial: s, Multiplier: 2, Max: 60 * s, Jitter: 0.2},
			"exp:initial=1s,multiplier=2,max=60s,jitter=0.2",
		},
		{
			"keys in any order, spaces ignored",
			" exp : attempts = 5 , spread=100ms-500ms,jitter=0.5, initial=2s ",
			Policy{Kind: Exp, Initial: 2 * s, Jitter: 0.5, SpreadMin: 100 * ms, SpreadMax: 500 * ms, MaxAttempts: 5},
			"exp:initial=2s,jitter=0.5,spread=100ms-500ms,attempts=5",
		},
		{"fixed multiplier 1 kept", "fixed:multiplier=1", Policy{Kind: Fixed, Multiplier: 1}, "fixed:multiplier=1"},
		{"max 0 means none", "exp:max=0", Policy{Kind: Exp}, "exp"},
		{"attempts 0 means forever", "equal:attempts=0", Policy{Kind: Equal}, "equal"},
		{"spread from zero", "full:spread=0s-1s", Policy{Kind: Full, SpreadMax: s}, "full:spread=0s-1s"},
		{"spread single point", "decorrelated:spread=300ms-300ms,max=10s", Policy{Kind: Decorrelated, Max: 10 * s, SpreadMin: 300 * ms, SpreadMax: 300 * ms}, "decorrelated:max=10s,spread=300ms-300ms"},
		{"fractional multiplier", "exp:multiplier=1.5", Policy{Kind: Exp, Multiplier: 1.5}, "exp:multiplier=1.5"},
		{"sub-ms duration", "exp:initial=1.5ms", Policy{Kind: Exp, Initial: 1500 * time.Microsecond}, "exp:initial=1500us"},
		{"initial at the limit", "fixed:initial=24h", Policy{Kind: Fixed, Initial: 24 * time.Hour}, "fixed:initial=24h"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(tc.spec)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.spec, err)
			}
			if got != tc.want {
				t.Errorf("Parse(%q) = %+v, want %+v", tc.spec, got, tc.want)
			}
			if str := got.String(); str != tc.str {
				t.Errorf("String() = %q, want %q", str, tc.str)
			}
			if back, err := Parse(got.String()); err != nil || back != got {
				t.Errorf("Parse(String()) = %+v, %v; want %+v", back, err, got)
			}
		})
	}
}

// TestParseErrors checks each error names the key (or the fault) and the
// offset of the item it is in.
func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		spec   string
		msg    string // the whole message
		key    string
		offset int
	}{
		{"bad duration unit", "exp:initial=1x",
			`policy "exp:initial=1x": initial: time: unknown unit "x" in duration "1x"`, "initial", 4},
		{"empty spec", "",
			`policy "": no kind; want KIND[:key=value,...] with KIND one of fixed, exp, full, equal, decorrelated, or a library preset: ` + presetList(), "", 0},
		{"unknown kind", "expo:initial=1s",
			`policy "expo:initial=1s": unknown kind "expo" (want one of fixed, exp, full, equal, decorrelated, or a library preset: ` + presetList() + ")", "", 0},
		{"kinds are lower case", "EXP",
			`policy "EXP": unknown kind "EXP" (want one of fixed, exp, full, equal, decorrelated, or a library preset: ` + presetList() + ")", "", 0},
		{"unknown key", "exp:initial=1s,ceiling=5s",
			`policy "exp:initial=1s,ceiling=5s": unknown key "ceiling" at offset 15 (want one of initial, multiplier, max, jitter, spread, attempts)`, "", 15},
		{"duplicate key", "exp:max=1s,initial=1s,max=2s",
			`policy "exp:max=1s,initial=1s,max=2s": max: given twice (at offsets 4 and 22)`, "max", 22},
		{"empty item", "exp:initial=1s,,max=2s",
			`policy "exp:initial=1s,,max=2s": empty item at offset 15`, "", 15},
		{"trailing comma", "exp:initial=1s,",
			`policy "exp:initial=1s,": empty item at offset 15`, "", 15},
		{"no value", "exp:max",
			`policy "exp:max": max: no value; want max=VALUE`, "max", 4},
		{"initial zero", "exp:initial=0",
			`policy "exp:initial=0": initial: must be > 0, got 0 (omit it for the default 1s)`, "initial", 4},
		{"initial above a day", "exp:initial=25h",
			`policy "exp:initial=25h": initial: must be at most 24h0m0s, got 25h0m0s`, "initial", 4},
		{"negative max", "exp:max=-1s",
			`policy "exp:max=-1s": max: must not be negative, got -1s`, "max", 4},
		{"multiplier below 1", "exp:multiplier=0.5",
			`policy "exp:multiplier=0.5": multiplier: must be >= 1 (delays never shrink), got 0.5`, "multiplier", 4},
		{"multiplier not a number", "exp:multiplier=two",
			`policy "exp:multiplier=two": multiplier: want a number, got "two"`, "multiplier", 4},
		{"multiplier infinite", "exp:multiplier=Inf",
			`policy "exp:multiplier=Inf": multiplier: must be a finite number >= 1, got +Inf`, "multiplier", 4},
		{"fixed multiplier", "fixed:multiplier=2",
			`policy "fixed:multiplier=2": multiplier: must be 1 for fixed, got 2 (use exp)`, "multiplier", 6},
		{"decorrelated multiplier", "decorrelated:multiplier=3",
			`policy "decorrelated:multiplier=3": multiplier: does not apply to decorrelated, which grows by up to x3 per attempt by definition`, "multiplier", 13},
		{"jitter above 1", "exp:jitter=1.5",
			`policy "exp:jitter=1.5": jitter: must be within [0, 1], got 1.5`, "jitter", 4},
		{"jitter NaN", "exp:jitter=NaN",
			`policy "exp:jitter=NaN": jitter: must be within [0, 1], got NaN`, "jitter", 4},
		{"jitter on full", "full:initial=1s,jitter=0.5",
			`policy "full:initial=1s,jitter=0.5": jitter: is a band for fixed and exp only; full is a jitter strategy of its own`, "jitter", 16},
		{"spread one end", "exp:spread=100ms",
			`policy "exp:spread=100ms": spread: want MIN-MAX such as 100ms-500ms, got "100ms"`, "spread", 4},
		{"spread inverted", "exp:spread=500ms-100ms",
			`policy "exp:spread=500ms-100ms": spread: 500ms-100ms: the low end is above the high end`, "spread", 4},
		{"spread bad end", "exp:spread=100ms-5",
			`policy "exp:spread=100ms-5": spread: time: missing unit in duration "5"`, "spread", 4},
		{"spread zero", "exp:spread=0s-0s",
			`policy "exp:spread=0s-0s": spread: the high end must be > 0, got "0s-0s"`, "spread", 4},
		{"attempts negative", "exp:attempts=-1",
			`policy "exp:attempts=-1": attempts: must not be negative, got -1`, "attempts", 4},
		{"attempts fraction", "exp:attempts=2.5",
			`policy "exp:attempts=2.5": attempts: want a whole number >= 0 (0 = forever), got "2.5"`, "attempts", 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Parse(tc.spec)
			if err == nil {
				t.Fatalf("Parse(%q) = %+v, want an error", tc.spec, p)
			}
			if err.Error() != tc.msg {
				t.Errorf("error:\n got %s\nwant %s", err, tc.msg)
			}
			var se *SpecError
			if !errors.As(err, &se) {
				t.Fatalf("error %T is not a *SpecError", err)
			}
			if se.Key != tc.key || se.Offset != tc.offset || se.Spec != tc.spec {
				t.Errorf("SpecError{Key %q, Offset %d, Spec %q}, want {%q, %d, %q}", se.Key, se.Offset, se.Spec, tc.key, tc.offset, tc.spec)
			}
			if p != (Policy{}) {
				t.Errorf("Parse returned %+v with its error, want the zero Policy", p)
			}
		})
	}
}

// TestStringRoundTrip: every valid policy, including ones built in code
// rather than parsed, renders to a spec that parses back to it.
func TestStringRoundTrip(t *testing.T) {
	for _, p := range []Policy{
		{},
		{Kind: Fixed, Initial: 1234567891, Jitter: 0.123456789},
		{Kind: Exp, Initial: MinDelay, Multiplier: 1.0000001, Max: 1<<63 - 1},
		{Kind: Full, Initial: 24 * time.Hour, Max: 90 * time.Minute, MaxAttempts: 1 << 40},
		{Kind: Equal, SpreadMin: 1, SpreadMax: 24 * time.Hour},
		{Kind: Decorrelated, Initial: 3 * ms, Max: 7 * s, SpreadMin: 0, SpreadMax: 9 * ms},
	} {
		if err := p.Validate(); err != nil {
			t.Fatalf("%+v: %v", p, err)
		}
		back, err := Parse(p.String())
		if err != nil || back != p {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", p.String(), back, err, p)
		}
	}
}

// FuzzParse: Parse never panics; what it accepts validates, round-trips
// through String, and String is a fixed point; what it rejects is a
// *SpecError that quotes the spec.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"", "exp", "fixed:initial=1s", "exp:initial=1s,multiplier=2,max=60s,jitter=0.2",
		"exp:initial=1s,multiplier=2,max=60s,jitter=0.5,spread=100ms-500ms,attempts=10",
		"full:max=30s", "equal:initial=250ms", "decorrelated:initial=100ms,max=10s",
		"exp:initial=1x", "exp:,", "exp:=", "exp:max=1s,max=1s", "exp:spread=-1s-2s",
		"exp:spread=1s--2s", "exp:multiplier=1e309", "exp:multiplier=0x1p1", "exp:jitter=-0",
		"exp:attempts=99999999999999999999", "exp:initial=9223372036854775807ns",
		"exp:max=2562047h47m16.854775807s", "fixed:multiplier=1.0", "exp::", "exp:initial=1s:max=2s",
		"exp:initial=.5s", "exp:initial=1.000000001s", "exp:initial=1µs", "exp:initial=1us",
		"decorrelated:spread=0s-1ns", "exp:initial=24h0m0.000000001s", "\xff", "exp:initial=1s\x00",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		p, err := Parse(spec)
		if err != nil {
			var se *SpecError
			if !errors.As(err, &se) || se.Spec != spec || se.Offset < 0 || se.Offset > len(spec) {
				t.Fatalf("Parse(%q): error %#v is not a *SpecError for the spec", spec, err)
			}
			if !strings.HasPrefix(err.Error(), "policy ") {
				t.Fatalf("Parse(%q): error %q does not name the policy", spec, err)
			}
			return
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("Parse(%q) = %+v, which does not validate: %v", spec, p, err)
		}
		str := p.String()
		back, err := Parse(str)
		if err != nil {
			t.Fatalf("Parse(%q).String() = %q does not parse: %v", spec, str, err)
		}
		if back != p {
			t.Fatalf("Parse(%q) = %+v, but Parse(%q) = %+v", spec, p, str, back)
		}
		if back.String() != str {
			t.Fatalf("String is not canonical: %q then %q", str, back.String())
		}
		// A parsed policy's first delays are computable without panic.
		for _, d := range p.Delays(1, 0, 3) {
			if d < 0 {
				t.Fatalf("Parse(%q): negative delay %v", spec, d)
			}
		}
	})
}

// presetList is how Parse's errors list the presets.
func presetList() string { return strings.Join(Presets(), ", ") }
