package sim

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/spec"
)

// TestParseCPUCosts: a spec sets exactly the keys it gives, to exactly
// their values; a bad one is a field error on the key's field whose
// reason says what is wrong.
func TestParseCPUCosts(t *testing.T) {
	us := time.Microsecond
	for _, c := range []struct {
		in   string
		want CPUCosts
		str  string // String of want; "" means in
	}{
		{"", CPUCosts{}, ""},
		{"  ", CPUCosts{}, ""},
		{"attempt=44us", CPUCosts{Attempt: 44 * us}, ""},
		{"attempt=28.177us,upgrade=36.823us,accept=60us", CPUCosts{Attempt: 28177, Upgrade: 36823, Accept: 60 * us}, ""},
		{" accept = 60µs , attempt=30us", CPUCosts{Attempt: 30 * us, Accept: 60 * us}, "attempt=30us,accept=60us"},
		{"disconnect=17.6us,close=14.1us,segment=3us,ping=2.7us", CPUCosts{Disconnect: 17600, Close: 14100, Segment: 3000, Ping: 2700}, ""},
		{"slice=1.5ms,loadgen_share=2.4", CPUCosts{Slice: 1500 * us, LoadgenShare: 2.4}, ""},
		{"slice=1500us", CPUCosts{Slice: 1500 * us}, "slice=1.5ms"},
		{"loadgen_share=1", CPUCosts{LoadgenShare: 1}, ""},
		{"loadgen_growth=1.5,target_growth=0.25", CPUCosts{LoadgenGrowth: 1.5, TargetGrowth: 0.25}, ""},
		{"target_growth=1e-3", CPUCosts{TargetGrowth: 0.001}, "target_growth=0.001"},
		{"loadgen_share=0.5", CPUCosts{LoadgenShare: 0.5}, ""},
		{"segment=1ns", CPUCosts{Segment: 1}, ""},
		{"ping=90s", CPUCosts{Ping: 90 * time.Second}, "ping=1m30s"},
	} {
		got, err := ParseCPUCosts(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseCPUCosts(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
			continue
		}
		str := c.str
		if str == "" {
			str = c.in
		}
		if strings.TrimSpace(c.in) == "" {
			str = ""
		}
		if got.String() != str {
			t.Errorf("ParseCPUCosts(%q).String() = %q, want %q", c.in, got.String(), str)
		}
	}

	for _, c := range []struct {
		in, field, reason string
	}{
		{"attempt=4x", "Sim.CPU.Attempt", `want a duration with a unit such as 44us, got "4x"`},
		{"attempt=44", "Sim.CPU.Attempt", `want a duration with a unit such as 44us, got "44"`},
		{"upgrade=-1us", "Sim.CPU.Upgrade", "must not be negative, got -1us"},
		{"accept=0", "Sim.CPU.Accept", "must be positive, got 0 (leave accept out for the default 23.6us)"},
		{"slice=0s", "Sim.CPU.Slice", "must be positive, got 0s (leave slice out for the default 1.5ms)"},
		{"loadgen_share=0", "Sim.CPU.LoadgenShare", `want a positive number such as 2.4, got "0"`},
		{"loadgen_share=-2", "Sim.CPU.LoadgenShare", `want a positive number such as 2.4, got "-2"`},
		{"loadgen_share=NaN", "Sim.CPU.LoadgenShare", `want a positive number such as 2.4, got "NaN"`},
		{"loadgen_share=1e999", "Sim.CPU.LoadgenShare", `want a positive number such as 2.4, got "1e999"`},
		{"target_growth=0", "Sim.CPU.TargetGrowth", `want a positive number such as ` + ratioText(DefaultCPUCosts.TargetGrowth) + `, got "0"`},
		{"loadgen_growth=-1", "Sim.CPU.LoadgenGrowth", `want a positive number such as ` + ratioText(DefaultCPUCosts.LoadgenGrowth) + `, got "-1"`},
		{"attempt", "Sim.CPU.Attempt", "no value; want attempt=VALUE"},
		{"attempt=1us,attempt=2us", "Sim.CPU.Attempt", "given twice"},
		{"Attempt=44us", "Sim.CPU", `unknown key "Attempt" (want one of attempt, upgrade, disconnect, accept, close, segment, ping, slice, loadgen_share, loadgen_growth, target_growth)`},
		{"cores=2", "Sim.CPU", `unknown key "cores" (want one of attempt, upgrade, disconnect, accept, close, segment, ping, slice, loadgen_share, loadgen_growth, target_growth)`},
		{"attempt=44us,,", "Sim.CPU", `empty item in "attempt=44us,,"; want key=value,...`},
		{"=44us", "Sim.CPU", `unknown key "" (want one of attempt, upgrade, disconnect, accept, close, segment, ping, slice, loadgen_share, loadgen_growth, target_growth)`},
	} {
		got, err := ParseCPUCosts(c.in)
		var fe *spec.FieldError
		if !errors.As(err, &fe) || fe.Field != c.field || fe.Reason != c.reason {
			t.Errorf("ParseCPUCosts(%q) = %+v, %v; want a field error on %s: %s", c.in, got, err, c.field, c.reason)
		}
		if got != (CPUCosts{}) {
			t.Errorf("ParseCPUCosts(%q) = %+v with its error, want zero", c.in, got)
		}
	}
}

// TestCPUCostsString: every field written, in CPUCosts' order, reads
// back as itself; DefaultCPUCosts reads as the figures sourced in it.
func TestCPUCostsString(t *testing.T) {
	want := "attempt=15.129us,upgrade=19.771us,disconnect=17.6us,accept=23.6us,close=14.1us,segment=3us,ping=47us,slice=1.5ms,loadgen_share=2.4,loadgen_growth=0.346,target_growth=0.462"
	if got := DefaultCPUCosts.String(); got != want {
		t.Errorf("DefaultCPUCosts.String() = %q, want %q", got, want)
	}
	for _, c := range []CPUCosts{DefaultCPUCosts, {Attempt: 1, LoadgenShare: 1e-300}, {Slice: 1<<63 - 1, LoadgenShare: 1.0000000000000002}} {
		back, err := ParseCPUCosts(c.String())
		if err != nil || back != c {
			t.Errorf("ParseCPUCosts(%q) = %+v, %v; want %+v", c.String(), back, err, c)
		}
	}
}

// TestPerConnect: the loadgen's figure is split into Attempt and Upgrade
// in the default ratio 44 : 57.5, their sum exactly the figure; the
// target's is Accept; the other fields, and an end given zero, are kept.
func TestPerConnect(t *testing.T) {
	us := time.Microsecond
	for _, c := range []struct {
		base             CPUCosts
		loadgen, target  time.Duration
		attempt, upgrade time.Duration
		accept           time.Duration
	}{
		// A million's ramp before the cuts, split as the defaults are:
		// 101,500·15.129/34.9 = 43,999.6.
		{CPUCosts{}, 101500, 80900, 44000, 57500, 80900},
		// 40 µs a side. 40,000·15.129/34.9 = 17,340.4.
		{CPUCosts{}, 40 * us, 40 * us, 17340, 22660, 40 * us},
		// 78.9 and 83.4 µs. 78,900·15.129/34.9 = 34,202.7.
		{CPUCosts{}, 78900, 83400, 34203, 44697, 83400},
		// 65 µs: 28,177.0.
		{CPUCosts{}, 65 * us, 60 * us, 28177, 36823, 60 * us},
		// Only the target's.
		{CPUCosts{}, 0, 60 * us, 0, 0, 60 * us},
		// Only the loadgen's, the other costs kept.
		{CPUCosts{Ping: 5 * us, Accept: 70 * us}, 203 * us, 0, 88000, 115000, 70 * us},
		// A base of its own ratio, 1 : 1.
		{CPUCosts{Attempt: 10 * us, Upgrade: 10 * us}, 30 * us, 0, 15 * us, 15 * us, 0},
		// Too small to split evenly: each field at least 1 ns.
		{CPUCosts{}, 2, 0, 1, 1, 0},
		{CPUCosts{}, 1, 0, 1, 1, 0},
	} {
		got := c.base.PerConnect(c.loadgen, c.target)
		want := c.base
		want.Attempt, want.Upgrade, want.Accept = c.attempt, c.upgrade, c.accept
		if got != want {
			t.Errorf("%+v.PerConnect(%s, %s) = %+v, want %+v", c.base, c.loadgen, c.target, got, want)
		}
		if c.loadgen >= 2 && got.LoadgenPerConnect() != c.loadgen {
			t.Errorf("PerConnect(%s, %s): the loadgen's %s a connect", c.loadgen, c.target, got.LoadgenPerConnect())
		}
		if c.target > 0 && got.TargetPerConnect() != c.target {
			t.Errorf("PerConnect(%s, %s): the target's %s a connect", c.loadgen, c.target, got.TargetPerConnect())
		}
	}
	if got := (CPUCosts{}).LoadgenPerConnect(); got != 34900 {
		t.Errorf("the default loadgen's CPU a connect %s, want 34.9µs", got)
	}
	if got := (CPUCosts{}).TargetPerConnect(); got != 23600 {
		t.Errorf("the default target's CPU a connect %s, want 23.6µs", got)
	}
}

// FuzzParseCPUCosts: ParseCPUCosts never panics; what it accepts
// validates, has no negative field, round-trips through String, and
// String is a fixed point; what it rejects is a field error under
// Sim.CPU.
func FuzzParseCPUCosts(f *testing.F) {
	for _, seed := range []string{
		"", "attempt=44us", "attempt=44us,upgrade=57.5us,accept=80.9us",
		DefaultCPUCosts.String(), "slice=1.5ms,loadgen_share=2.4", "loadgen_share=1e-320",
		"attempt=4x", "attempt=-1us", "accept=0", "loadgen_share=NaN", "loadgen_share=+Inf",
		"loadgen_share=0x1p-2", "attempt", "attempt=1us,attempt=1us", "cores=2", ",", "=", "==",
		"ping=9223372036854775807ns", "ping=2562047h47m16.854775808s", "segment=.5us", "close=1µs",
		" accept = 60us ", "attempt=1us,", "\xff", "attempt=1us\x00",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseCPUCosts(s)
		if err != nil {
			var fe *spec.FieldError
			if !errors.As(err, &fe) || (fe.Field != "Sim.CPU" && !strings.HasPrefix(fe.Field, "Sim.CPU.")) {
				t.Fatalf("ParseCPUCosts(%q): error %#v is not a field error under Sim.CPU", s, err)
			}
			if c != (CPUCosts{}) {
				t.Fatalf("ParseCPUCosts(%q) = %+v with its error", s, c)
			}
			return
		}
		if err := c.validate(); err != nil {
			t.Fatalf("ParseCPUCosts(%q) = %+v, which does not validate: %v", s, c, err)
		}
		for _, f := range c.durations() {
			if *f.v < 0 {
				t.Fatalf("ParseCPUCosts(%q): %s %s", s, f.key, *f.v)
			}
		}
		str := c.String()
		back, err := ParseCPUCosts(str)
		if err != nil {
			t.Fatalf("ParseCPUCosts(%q).String() = %q does not parse: %v", s, str, err)
		}
		if back != c {
			t.Fatalf("ParseCPUCosts(%q) = %+v, but ParseCPUCosts(%q) = %+v", s, c, str, back)
		}
		if back.String() != str {
			t.Fatalf("String is not canonical: %q then %q", str, back.String())
		}
	})
}

