package live

import (
	"encoding/json"
	"math"
	"slices"
	"time"

	"github.com/stampede-dev/stampede/report"
	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/results/folder"
	"github.com/stampede-dev/stampede/results/slo"
	"github.com/stampede-dev/stampede/results/summary"
)

// Snapshot is what a run knows while it goes: Feed asks for one before
// each frame.
type Snapshot struct {
	// At is the time from the run's start.
	At time.Duration
	// Label names the run on the page; RunID and Seed are the run's.
	Label, RunID string
	Seed         uint64
	// Clients is the fleet's size.
	Clients int
	// CapacityPer100ms is what the server accepts in 100 ms (its accept
	// rate over ten); 0 when unknown.
	CapacityPer100ms float64
	// Timeline is the fleet's counters per 100 ms so far, merged over
	// every loadgen (and host).
	Timeline results.Timeline
	// Events are the events applied so far, with their readiness;
	// Underway those begun and not over yet (no readiness).
	Events, Underway []results.Event
	// SLO are the run's gates, evaluated on the figures so far.
	SLO []slo.SLO
	// HTTP is an HTTP fleet's run so far; nil for a WebSocket fleet's,
	// whose figures are the fields above (an HTTP fleet's frame uses At,
	// Label, Clients and SLO of them).
	HTTP *HTTPSnapshot
}

// Frame is one message of the stream: the figures the page's panel shows
// and the data its plots draw (report.DataJSON's).
type Frame struct {
	// Seq counts frames from 1.
	Seq uint64 `json:"seq"`
	// State is "running", or "final" for the last frame, whose figures
	// are the results folder's.
	State string `json:"state"`
	// T is the seconds from the run's start the frame was taken at.
	T float64 `json:"t_s"`
	// Seed is the run's seed.
	Seed uint64 `json:"seed"`
	// Clients is the fleet's size; Connected the clients connected at the
	// end of the timeline so far; Arrivals the connection attempts of its
	// last 100 ms bucket.
	Clients   int    `json:"clients"`
	Connected int64  `json:"connected"`
	Arrivals  uint32 `json:"arrivals_per_100ms"`
	// Events marks every event on the time axis as it happens.
	Events []Mark `json:"events"`
	// Failures counts failed connection attempts by class so far.
	Failures map[string]uint64 `json:"failures"`
	// Capacity is what the server accepts per 100 ms; null when unknown.
	Capacity *float64 `json:"capacity_per_100ms"`
	// Recovery is each event's recovery as it settles. While the run
	// goes it is estimated from the connected count (Exact false); the
	// final frame's are the summary's per-client figures.
	Recovery []Recovery `json:"recovery"`
	Exact    bool       `json:"exact"`
	// SLO is each gate's state so far: "pass", "fail" or "pending" (its
	// figure has no value yet).
	SLO []SLOState `json:"slo"`
	// HTTP is an HTTP fleet's figures (Connected and Arrivals are a
	// WebSocket fleet's); absent from a WebSocket run's frames.
	HTTP *HTTPFigures `json:"http,omitempty"`
	// Data is what the page's plots draw (report.html's DATA).
	Data json.RawMessage `json:"data"`
}

// Mark is one event on the time axis; Ready is null until the target is
// ready again.
type Mark struct {
	Name  string   `json:"name"`
	Start float64  `json:"start_s"`
	Ready *float64 `json:"ready_s"`
}

// Recovery is one event's recovery so far. The R figures are seconds from
// ready until that share of the clients connected before were back; null
// until reached.
type Recovery struct {
	Event   int      `json:"event"`
	Before  int64    `json:"connected_before"`
	Back    int64    `json:"back"`
	Peak    uint32   `json:"herd_peak_per_100ms"`
	R50     *float64 `json:"r50_s"`
	R90     *float64 `json:"r90_s"`
	R99     *float64 `json:"r99_s"`
	R100    *float64 `json:"r100_s"`
	Settled bool     `json:"settled"`
}

