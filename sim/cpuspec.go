package sim

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/stampede-dev/stampede/spec"
)

// costKeys lists a costs spec's keys in CPUCosts' order.
func costKeys() string {
	var keys []string
	for _, f := range new(CPUCosts).durations() {
		keys = append(keys, f.key)
	}
	for _, f := range new(CPUCosts).ratios() {
		keys = append(keys, f.key)
	}
	return strings.Join(keys, ", ")
}

// ParseCPUCosts reads a machine's CPU costs written key=value,...: the
// keys are CPUCosts' JSON names (attempt, upgrade, disconnect, accept,
// close, segment, ping, slice as durations such as 44us or 1.5ms;
// loadgen_share, loadgen_growth and target_growth numbers), each given at
// most once. A key left out is zero in the result, DefaultCPUCosts' in a
// run; so is every key of "".
// A value is positive: an explicit 0 would silently mean the default.
// ParseCPUCosts(c.String()) == c for every c it returns.
//
// An error is a *spec.FieldError on the key's field ("Sim.CPU.Attempt"),
// or on "Sim.CPU" when the fault is not in one key's value (an unknown
// key, an empty item); its reason quotes what was given.
func ParseCPUCosts(s string) (CPUCosts, error) {
	var c CPUCosts
	if strings.TrimSpace(s) == "" {
		return c, nil
	}
	seen := map[string]bool{}
	for _, item := range strings.Split(s, ",") {
		keyText, val, hasEq := strings.Cut(item, "=")
		key, val := strings.TrimSpace(keyText), strings.TrimSpace(val)
		field := costFieldOf(&c, key)
		switch {
		case key == "" && !hasEq:
			return CPUCosts{}, spec.Errorf("Sim.CPU", "empty item in %q; want key=value,...", s)
		case field == "":
			return CPUCosts{}, spec.Errorf("Sim.CPU", "unknown key %q (want one of %s)", key, costKeys())
		case !hasEq:
			return CPUCosts{}, spec.Errorf(field, "no value; want %s=VALUE", key)
		case seen[key]:
			return CPUCosts{}, spec.Errorf(field, "given twice")
		}
		seen[key] = true
		if err := c.set(key, val); err != nil {
			return CPUCosts{}, spec.Errorf(field, "%v", err)
		}
	}
	return c, c.validate()
}

// costFieldOf returns the field path ("Sim.CPU.Attempt") of a costs
// spec's key; "" if it is none.
func costFieldOf(c *CPUCosts, key string) string {
	for _, f := range c.ratios() {
		if f.key == key {
			return "Sim.CPU." + f.name
		}
	}
	for _, f := range c.durations() {
		if f.key == key {
			return "Sim.CPU." + f.name
		}
	}
	return ""
}

// set parses one key's value into c.
func (c *CPUCosts) set(key, val string) error {
	for _, f := range c.ratios() {
		if f.key != key {
			continue
		}
		x, err := strconv.ParseFloat(val, 64)
		if err != nil || x <= 0 || math.IsInf(x, 0) || math.IsNaN(x) {
			return fmt.Errorf("want a positive number such as %s, got %q", ratioText(*DefaultCPUCosts.ratioOf(key)), val)
		}
		*f.v = x
		return nil
	}
	for _, f := range c.durations() {
		if f.key != key {
			continue
		}
		d, err := time.ParseDuration(val)
		switch {
		case err != nil:
			return fmt.Errorf("want a duration with a unit such as 44us, got %q", val)
		case d < 0:
			return fmt.Errorf("must not be negative, got %s", val)
		case d == 0:
			return fmt.Errorf("must be positive, got %s (leave %s out for the default %s)", val, key, CostDuration(*DefaultCPUCosts.durationOf(key)))
		}
		*f.v = d
	}
	return nil
}

// durationOf returns the duration field of a key.
func (c *CPUCosts) durationOf(key string) *time.Duration {
	for _, f := range c.durations() {
		if f.key == key {
			return f.v
		}
	}
	return nil
}

// ratioOf returns the number field of a key.
func (c *CPUCosts) ratioOf(key string) *float64 {
	for _, f := range c.ratios() {
		if f.key == key {
			return f.v
		}
	}
	return nil
}

// ratioText writes a number as a costs spec has it.
func ratioText(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

// String writes c as ParseCPUCosts reads it: its non-zero fields in
// CPUCosts' order, durations as 57.5us or 1.5ms. The zero CPUCosts is "".
func (c CPUCosts) String() string {
	var parts []string
	for _, f := range c.durations() {
		if *f.v != 0 {
			parts = append(parts, f.key+"="+CostDuration(*f.v))
		}
	}
	for _, f := range c.ratios() {
		if *f.v != 0 {
			parts = append(parts, f.key+"="+ratioText(*f.v))
		}
	}
	return strings.Join(parts, ",")
}

// CostDuration writes d exactly, as time.Duration does, with us for µs so
// that it is typed as easily as read.
func CostDuration(d time.Duration) string {
	return strings.Replace(d.String(), "µs", "us", 1)
}

// PerConnect returns c with the CPU each end spends on one first connect
// set: the target's Accept to target, and the loadgen's Attempt and
// Upgrade to loadgen together, Attempt+Upgrade == loadgen, in the ratio
// of c's (DefaultCPUCosts' where zero: 15.129 : 19.771, the profiled
// 44 : 57.5). These are the figures a real run's summary.json gives as
// resources.loadgen.cpu_us_per_connect and
// resources.target.cpu_us_per_connect (its first connects, before any
// event), so a machine's costs can be read off a small run on it.
//
// The loadgen's figure is split, not put on one field, because the model
// charges the two at different times: every try pays Attempt (socket,
// connect, the SYN at the listener, a failure's close), only a try that
// is answered 101 pays Upgrade. The ratio is the profiled split of a
// connect (DefaultCPUCosts); a first connect with nothing to retry pays
// both, which is what the real figure measures.
//
// A zero (or negative) loadgen or target leaves that end's costs as they
// are. A loadgen below 2 ns cannot be split into two positive fields:
// each is at least 1 ns.
func (c CPUCosts) PerConnect(loadgen, target time.Duration) CPUCosts {
	if loadgen > 0 {
		d := c.WithDefaults()
		share := float64(d.Attempt) / float64(d.Attempt+d.Upgrade)
		a := time.Duration(math.Round(float64(loadgen) * share))
		c.Attempt = max(1, min(a, loadgen-1))
		c.Upgrade = max(1, loadgen-c.Attempt)
	}
	if target > 0 {
		c.Accept = target
	}
	return c
}

// LoadgenPerConnect is the loadgen's CPU per first connect c charges
// (Attempt+Upgrade; a zero field DefaultCPUCosts'); TargetPerConnect the
// target's (Accept). They are what PerConnect sets, and what a real run's
// summary.json measures as each end's cpu_us_per_connect.
func (c CPUCosts) LoadgenPerConnect() time.Duration {
	d := c.WithDefaults()
	return d.Attempt + d.Upgrade
}

// TargetPerConnect: see LoadgenPerConnect.
func (c CPUCosts) TargetPerConnect() time.Duration { return c.WithDefaults().Accept }