// TestAtFleet: each end's per-connect costs grow with the fleet by its
// own growth, a fraction a million clients; the other costs do not.
func TestAtFleet(t *testing.T) {
	us := time.Microsecond
	c := CPUCosts{Attempt: 20 * us, Upgrade: 30 * us, Accept: 40 * us, Disconnect: 10 * us, Close: 10 * us, LoadgenGrowth: 1, TargetGrowth: 0.5}
	for _, x := range []struct {
		clients                  int
		attempt, upgrade, accept time.Duration
	}{
		{0, 20 * us, 30 * us, 40 * us},
		{250_000, 25 * us, 37500, 45 * us},
		{1_000_000, 40 * us, 60 * us, 60 * us},
		{-5, 20 * us, 30 * us, 40 * us},
	} {
		got := c.AtFleet(x.clients)
		if got.Attempt != x.attempt || got.Upgrade != x.upgrade || got.Accept != x.accept || got.Disconnect != 10*us || got.Close != 10*us {
			t.Errorf("AtFleet(%d) = %+v, want attempt %s, upgrade %s, accept %s, disconnect and close 10µs", x.clients, got, x.attempt, x.upgrade, x.accept)
		}
	}
	d := CPUCosts{}.AtFleet(1_000_000)
	if want := time.Duration(math.Round(float64(DefaultCPUCosts.Accept) * (1 + DefaultCPUCosts.TargetGrowth))); d.Accept != want || d.Slice != DefaultCPUCosts.Slice {
		t.Errorf("the defaults at a million: accept %s, slice %s; want %s and the default slice", d.Accept, d.Slice, want)
	}
}
