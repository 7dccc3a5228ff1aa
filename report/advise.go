package report

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"math"
	"path/filepath"
	"strings"

	"github.com/stampede-dev/stampede/results/folder"
	"github.com/stampede-dev/stampede/results/summary"
)

//go:embed advise.html.tmpl
var adviseTmpl string

var advisePage = template.Must(template.New("advise").Funcs(template.FuncMap{"fig": fig, "pct": pct}).Parse(adviseTmpl))

// fig writes a figure that may be null ("never").
func fig(v *float64) string {
	if v == nil {
		return "never"
	}
	return fmt.Sprintf("%.2f", *v)
}

// pct writes a relative error as a signed percentage; "-" for null.
func pct(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%+.0f %%", *v*100)
}

// The plots' size in SVG units, and their margins for the axes.
const (
	plotW, plotH   = 720.0, 300.0
	plotL, plotB   = 56.0, 36.0
	plotT, plotR   = 12.0, 12.0
	innerW, innerH = plotW - plotL - plotR, plotH - plotT - plotB
)

// adviseView is what advise.html.tmpl renders.
type adviseView struct {
	Title, Subtitle string
	Advice          *summary.Advice
	Rows            []adviseRow
	Scatter         svgPlot
	Curves          svgPlot
	Verify          []summary.AdviceVerify
}

type adviseRow struct {
	Label, Policy, R50, R99, R100, Peak, OfCap, Wasted, Longest string
	Recommended                                                 bool
}

// svgPlot is one plot drawn in SVG: lines, points, rules and labels.
type svgPlot struct {
	Lines  []svgLine
	Points []svgPoint
	Rules  []svgRule
	XTicks []svgTick
	YTicks []svgTick
	XLabel string
	YLabel string
}

type svgLine struct {
	Points, Color, Name string
	LegendY             float64
}
type svgPoint struct {
	X, Y   float64
	Color  string
	Label  string
	Radius float64
}
type svgRule struct {
	X1, Y1, X2, Y2 float64
	Label          string
}
type svgTick struct {
	At   float64
	Text string
}

// renderAdvise writes report.html of an advise folder: the candidates
// (R99 against herd peak, the capacity and the physical bound marked),
// the predicted arrival curves of the recommended and current policies,
// and the table; the verification when there is one.
func renderAdvise(dir string, sum *summary.Summary) error {
	a := sum.Advise
	v := adviseView{
		Title:    "stampede advise: " + filepath.Base(dir),
		Subtitle: fmt.Sprintf("%d clients, objective %s, %d simulations", sum.Clients, a.Objective, a.Simulations),
		Advice:   a,
		Scatter:  candidatePlot(a),
		Curves:   curvePlot(a),
		Verify:   a.Verify,
	}
	v.Rows = append(v.Rows, rowOf("current", a.Current, a, false))
	for i, c := range a.Candidates {
		v.Rows = append(v.Rows, rowOf(fmt.Sprint(i+1), c, a, i == a.Recommended))
	}
	var b bytes.Buffer
	if err := advisePage.Execute(&b, v); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	path := filepath.Join(dir, File)
	return folder.WriteBytes(path, b.Bytes())
}

func rowOf(label string, c summary.AdviceCandidate, a *summary.Advice, rec bool) adviseRow {
	s := func(p *float64) string {
		if p == nil {
			return "-"
		}
		return fmt.Sprintf("%.2fs", *p)
	}
	return adviseRow{Label: label, Policy: c.Policy, R50: s(c.R50S), R99: s(c.R99S), R100: s(c.R100S),
		Peak: fmt.Sprintf("%.0f", c.HerdPeakPer100ms), OfCap: fmt.Sprintf("%.2f", c.HerdPeakPer100ms/a.Capacity.Per100ms),
		Wasted: fmt.Sprintf("%.2f", c.WastedAttemptsPerClient), Longest: s(c.LongestWaitS), Recommended: rec}
}

// scale maps [lo, hi] onto [a, b].
func scale(v, lo, hi, a, b float64) float64 {
	if hi <= lo {
		return a
	}
	return a + (v-lo)/(hi-lo)*(b-a)
}

