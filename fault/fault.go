// Package fault holds the fault specs a chaos schedule applies: what each
// fault means, its bounds and its canonical words. It is a leaf: the
// schedule language (package chaos), the fault proxy (package proxy), the
// target and the simulator all read it, and it imports none of them.
//
// One file per fault, as toxiproxy keeps its toxics: latency.go,
// bandwidth.go, loss.go, reset.go, blackhole.go for the proxy's faults,
// acceptrate.go for the bound of the target's accept-rate event. How a
// fault is carried out lives with the role that carries it out (the proxy's
// latency.go, the target's ratelimit.go); docs/chaos.md has the words.
package fault

import (
	"errors"
	"strings"
	"time"
)

// Set is a set of faults a proxy applies at once: a chaos schedule's
// "proxy" event (docs/chaos.md). Zero fields are faults not applied; the
// zero Set switches every fault off.
type Set struct {
	// Latency delays data in each direction.
	Latency time.Duration
	// Jitter varies the delay uniformly within Latency ± Jitter
	// (never more than Latency).
	Jitter time.Duration
	// Bandwidth limits each direction of each connection, in bytes per
	// second; 0 is unlimited.
	Bandwidth int64
	// Reset resets every connection (TCP RST), new and established.
	Reset bool
	// Blackhole swallows all data and never closes.
	Blackhole bool
	// Loss is the probability, 0..1, that a connection is dropped.
	Loss float64
}

// FieldError is a Set field, named as in Go, that cannot be applied.
type FieldError struct {
	// Field is the field's name, e.g. "Jitter".
	Field string
	// Msg says what is wrong with it.
	Msg string
}

// Error returns "Field: msg".
func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

// Validate reports the first field of f that cannot be applied, as a
// *FieldError, joined with any further ones. The schedule language checks
// the same with positions (chaos.Parse); Validate is for sets built in code.
func (f Set) Validate() error {
	return errors.Join(
		checkLatency(f.Latency, f.Jitter),
		checkBandwidth(f.Bandwidth),
		checkLoss(f.Loss),
		checkExclusive(f),
	)
}

// String returns the faults as " key=value" words in canonical order
// (latency, jitter, bandwidth, loss, reset, blackhole), each with a leading
// space; "" when there are none.
func (f Set) String() string {
	var b strings.Builder
	if f.Latency > 0 {
		b.WriteString(" latency=" + f.Latency.String())
	}
	if f.Jitter > 0 {
		b.WriteString(" jitter=" + f.Jitter.String())
	}
	if f.Bandwidth > 0 {
		b.WriteString(" bandwidth=" + FormatBandwidth(f.Bandwidth))
	}
	if f.Loss > 0 {
		b.WriteString(" loss=" + FormatPercent(f.Loss))
	}
	if f.Reset {
		b.WriteString(" reset")
	}
	if f.Blackhole {
		b.WriteString(" blackhole")
	}
	return b.String()
}

// Words returns f's words without the leading space, e.g.
// "latency=200ms jitter=10ms"; "" for none.
func (f Set) Words() string { return strings.TrimPrefix(f.String(), " ") }
