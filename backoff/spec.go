package backoff

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// A policy spec is how a policy is written on the command line, in a bench
// matrix and in a run's results:
//
//	KIND[:key=value,...]
//
//	KIND        fixed | exp | full | equal | decorrelated
//	initial     first delay, a Go duration ("1s", "500ms"); default 1s
//	multiplier  growth per attempt, >= 1; default 2, 1 for fixed; not for decorrelated
//	max         ceiling of the delay; default 0 = none
//	jitter      band fraction in [0, 1] for fixed and exp; default 0
//	spread      per-client base range MIN-MAX ("100ms-500ms"), replacing initial
//	attempts    retries per disconnect; default 0 = forever
//
// Each key may appear once, in any order; spaces around items are ignored.

// specKeys lists the keys of a spec in canonical order: the order String
// writes them in.
var specKeys = [...]string{"initial", "multiplier", "max", "jitter", "spread", "attempts"}

// SpecError is the error Parse returns: which part of which spec is wrong.
type SpecError struct {
	// Spec is the whole spec as given.
	Spec string
	// Key is the key whose value is wrong; empty when the fault is in the
	// kind or the shape of the spec.
	Key string
	// Offset is the byte offset in Spec of the faulty item (the key=value
	// pair, or the kind).
	Offset int
	// Err says what is wrong.
	Err error
}

// Error renders `policy "SPEC": KEY: what is wrong`, or without KEY when
// the fault is not in a value.
func (e *SpecError) Error() string {
	if e.Key != "" {
		return fmt.Sprintf("policy %q: %s: %v", e.Spec, e.Key, e.Err)
	}
	return fmt.Sprintf("policy %q: %v", e.Spec, e.Err)
}

// Unwrap returns the underlying error (a time.ParseDuration error, an
// *InvalidError, ...).
func (e *SpecError) Unwrap() error { return e.Err }

// Parse reads a policy spec (see above) into a Policy and validates it. The
// Policy holds exactly the keys given, so Parse(p.String()) == p for every
// policy Parse returns. Errors are *SpecError values that name the faulty
// key or value; unknown kinds and keys list the valid ones.
func Parse(spec string) (Policy, error) {
	var p Policy
	fail := func(key string, off int, err error) (Policy, error) {
		return Policy{}, &SpecError{Spec: spec, Key: key, Offset: off, Err: err}
	}
	kindText, rest, hasParams := strings.Cut(spec, ":")
	if pr := lookup(strings.TrimSpace(kindText)); pr != nil {
		return parseLibrary(spec, pr, rest, hasParams)
	}
	kind, ok := parseKind(strings.TrimSpace(kindText))
	if !ok {
		if strings.TrimSpace(kindText) == "" {
			return fail("", 0, fmt.Errorf("no kind; want KIND[:key=value,...] with KIND one of %s", kindList()))
		}
		return fail("", 0, fmt.Errorf("unknown kind %q (want one of %s)", strings.TrimSpace(kindText), kindList()))
	}
	p.Kind = kind
	offsets := map[string]int{"kind": 0}
	if hasParams && strings.TrimSpace(rest) != "" {
		off := len(kindText) + 1
		for _, item := range strings.Split(rest, ",") {
			itemOff := off
			off += len(item) + 1
			keyText, val, hasEq := strings.Cut(item, "=")
			key := strings.TrimSpace(keyText)
			val = strings.TrimSpace(val)
			switch {
			case key == "" && !hasEq && val == "":
				return fail("", itemOff, fmt.Errorf("empty item at offset %d", itemOff))
			case !isKey(key):
				return fail("", itemOff, fmt.Errorf("unknown key %q at offset %d (want one of %s)", key, itemOff, strings.Join(specKeys[:], ", ")))
			case !hasEq:
				return fail(key, itemOff, fmt.Errorf("no value; want %s=VALUE", key))
			}
			if _, dup := offsets[key]; dup {
				return fail(key, itemOff, fmt.Errorf("given twice (at offsets %d and %d)", offsets[key], itemOff))
			}
			offsets[key] = itemOff
			if err := p.set(key, val); err != nil {
				return fail(key, itemOff, err)
			}
		}
	}
	if err := p.Validate(); err != nil {
		var ie *InvalidError
		if errors.As(err, &ie) {
			return fail(ie.Key, offsets[ie.Key], errors.New(ie.Reason))
		}
		return fail("", 0, err)
	}
	return p, nil
}

// MustParse is Parse for specs known to be valid (tests, built-in
// defaults); it panics on an error.
func MustParse(spec string) Policy {
	p, err := Parse(spec)
	if err != nil {
		panic(err)
	}
	return p
}

