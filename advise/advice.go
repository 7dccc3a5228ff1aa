package advise

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/results/summary"
	"github.com/stampede-dev/stampede/sim"
	"github.com/stampede-dev/stampede/spec"
)

// reason is the one line of reasoning behind the recommendation.
func (r *Result) reason() string {
	b, cur := r.Best[0], r.Current
	capy := r.Capacity.Per100ms()
	var why string
	switch {
	case !b.Recovered():
		return "no policy tried brought 99 % of the fleet back within the run: lengthen the run or raise the server's capacity"
	case !b.WithinCapacity:
		why = fmt.Sprintf("no policy tried kept the herd within the server's %.0f attempts per 100 ms; this one comes closest (%.0f, R99 %s)", capy, b.Peak, secs(b.R99))
	case r.Config.Objective == Wasted:
		why = fmt.Sprintf("fewest failed attempts after ready (%.2f per client) with the herd within the server's %.0f per 100 ms", b.Wasted, capy)
	case r.Config.Objective == Peak:
		why = fmt.Sprintf("the flattest herd (%.0f attempts per 100 ms, the server takes %.0f)", b.Peak, capy)
	default:
		why = fmt.Sprintf("the fastest R99 (%s after ready, the physical bound being %s) whose herd stays within the server's %.0f attempts per 100 ms", secs(b.R99), r.Bound.Round(10*time.Millisecond), capy)
	}
	return fmt.Sprintf("%s: %s; the current policy: R99 %s, herd peak %.0f (%.1f× capacity), %.2f wasted attempts per client",
		b.Policy, why, secs(cur.R99), cur.Peak, cur.Peak/capy, cur.Wasted)
}

// secs writes seconds as "4.95s", or "never".
func secs(v float64) string {
	if math.IsNaN(v) {
		return "never"
	}
	return strconv.FormatFloat(v, 'f', 2, 64) + "s"
}

// ptr returns a pointer to v, or nil for NaN: summary.json's null.
func ptr(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	v = math.Round(v*1000) / 1000
	return &v
}

// candidateOf is c as summary.json records it.
func (r *Result) candidateOf(c Candidate) summary.AdviceCandidate {
	out := summary.AdviceCandidate{
		Policy: c.Policy.String(), R50S: ptr(c.R50), R99S: ptr(c.R99), R100S: ptr(c.R100),
		HerdPeakPer100ms: c.Peak, WastedAttemptsPerClient: math.Round(c.Wasted*1000) / 1000, WithinCapacity: c.WithinCapacity,
	}
	if d, ok := LongestWait(c.Policy); ok {
		out.LongestWaitS = ptr(d.Seconds())
	}
	return out
}

// Advice is the result as summary.json's "advise" object.
func (r *Result) Advice() *summary.Advice {
	a := &summary.Advice{
		Objective:   string(r.Config.Objective),
		Simulations: r.Simulations,
		Capacity: summary.AdviceCapacity{
			AcceptRate: math.Round(r.Capacity.AcceptRate*10) / 10, Backlog: r.Capacity.Backlog,
			Per100ms: math.Round(r.Capacity.Per100ms()*10) / 10, Source: r.Capacity.Source,
		},
		PhysicalBoundS: math.Round(r.Bound.Seconds()*1000) / 1000,
		Current:        r.candidateOf(r.Current),
		Reason:         r.Reason,
	}
	if r.Config.MaxDelay > 0 {
		a.MaxDelayS = ptr(r.Config.MaxDelay.Seconds())
	}
	for i := range r.Config.Seeds {
		a.Seeds = append(a.Seeds, r.Config.Sim.Seed+uint64(i))
	}
	for _, c := range r.Best {
		a.Candidates = append(a.Candidates, r.candidateOf(c))
	}
	a.Curves = []summary.AdviceCurve{curveOf("recommended", r.Recommended()), curveOf("current", r.Current)}
	for _, m := range r.Mitigations {
		a.Mitigations = append(a.Mitigations, summary.AdviceMitigation{Mitigation: m.Mitigation.String(), AdviceCandidate: r.candidateOf(m.Candidate)})
	}
	return a
}

// curveOf is a candidate's first run's attempts and successes per
// 100 ms, from its event's start to the end of the run.
func curveOf(role string, c Candidate) summary.AdviceCurve {
	out := summary.AdviceCurve{Role: role, Policy: c.Policy.String()}
	sum := sim.Summarize(c.first, nil)
	if c.event < 0 {
		return out
	}
	e := sum.Events[sum.Recovery[c.event].Event]
	out.StartS = e.StartS
	if e.ReadyS != nil {
		out.ReadyS = *e.ReadyS
	}
	tl := c.first.Report.Timeline
	from := int(math.Round(e.StartS / results.Tick.Seconds()))
	for i := from; i < len(tl); i++ {
		out.Attempts = append(out.Attempts, tl[i].Attempts)
		out.Successes = append(out.Successes, tl[i].Successes)
	}
	return out
}

// Summary is the results folder's summary: the recommended policy's
// first simulated run, marked simulated, with the advice. settings,
// when not nil, is recorded as the config.
func (r *Result) Summary(settings any) *summary.Summary {
	run := *r.Recommended().first
	if settings != nil {
		run.Config.Settings = settings
	}
	sum := sim.Summarize(&run, nil)
	sum.Spec.Kind = spec.KindAdvise
	sum.Advise = r.Advice()
	return sum
}

// Report is the recommended policy's first simulated run's record: the
// folder's timeline.csv and histogram logs.
func (r *Result) Report() *results.Report { return r.Recommended().first.Report }