// SLOState is one SLO's state so far.
type SLOState struct {
	Expr   string `json:"expr"`
	State  string `json:"state"`
	Detail string `json:"detail"`
}

// liveRun is the run so far as the report package draws it, with the
// summary the SLOs are evaluated on.
func liveRun(s Snapshot) (*report.Run, []Mark) {
	evs := make([]results.Event, 0, len(s.Events)+len(s.Underway))
	evs = append(evs, s.Events...)
	for _, e := range s.Underway {
		e.NeverReady = true // not ready yet: shaded to now
		evs = append(evs, e)
	}
	slices.SortStableFunc(evs, func(a, b results.Event) int { return int(a.Start - b.Start) })
	sum := &summary.Summary{RunID: s.RunID, Seed: s.Seed, Clients: s.Clients, Processes: 1, DurationS: s.At.Seconds()}
	marks := make([]Mark, 0, len(evs))
	for _, e := range evs {
		es := summary.EventSummary{Kind: e.Kind, Mode: e.Mode, Spec: e.Spec, StartS: e.Start.Seconds(), EndS: e.End.Seconds(), Detected: e.Detected}
		if ready, ok := e.ReadyAt(); ok {
			r, o := ready.Seconds(), (ready - e.Start).Seconds()
			es.ReadyS, es.OutageS = &r, &o
		}
		sum.Events = append(sum.Events, es)
		m := Mark{Name: summary.EventName(es), Start: round3(es.StartS)}
		if es.ReadyS != nil {
			m.Ready = new(round3(*es.ReadyS))
		}
		marks = append(marks, m)
	}
	sum.Connect = summary.ConnectOf(s.Timeline)
	run := &report.Run{Name: s.Label, Label: s.Label, Summary: sum, Timeline: folder.TimelineRows(s.Timeline, sum.Events, sum.DurationS)}
	return run, marks
}

// build turns a snapshot into a frame, and the run so far the page
// renders.
func build(s Snapshot) (Frame, *report.Run, error) {
	if s.HTTP != nil {
		return buildHTTP(s)
	}
	run, marks := liveRun(s)
	data, err := report.DataJSON([]*report.Run{run})
	if err != nil {
		return Frame{}, nil, err
	}
	f := Frame{State: "running", T: round3(s.At.Seconds()), Seed: s.Seed, Clients: s.Clients, Events: marks, Data: data,
		Failures: summary.NonZero(run.Summary.Connect.Failures), Recovery: []Recovery{}}
	rows := run.Timeline
	if n := len(s.Timeline); n > 0 {
		f.Arrivals = s.Timeline[n-1].Attempts
		if n >= 2 {
			f.Arrivals = s.Timeline[n-2].Attempts // the last bucket may still be filling
		}
		f.Connected = rows[min(n, len(rows))-1].Connected
	}
	if s.CapacityPer100ms > 0 {
		f.Capacity = new(s.CapacityPer100ms)
	}
	for i := range run.Summary.Events {
		rec := estimate(rows, run.Summary.Events, i)
		f.Recovery = append(f.Recovery, rec)
		run.Summary.Recovery = append(run.Summary.Recovery, summary.Recovery{Event: i, ConnectedBefore: int(rec.Before),
			Disconnected: int(rec.Before - min(rec.Before, low(rows, run.Summary.Events[i].StartS))), Recovered: int(rec.Back),
			R50S: rec.R50, R90S: rec.R90, R99S: rec.R99, R100S: rec.R100})
	}
	f.SLO = sloStates(slo.EvalSLOs(s.SLO, run.Summary))
	return f, run, nil
}