// set parses one value into its field. Explicit values that would silently
// mean "the default" (initial=0, multiplier=0) are refused: the writer meant
// something else.
func (p *Policy) set(key, val string) error {
	switch key {
	case "initial":
		d, err := time.ParseDuration(val)
		if err != nil {
			return err
		}
		if d <= 0 {
			return fmt.Errorf("must be > 0, got %s (omit it for the default %s)", val, DefaultInitial)
		}
		p.Initial = d
	case "multiplier":
		if p.Kind == Decorrelated {
			return errors.New("does not apply to decorrelated, which grows by up to x3 per attempt by definition")
		}
		f, err := parseNumber(val)
		if err != nil {
			return err
		}
		if f < 1 {
			return fmt.Errorf("must be >= 1 (delays never shrink), got %s", val)
		}
		p.Multiplier = f
	case "max":
		d, err := time.ParseDuration(val)
		if err != nil {
			return err
		}
		p.Max = d
	case "jitter":
		f, err := parseNumber(val)
		if err != nil {
			return err
		}
		p.Jitter = f
	case "spread":
		lo, hi, ok := strings.Cut(val, "-")
		if !ok || strings.TrimSpace(lo) == "" {
			return fmt.Errorf("want MIN-MAX such as 100ms-500ms, got %q", val)
		}
		min, err := time.ParseDuration(strings.TrimSpace(lo))
		if err != nil {
			return err
		}
		max, err := time.ParseDuration(strings.TrimSpace(hi))
		if err != nil {
			return err
		}
		if max <= 0 {
			return fmt.Errorf("the high end must be > 0, got %q", val)
		}
		p.SpreadMin, p.SpreadMax = min, max
	case "attempts":
		n, err := strconv.Atoi(val)
		if err != nil {
			return fmt.Errorf("want a whole number >= 0 (0 = forever), got %q", val)
		}
		p.MaxAttempts = n
	}
	return nil
}

// parseNumber parses a finite float with a readable error.
func parseNumber(val string) (float64, error) {
	f, err := strconv.ParseFloat(val, 64)
	if err != nil {
		return 0, fmt.Errorf("want a number, got %q", val)
	}
	return f, nil
}

func parseKind(s string) (Kind, bool) {
	for k, name := range kindNames {
		if s == name {
			return Kind(k), true
		}
	}
	return 0, false
}

// kindList names the kinds in the order docs/policy.md documents them.
func kindList() string {
	return "fixed, exp, full, equal, decorrelated, or a library preset: " + strings.Join(Presets(), ", ")
}

func isKey(s string) bool {
	for _, k := range specKeys {
		if s == k {
			return true
		}
	}
	return false
}

// String renders the policy as its canonical spec: the kind, then every
// non-zero field in the order initial, multiplier, max, jitter, spread,
// attempts, durations in one unit as a person writes them (specDuration:
// max=60s, not 1m0s) and numbers in their shortest exact form.
// Parse(p.String()) == p for every valid p.
func (p Policy) String() string {
	if p.Library.Name != "" {
		return p.Library.String()
	}
	var b strings.Builder
	b.WriteString(p.Kind.String())
	sep := byte(':')
	add := func(key, val string) {
		b.WriteByte(sep)
		sep = ','
		b.WriteString(key)
		b.WriteByte('=')
		b.WriteString(val)
	}
	if p.Initial != 0 {
		add("initial", specDuration(p.Initial))
	}
	if p.Multiplier != 0 {
		add("multiplier", strconv.FormatFloat(p.Multiplier, 'g', -1, 64))
	}
	if p.Max != 0 {
		add("max", specDuration(p.Max))
	}
	if p.Jitter != 0 {
		add("jitter", strconv.FormatFloat(p.Jitter, 'g', -1, 64))
	}
	if p.SpreadMin != 0 || p.SpreadMax != 0 {
		add("spread", specDuration(p.SpreadMin)+"-"+specDuration(p.SpreadMax))
	}
	if p.MaxAttempts != 0 {
		add("attempts", strconv.Itoa(p.MaxAttempts))
	}
	return b.String()
}

// specDuration writes d in the largest unit that divides it, as a person
// writes a policy: 2h, 60s, 1500ms, 250us. time.ParseDuration reads it
// back exactly.
func specDuration(d time.Duration) string {
	if d == 0 {
		return "0s"
	}
	for _, u := range []struct {
		unit time.Duration
		name string
	}{{time.Hour, "h"}, {time.Second, "s"}, {time.Millisecond, "ms"}, {time.Microsecond, "us"}} {
		if d%u.unit == 0 {
			return strconv.FormatInt(int64(d/u.unit), 10) + u.name
		}
	}
	return strconv.FormatInt(int64(d), 10) + "ns"
}
