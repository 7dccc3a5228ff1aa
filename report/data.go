package report

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/stampede-dev/stampede/connerr"
	"github.com/stampede-dev/stampede/results/summary"
)

// nan marks a missing number; it is written as null in the page's JSON.
var nan = math.NaN()

// series is a column of numbers that marshals NaN as null, so uPlot draws
// a gap there.
type series []float64

// MarshalJSON writes the numbers in their shortest form, NaN as null.
func (s series) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 2+len(s)*4)
	b = append(b, '[')
	for i, v := range s {
		if i > 0 {
			b = append(b, ',')
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			b = append(b, "null"...)
			continue
		}
		b = strconv.AppendFloat(b, v, 'g', -1, 64)
	}
	return append(b, ']'), nil
}

// pageData is the JSON the page's script draws from.
type pageData struct {
	Runs []runData `json:"runs"`
}

// runData is one run's plot data.
type runData struct {
	// Label names the run in the overlaid plots' legends: its folder
	// (Run.Name), which the comparison table pairs with its policy.
	Label string `json:"label"`
	RunID string `json:"run_id"`
	// T is each timeline row's start in seconds; the other timeline
	// series run parallel to it.
	T           series            `json:"t"`
	Connected   series            `json:"connected"`
	Attempts    series            `json:"attempts"`
	Successes   series            `json:"successes"`
	Disconnects series            `json:"disconnects"`
	Failures    map[string]series `json:"failures"` // classes with any failure
	Messages    map[string]series `json:"messages,omitempty"`
	Events      []eventData       `json:"events"`
	// Latency holds percentile curves by distribution name.
	Latency map[string]percentiles `json:"latency"`
	// Resources holds per-role series over RT.
	RT        series                `json:"rt"`
	Resources map[string]roleSeries `json:"resources"`
	// Kernel holds per-second rates of the kernel counters over KT.
	KT     series            `json:"kt"`
	Kernel map[string]series `json:"kernel"`
	// HTTP is an HTTP fleet's series; absent from a WebSocket run.
	HTTP *httpData `json:"http,omitempty"`
}

// eventData marks one event on the time axis.
type eventData struct {
	Name  string  `json:"name"`
	Start float64 `json:"start"`
	Ready float64 `json:"ready"`
}

// percentiles is a percentile plot: X is 1/(1-q) for quantile q (a log
// axis spreads the tail: 10 is p90, 100 p99), V the value in ms.
type percentiles struct {
	X     series `json:"x"`
	V     series `json:"v"`
	Count int64  `json:"count"`
}

// roleSeries are one role's resources over time.
type roleSeries struct {
	RSSMiB series `json:"rss_mib"`
	CPUPct series `json:"cpu_pct"`
	FDs    series `json:"fds"`
}

// kernelPlotted are the kernel counters the report plots, as rates.
var kernelPlotted = []string{"ListenOverflows", "ListenDrops", "TCPSynRetrans", "TCPReqQFullDoCookies", "TCPAbortOnTimeout"}

// buildData turns loaded runs into the page's JSON data.
func buildData(runs []*Run) pageData {
	d := pageData{Runs: make([]runData, len(runs))}
	for i, r := range runs {
		d.Runs[i] = runDataOf(r)
	}
	return d
}

func runDataOf(r *Run) runData {
	n := len(r.Timeline)
	rd := runData{
		Label: r.Name, RunID: r.Summary.RunID,
		T: make(series, n), Connected: make(series, n), Attempts: make(series, n),
		Successes: make(series, n), Disconnects: make(series, n),
		Failures: map[string]series{}, Latency: map[string]percentiles{},
		Resources: map[string]roleSeries{}, Kernel: map[string]series{},
		Events: []eventData{},
	}
	var fails [connerr.NumClasses]series
	var msgs [3]series
	for i, row := range r.Timeline {
		rd.T[i], rd.Connected[i] = row.T, float64(row.Connected)
		rd.Attempts[i], rd.Successes[i] = float64(row.Attempts), float64(row.Successes)
		rd.Disconnects[i] = float64(row.Disconnects)
		for _, c := range connerr.Classes() {
			if row.Failures[c] > 0 && fails[c] == nil {
				fails[c] = make(series, n)
			}
			if fails[c] != nil {
				fails[c][i] = float64(row.Failures[c])
			}
		}
		for k, v := range [3]uint32{row.MsgSent, row.MsgAcked, row.MsgDelivered} {
			if v > 0 && msgs[k] == nil {
				msgs[k] = make(series, n)
			}
			if msgs[k] != nil {
				msgs[k][i] = float64(v)
			}
		}
	}
	for _, c := range connerr.Classes() {
		if fails[c] != nil {
			rd.Failures[c.String()] = fails[c]
		}
	}
	for k, name := range [3]string{"sent", "acked", "delivered"} {
		if msgs[k] != nil {
			if rd.Messages == nil {
				rd.Messages = map[string]series{}
			}
			rd.Messages[name] = msgs[k]
		}
	}
	for _, e := range r.Summary.Events {
		ready := r.Summary.DurationS // never ready again: shaded to the run's end
		if e.ReadyS != nil {
			ready = *e.ReadyS
		}
		rd.Events = append(rd.Events, eventData{Name: summary.EventName(e), Start: e.StartS, Ready: ready})
		if e.Kind == "deploy" {
			// A drill's deploy command's steps (docs/loadbalancer.md, "Step
			// lines"): each backend's span from its drain to back in rotation.
			for _, st := range e.Steps {
				rd.Events = append(rd.Events, eventData{Name: fmt.Sprintf("backend %d: drain to ready", st.Proc), Start: st.StartS, Ready: max(st.ReadyS, st.StartS)})
			}
		}
	}
	for name, h := range r.Latency {
		if h != nil && h.TotalCount() > 0 {
			rd.Latency[name] = percentileCurve(h)
		}
	}
	rd.RT, rd.Resources = resourceSeries(r.Resources)
	rd.KT, rd.Kernel = kernelRates(r.Kernel)
	rd.HTTP = httpDataOf(r.HTTP)
	return rd
}