// estimate is event i's recovery from the connected count: the clients
// connected before its start, the count back since, each R figure the
// first bucket after ready at whose end that share was connected again.
// Counting connections, not clients, it is an estimate: the final frame
// has the exact figures.
func estimate(rows []folder.TimelineRow, evs []summary.EventSummary, i int) Recovery {
	e := evs[i]
	start := bucket(e.StartS)
	end := len(rows)
	if i+1 < len(evs) {
		end = min(end, bucket(evs[i+1].StartS)+1)
	}
	rec := Recovery{Event: i}
	if start > 0 && start-1 < len(rows) {
		rec.Before = rows[start-1].Connected
	}
	for j := start; j < end; j++ {
		rec.Peak = max(rec.Peak, rows[j].Attempts)
	}
	if end > 0 && end <= len(rows) {
		rec.Back = min(rec.Before, rows[end-1].Connected)
	}
	if e.ReadyS == nil || rec.Before == 0 {
		return rec
	}
	ready := *e.ReadyS
	figs := []**float64{&rec.R50, &rec.R90, &rec.R99, &rec.R100}
	for k, q := range []float64{0.5, 0.9, 0.99, 1} {
		want := int64(math.Ceil(q * float64(rec.Before)))
		for j := max(start, bucket(ready)); j < end; j++ {
			if rows[j].Connected >= want {
				r := round3(max(0, rows[j].T+results.Tick.Seconds()-ready))
				*figs[k] = &r
				break
			}
		}
	}
	rec.Settled = rec.R100 != nil
	return rec
}

// low is the fewest clients connected from the bucket of start on.
func low(rows []folder.TimelineRow, start float64) int64 {
	m := int64(math.MaxInt64)
	for j := bucket(start); j < len(rows); j++ {
		m = min(m, rows[j].Connected)
	}
	if m == math.MaxInt64 {
		return 0
	}
	return m
}

// final is the last frame: the figures of the results folder's run, its
// data report.html's.
func final(runs []*report.Run, seq uint64) (Frame, error) {
	data, err := report.DataJSON(runs)
	if err != nil {
		return Frame{}, err
	}
	r := runs[len(runs)-1]
	s := r.Summary
	f := Frame{Seq: seq, State: "final", T: round3(s.DurationS), Seed: s.Seed, Clients: s.Clients, Failures: summary.NonZero(s.Connect.Failures), Exact: true, Data: data,
		Events: []Mark{}, Recovery: []Recovery{}, SLO: []SLOState{}}
	if n := len(r.Timeline); n > 0 {
		f.Connected = r.Timeline[n-1].Connected
		f.Arrivals = r.Timeline[n-1].Attempts
	}
	for _, e := range s.Events {
		f.Events = append(f.Events, Mark{Name: summary.EventName(e), Start: e.StartS, Ready: e.ReadyS})
	}
	for _, rec := range s.Recovery {
		x := Recovery{Event: rec.Event, Before: int64(rec.ConnectedBefore), Back: int64(rec.Recovered),
			R50: rec.R50S, R90: rec.R90S, R99: rec.R99S, R100: rec.R100S, Settled: true}
		if rec.HerdPeakPer100ms != nil {
			x.Peak = *rec.HerdPeakPer100ms
		}
		f.Recovery = append(f.Recovery, x)
	}
	if s.HTTP != nil {
		finalHTTP(&f, r)
	}
	for _, x := range s.SLO {
		st := SLOState{Expr: x.Expr, State: "fail", Detail: x.Detail}
		if x.Pass {
			st.State = "pass"
		}
		f.SLO = append(f.SLO, st)
	}
	return f, nil
}

// sloStates are the SLOs' outcomes so far: a figure with no value yet is
// pending, not failed.
func sloStates(rs []summary.SLOResult) []SLOState {
	out := make([]SLOState, 0, len(rs))
	for _, r := range rs {
		st := SLOState{Expr: r.Expr, State: "fail", Detail: r.Detail}
		switch {
		case r.Value == nil:
			st.State = "pending"
		case r.Pass:
			st.State = "pass"
		}
		out = append(out, st)
	}
	return out
}

// bucket is the timeline bucket holding s seconds.
func bucket(s float64) int {
	if s <= 0 {
		return 0
	}
	return int(time.Duration(math.Round(s*1e9)) / results.Tick)
}

func round3(v float64) float64 { return math.Round(v*1e3) / 1e3 }
