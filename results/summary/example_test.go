package summary_test

import (
	"fmt"
	"os"
	"time"

	"github.com/stampede-dev/stampede/connerr"
	"github.com/stampede-dev/stampede/report"
	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/results/summary"
)

// A loadgen ran 4 clients against a server nobody supervised: the outage is
// detected from the clients' drops, then summarised.
func ExampleSummarize() {
	s := time.Second
	r := results.NewReport(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC), 4)
	for c := range uint32(4) {
		r.Transitions = append(r.Transitions,
			results.Transition{Client: c, At: 0, Up: true},
			results.Transition{Client: c, At: 2 * s},                                // the server died
			results.Transition{Client: c, At: 3*s + time.Duration(c)*s/2, Up: true}) // back at 3, 3.5, 4, 4.5 s
	}
	for _, at := range []time.Duration{2500, 3000, 3500, 4000, 4500} { // ms
		b := r.Timeline.At(at * time.Millisecond)
		b.Attempts += 2
		b.Failures[connerr.Refused]++
	}
	events := summary.DetectOutages(r, summary.DetectConfig{})
	sum := summary.Summarize(summary.Input{RunID: summary.NewRunID(r.Start, 42), Seed: 42, Report: r, Events: events, End: 6 * s})
	rec := sum.Recovery[0]
	fmt.Println(sum.RunID)
	fmt.Printf("%s at %.1f s, ready %.1f s\n", sum.Events[0].Kind, sum.Events[0].StartS, *sum.Events[0].ReadyS)
	fmt.Printf("recovered %d/%d, R50 %.1f s, R100 %.1f s\n", rec.Recovered, rec.ConnectedBefore, *rec.R50S, *rec.R100S)
	fmt.Printf("herd peak %d per 100 ms, %.1f x the mean; wasted %.2f, outage %.2f per client\n",
		*rec.HerdPeakPer100ms, *rec.HerdPeakToMean, *rec.WastedAttemptsPerClient, *rec.OutageAttemptsPerClient)
	report.WriteComparison(os.Stdout, []summary.Row{{Policy: "fixed:initial=500ms", Summary: sum}})
	// Output:
	// 2026-11-29T12-00-00Z-002a
	// outage at 2.0 s, ready 3.0 s
	// recovered 4/4, R50 0.5 s, R100 1.5 s
	// herd peak 2 per 100 ms, 4.0 x the mean; wasted 1.00, outage 0.25 per client
	// policy               event     recovered  R99 s  R100 s  peak/100ms  peak:mean  wasted/client  outage/client  ListenOverflows
	// fixed:initial=500ms  0:outage  4/4        1.50   1.50    2           4.0        1.00           0.25           0
}

// A worker's reactor records into a Stream; a progress loop drains what is
// complete while the run goes, the last drain takes the rest; the
// coordinator assembles the pieces into the run's report, the .hlog files'
// intervals included.
func ExampleStream() {
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	rep := results.NewReport(start, 2)
	s := results.NewStream(rep)
	for i, ms := range []int{120, 480, 1300, 2750} {
		at := time.Duration(ms) * time.Millisecond
		s.At(at).Successes++
		s.Record(results.DistConnect, at, time.Duration(10*(i+1))*time.Millisecond)
	}
	var wire []results.Piece
	during, _ := s.Drain(2 * time.Second) // buckets and intervals that end by 2 s
	wire = append(wire, during...)
	_ = s.Close()                   // the run is over
	rest, _ := s.Drain(results.End) // everything else
	wire = append(wire, rest...)

	a := results.NewAssembler(time.Second)
	for _, p := range wire {
		if err := a.Add(p); err != nil {
			fmt.Println(err)
		}
	}
	got, _ := a.Report(start, 2, 1)
	fmt.Printf("%d pieces during the run, %d after\n", len(during), len(rest))
	for _, h := range got.Intervals.List() {
		p, _ := got.Intervals.Packed(h.Dist, h.Index)
		fmt.Printf("%s interval %d: %d values\n", h.Dist, h.Index, p.TotalCount())
	}
	fmt.Printf("connect p50 %.0f ms of %d, %d buckets\n", results.Percentiles(got.Connect).P50, got.Connect.TotalCount(), len(got.Timeline))
	// Output:
	// 2 pieces during the run, 2 after
	// connect interval 0: 2 values
	// connect interval 1: 1 values
	// connect interval 2: 1 values
	// connect p50 20 ms of 4, 28 buckets
}