// percentileCurve samples h at quantiles 1-10^(-k/20), k = 0..100 (0 %
// up to 99.999 %), then 100 %, in ms.
func percentileCurve(h *hdrhistogram.Histogram) percentiles {
	p := percentiles{Count: h.TotalCount()}
	for k := 0; k <= 100; k++ {
		x := math.Pow(10, float64(k)/20)
		q := 100 * (1 - 1/x)
		p.X = append(p.X, round(x, 6))
		p.V = append(p.V, float64(h.ValueAtQuantile(q))/1e3)
	}
	// The maximum, drawn a little past 99.999 %.
	p.X = append(p.X, 1e6)
	p.V = append(p.V, float64(h.Max())/1e3)
	return p
}

// resourceSeries lays resources.csv out per role on one time axis: the
// sampler reads every role at one instant, so rows of a sample share
// t_s. CPU is turned from cumulative seconds into percent of one core
// between samples.
func resourceSeries(t *Table) (series, map[string]roleSeries) {
	out := map[string]roleSeries{}
	if t.Rows() == 0 {
		return series{}, out
	}
	times := slices.Clone(timeColumn(t))
	slices.Sort(times)
	times = slices.CompactFunc(times, func(a, b float64) bool { return a == b })
	times = slices.DeleteFunc(times, math.IsNaN)
	idx := map[float64]int{}
	for i, v := range times {
		idx[v] = i
	}
	lastCPU := map[string][2]float64{}
	for i := range t.Rows() {
		role := t.Text["role"][i]
		ts := timeColumn(t)[i]
		j, ok := idx[ts]
		if !ok || role == "" {
			continue
		}
		rs, ok := out[role]
		if !ok {
			rs = roleSeries{RSSMiB: nans(len(times)), CPUPct: nans(len(times)), FDs: nans(len(times))}
			out[role] = rs
		}
		if p := t.Num["processes"][i]; p == 0 {
			continue // not running at this sample: a gap
		}
		rs.RSSMiB[j] = round(t.Num["rss_bytes"][i]/(1<<20), 2)
		rs.FDs[j] = t.Num["fds"][i]
		cpu := t.Num["cpu_s"][i]
		if prev, ok := lastCPU[role]; ok && ts > prev[0] {
			rs.CPUPct[j] = round(100*(cpu-prev[1])/(ts-prev[0]), 1)
		}
		lastCPU[role] = [2]float64{ts, cpu}
	}
	return series(times), out
}

// timeColumn is a CSV's time column, t_s: seconds from the run's start
// (time_s in folders written before the CSVs shared one name).
func timeColumn(t *Table) []float64 {
	if ts, ok := t.Num["t_s"]; ok {
		return ts
	}
	return t.Num["time_s"]
}

// kernelRates turns kernel.csv's cumulative counters into per-second
// rates between samples, for the counters the report plots; the first
// sample has no rate.
func kernelRates(t *Table) (series, map[string]series) {
	out := map[string]series{}
	n := t.Rows()
	if n == 0 {
		return series{}, out
	}
	ts := timeColumn(t)
	for _, name := range kernelPlotted {
		col, ok := t.Num[name]
		if !ok {
			continue
		}
		s := nans(n)
		for i := 1; i < n; i++ {
			if dt := ts[i] - ts[i-1]; dt > 0 {
				s[i] = round((col[i]-col[i-1])/dt, 1)
			}
		}
		out[name] = s
	}
	return series(slices.Clone(ts)), out
}

func nans(n int) series {
	s := make(series, n)
	for i := range s {
		s[i] = nan
	}
	return s
}

// round rounds v to digits decimals, keeping the page's JSON short.
func round(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}