// ticks returns about five round ticks over [0, hi].
func ticks(hi float64, unit string) (out []svgTick, top float64) {
	if hi <= 0 {
		hi = 1
	}
	step := math.Pow(10, math.Floor(math.Log10(hi/5)))
	for _, m := range []float64{1, 2, 5, 10} {
		if hi/(step*m) <= 6 {
			step *= m
			break
		}
	}
	top = math.Ceil(hi/step) * step
	for v := 0.0; v <= top+step/2; v += step {
		out = append(out, svgTick{At: v, Text: strings.TrimSuffix(fmt.Sprintf("%g", math.Round(v*100)/100), ".0") + unit})
	}
	return out, top
}

// axes puts round ticks on p's axes over [0, xhi] and [0, yhi] and the
// server's capacity per 100 ms as a rule, and returns the two scales
// from data to the plot's coordinates.
func (p *svgPlot) axes(xhi, yhi, capacity float64) (x, y func(float64) float64) {
	var xtop, ytop float64
	p.XTicks, xtop = ticks(xhi, "")
	p.YTicks, ytop = ticks(yhi, "")
	x = func(v float64) float64 { return scale(v, 0, xtop, plotL, plotL+innerW) }
	y = func(v float64) float64 { return scale(v, 0, ytop, plotT+innerH, plotT) }
	for i := range p.XTicks {
		p.XTicks[i].At = x(p.XTicks[i].At)
	}
	for i := range p.YTicks {
		p.YTicks[i].At = y(p.YTicks[i].At)
	}
	capY := y(capacity)
	p.Rules = append(p.Rules, svgRule{X1: plotL, Y1: capY, X2: plotL + innerW, Y2: capY, Label: "server capacity per 100 ms"})
	return x, y
}

// candidatePlot draws each candidate at (R99, herd peak), the current
// policy in grey, the recommended one in red, with the server's capacity
// per 100 ms and the physical bound as rules.
func candidatePlot(a *summary.Advice) svgPlot {
	all := append([]summary.AdviceCandidate{a.Current}, a.Candidates...)
	xmax, ymax := a.PhysicalBoundS, a.Capacity.Per100ms
	for _, c := range all {
		if c.R99S != nil {
			xmax = max(xmax, *c.R99S)
		}
		ymax = max(ymax, c.HerdPeakPer100ms)
	}
	p := svgPlot{XLabel: "R99 after ready (s)", YLabel: "herd peak per 100 ms"}
	x, y := p.axes(xmax*1.05, ymax*1.05, a.Capacity.Per100ms)
	bx := x(a.PhysicalBoundS)
	p.Rules = append(p.Rules, svgRule{X1: bx, Y1: plotT, X2: bx, Y2: plotT + innerH, Label: "physical bound"})
	for i, c := range all {
		if c.R99S == nil {
			continue
		}
		pt := svgPoint{X: x(*c.R99S), Y: y(c.HerdPeakPer100ms), Color: "#4c78a8", Radius: 4, Label: fmt.Sprint(i)}
		switch {
		case i == 0:
			pt.Color, pt.Label = "#888888", "current"
		case i-1 == a.Recommended:
			pt.Color, pt.Radius, pt.Label = "#d62728", 6, "recommended"
		}
		p.Points = append(p.Points, pt)
	}
	return p
}

// curvePlot draws the predicted attempts per 100 ms of the recommended
// and current policies from the event's start, with the capacity.
func curvePlot(a *summary.Advice) svgPlot {
	p := svgPlot{XLabel: "seconds from the event", YLabel: "attempts per 100 ms"}
	n, ymax := 0, a.Capacity.Per100ms
	for _, c := range a.Curves {
		n = max(n, len(c.Attempts))
		for _, v := range c.Attempts {
			ymax = max(ymax, float64(v))
		}
	}
	x, y := p.axes(float64(n)/10, ymax*1.05, a.Capacity.Per100ms)
	colors := map[string]string{"recommended": "#d62728", "current": "#888888"}
	if len(a.Curves) > 0 { // one event: the same ready for both policies
		rx := x(a.Curves[0].ReadyS - a.Curves[0].StartS)
		p.Rules = append(p.Rules, svgRule{X1: rx, Y1: plotT, X2: rx, Y2: plotT + innerH, Label: "server ready"})
	}
	for i, c := range a.Curves {
		var b strings.Builder
		for j, v := range c.Attempts {
			fmt.Fprintf(&b, "%.1f,%.1f ", x(float64(j)/10), y(float64(v)))
		}
		p.Lines = append(p.Lines, svgLine{Points: b.String(), Color: colors[c.Role], Name: c.Role + ": " + c.Policy, LegendY: plotT + 14 + 16*float64(i)})
	}
	return p
}
