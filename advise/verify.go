package advise

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"time"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/internal/clock"
	"github.com/stampede-dev/stampede/results/summary"
)

// Runner runs one real storm of the searched fleet, server and chaos
// with policy p into the results folder dir, and returns its summary (nil
// when nothing ran). The command gives one that runs the bundled target
// (storm.Run) or aims the fleet at the user's server.
type Runner func(ctx context.Context, p backoff.Policy, dir string) (*summary.Summary, error)

// VerifyPause is the quiet time between the two real storms, so that one
// storm's TIME_WAIT sockets and kernel queues do not colour the other.
const VerifyPause = 2 * time.Second

// Verify runs the recommended and the current policy for real, one after
// the other, into out/verify-recommended and out/verify-current, and
// returns each run's figures predicted against measured, recommended
// first. A run that fails is returned with what it measured and its error.
func Verify(ctx context.Context, r *Result, out string, run Runner) ([]summary.AdviceVerify, error) {
	roles := []struct {
		role string
		c    Candidate
	}{{"recommended", r.Recommended()}, {"current", r.Current}}
	var vs []summary.AdviceVerify
	var errs []error
	for i, x := range roles {
		if i > 0 {
			if err := clock.Sleep(ctx, VerifyPause); err != nil {
				break
			}
		}
		name := "verify-" + x.role
		sum, err := run(ctx, x.c.Policy, filepath.Join(out, name))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s policy %s: %w", x.role, x.c.Policy, err))
		}
		if sum != nil {
			vs = append(vs, summary.AdviceVerify{Role: x.role, Policy: x.c.Policy.String(), Dir: name, Figures: figures(x.c, sum)})
		}
		if ctx.Err() != nil {
			break
		}
	}
	return vs, errors.Join(errs...)
}

// figures sets a candidate's predicted figures against a real run's.
func figures(c Candidate, sum *summary.Summary) []summary.AdviceFigure {
	var rec summary.Recovery
	if ev := recoveryOf(sum); ev >= 0 {
		rec = sum.Recovery[ev]
	}
	var peak *float64
	if rec.HerdPeakPer100ms != nil {
		v := float64(*rec.HerdPeakPer100ms)
		peak = &v
	}
	pairs := []struct {
		name string
		p    float64
		m    *float64
	}{
		{"r50_s", c.R50, rec.R50S}, {"r99_s", c.R99, rec.R99S}, {"r100_s", c.R100, rec.R100S},
		{"herd_peak_per_100ms", c.Peak, peak}, {"wasted_attempts_per_client", c.Wasted, rec.WastedAttemptsPerClient},
	}
	out := make([]summary.AdviceFigure, len(pairs))
	for i, x := range pairs {
		f := summary.AdviceFigure{Name: x.name, Predicted: ptr(x.p), Measured: x.m}
		if f.Predicted != nil && x.m != nil && *x.m != 0 && !negligible(x.name, *f.Predicted, *x.m) {
			f.RelError = ptr((*f.Predicted - *x.m) / *x.m)
		}
		out[i] = f
	}
	return out
}

// negligibleWasted is the wasted attempts per client below which a
// relative error means nothing: one failed attempt in a hundred clients.
const negligibleWasted = 0.01

// negligible reports whether a predicted and a measured figure are both
// too small for their relative error to say anything: 0.0004 against
// 0.0001 wasted attempts a client is "+300 %" of noise.
func negligible(name string, predicted, measured float64) bool {
	return name == "wasted_attempts_per_client" && max(predicted, measured) < negligibleWasted
}

// Figure returns the named figure of v; ok is false when v has none.
func Figure(v summary.AdviceVerify, name string) (f summary.AdviceFigure, ok bool) {
	for _, f := range v.Figures {
		if f.Name == name {
			return f, true
		}
	}
	return f, false
}

// Verdict is the verification's outcome for a person: whether the
// recommended policy's real R99 came within tolerance of its prediction,
// whether its real herd stayed within the server's capacity, and how its
// real R99 compares with the current policy's. held is true when the
// first two did.
func Verdict(vs []summary.AdviceVerify, capacity float64, tolerance float64) (lines []string, held bool) {
	if len(vs) == 0 || vs[0].Role != "recommended" {
		return []string{"verify: the recommended policy did not run"}, false
	}
	held = true
	r99, _ := Figure(vs[0], "r99_s")
	switch {
	case r99.RelError == nil:
		held = false
		lines = append(lines, "verify: the recommended policy's R99 has no prediction or no measure to compare")
	default:
		ok := math.Abs(*r99.RelError) <= tolerance
		held = held && ok
		lines = append(lines, fmt.Sprintf("verify: recommended R99 predicted %.2fs, measured %.2fs (%+.0f %%): %s",
			*r99.Predicted, *r99.Measured, *r99.RelError*100, verdictWord(ok, fmt.Sprintf("within %.0f %%", tolerance*100))))
	}
	if peak, ok := Figure(vs[0], "herd_peak_per_100ms"); ok && peak.Measured != nil {
		held = held && *peak.Measured <= capacity
		lines = append(lines, fmt.Sprintf("verify: recommended real herd peak %.0f per 100 ms against the server's %.0f: %s",
			*peak.Measured, capacity, verdictWord(*peak.Measured <= capacity, "within capacity")))
	}
	if len(vs) > 1 {
		cur, _ := Figure(vs[1], "r99_s")
		if r99.Measured != nil && cur.Measured != nil && *cur.Measured > 0 {
			d := (*r99.Measured - *cur.Measured) / *cur.Measured
			lines = append(lines, fmt.Sprintf("verify: recommended real R99 %.2fs against the current policy's %.2fs (%+.0f %%)", *r99.Measured, *cur.Measured, d*100))
		}
	}
	return lines, held
}

func verdictWord(ok bool, what string) string {
	if ok {
		return what
	}
	return "NOT " + what
}
