package loadgen

import (
	"testing"
	"time"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/connerr"
	"github.com/stampede-dev/stampede/spec"
)

// A 503 with Retry-After waits at least the hint, unless the fleet ignores
// the header; then the policy decides alone.
func TestNextWaitRetryAfter(t *testing.T) {
	pol := backoff.Policy{Kind: backoff.Fixed, Initial: 100 * time.Millisecond, Multiplier: 1}
	rejected := failure{class: connerr.HTTP503, status: 503, hint: 2 * time.Second}
	for _, c := range []struct {
		name     string
		ignore   bool
		f        failure
		min, max time.Duration
	}{
		// Hinted spreads the hint upwards, never below it.
		{"honoured", false, rejected, 2 * time.Second, 2*time.Second + time.Duration(backoff.HintSpread*float64(2*time.Second))},
		// The fixed policy's 100 ms, exactly.
		{"ignored", true, rejected, 100 * time.Millisecond, 100 * time.Millisecond},
		// No hint: the policy either way.
		{"no hint", false, failure{class: connerr.Refused}, 100 * time.Millisecond, 100 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := Config{Client: spec.Client{Policy: pol, Seed: 7, NoRetryAfter: c.ignore}}
			for id := range uint32(50) {
				d, ok := nextWait(&cfg, id, 1, c.f, 0)
				if !ok || d < c.min || d > c.max {
					t.Fatalf("client %d: wait %v, %v; want %v..%v", id, d, ok, c.min, c.max)
				}
			}
		})
	}
}
