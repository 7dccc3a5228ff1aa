package main

import (
	"fmt"
	"math"
	"time"

	"github.com/stampede-dev/stampede/sim"
)

// modelLaw, as fromRuns's law, simulates each run at the model's own cost
// law (-law); any other non-empty law is a --cpu-costs SPEC (-law-costs).
const modelLaw = "(the model's own)"

// fitPoint is one real run's fleet and what its first connect cost.
type fitPoint struct {
	clients int
	fc      firstConnect
}

// fitLaw fits each end's first-connect cost to a + b·N by least squares
// over the runs (N in millions of clients) and returns the law as a line
// for a person and as the simulator's --cpu-costs (docs/performance.md
// "The cost law"); "" with fewer than two fleet sizes.
func fitLaw(pts []fitPoint) string {
	sizes := map[int]bool{}
	for _, p := range pts {
		sizes[p.clients] = true
	}
	if len(sizes) < 2 {
		return ""
	}
	fit := func(y func(firstConnect) float64) (a, b, worst float64) {
		var n, sx, sy, sxx, sxy float64
		for _, p := range pts {
			x := float64(p.clients) / 1e6
			n, sx, sy, sxx, sxy = n+1, sx+x, sy+y(p.fc), sxx+x*x, sxy+x*y(p.fc)
		}
		b = (n*sxy - sx*sy) / (n*sxx - sx*sx)
		a = (sy - b*sx) / n
		for _, p := range pts {
			m := a + b*float64(p.clients)/1e6
			worst = max(worst, math.Abs(m-y(p.fc))/y(p.fc))
		}
		return a, b, worst
	}
	la, lb, lw := fit(func(fc firstConnect) float64 { return fc.Loadgen })
	ta, tb, tw := fit(func(fc firstConnect) float64 { return fc.Target })
	if la <= 0 || ta <= 0 {
		return fmt.Sprintf("law: no positive cost at a small fleet (loadgen %.1f µs, target %.1f µs): not a law the model takes", la, ta)
	}
	us := func(v float64) time.Duration { return time.Duration(v*10) * 100 * time.Nanosecond }
	round3 := func(x float64) float64 { return math.Round(x*1000) / 1000 }
	k := sim.CPUCosts{LoadgenGrowth: round3(lb / la), TargetGrowth: round3(tb / ta)}.PerConnect(us(la), us(ta))
	costs := sim.CPUCosts{Attempt: k.Attempt, Upgrade: k.Upgrade, Accept: k.Accept, LoadgenGrowth: k.LoadgenGrowth, TargetGrowth: k.TargetGrowth}
	return fmt.Sprintf("law over %d runs at %d sizes: loadgen %.1f µs + %.1f µs a million clients (worst miss %.0f %%), target %.1f µs + %.1f µs (worst miss %.0f %%)\n--cpu-costs %s",
		len(pts), len(sizes), la, lb, 100*lw, ta, tb, 100*tw, costs)
}
