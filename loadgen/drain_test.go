package loadgen

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/spec"
)

// TestDrainDuringRun: a fleet in the message protocol's mode against the
// bundled target, killed and restarted mid-run, is drained every 10 ms
// from another goroutine while its reactors record (run it with -race);
// the pieces, each within its limit, assemble into exactly the report Run
// returns: timeline, all five histograms, their intervals, the tallies and
// the message tracking's counts.
func TestDrainDuringRun(t *testing.T) {
	srv := newTargetRestarter(t, false)
	start := time.Now()
	cfg := Config{Client: spec.Client{URL: srv.URL(), Clients: 24, Mode: spec.ModeStampede, Rooms: 4, MsgRate: 20, Seed: 7,
		Policy:      backoff.Policy{Kind: backoff.Fixed, Initial: 200 * time.Millisecond, Jitter: 0.9},
		QuietPeriod: time.Second, Reactors: 2, HistInterval: 200 * time.Millisecond}, Start: start,
	}
	f, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	const limit = 16 << 10
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	type result struct {
		rep *results.Report
		err error
	}
	ran := make(chan result, 1)
	go func() {
		rep, err := f.Run(ctx)
		ran <- result{rep, err}
	}()

	var pieces []results.Piece
	var during, histsDuring int // pieces, and those of histograms, drained while the fleet ran
	stopDrain, drained := make(chan struct{}), make(chan error, 1)
	go func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stopDrain:
				drained <- nil
				return
			case <-tick.C:
			}
			ps, err := f.Drain(time.Since(start), limit)
			if err != nil {
				drained <- err
				return
			}
			pieces = append(pieces, ps...)
			during += len(ps)
			for _, p := range ps {
				if p.Histograms != nil {
					histsDuring++
				}
			}
		}
	}()

	waitFor(t, 2*time.Second, "all connected and sending", func(s Stats) bool { return s.Connected == 24 && s.MsgAcked >= 48 }, f)
	srv.Kill()
	time.Sleep(300 * time.Millisecond)
	srv.Restart()
	res := <-ran
	close(stopDrain)
	if err := <-drained; err != nil {
		t.Fatal(err)
	}
	if res.err != nil {
		t.Fatal(res.err)
	}
	last, err := f.Drain(results.End, limit)
	if err != nil {
		t.Fatal(err)
	}
	pieces = append(pieces, last...)
	if again, err := f.Drain(results.End, limit); err != nil || len(again) != 0 {
		t.Errorf("a drain after the last: %d pieces (%v)", len(again), err)
	}

	a := results.NewAssembler(cfg.HistInterval)
	for _, p := range pieces {
		if n, err := p.Size(); err != nil || n > limit {
			t.Fatalf("a piece of %d bytes (%v), limit %d", n, err, limit)
		}
		if err := a.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	got, err := a.Report(start, 24, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := res.rep
	if !reflect.DeepEqual(got.Timeline, want.Timeline) {
		t.Errorf("timeline: %d buckets assembled, %d in the report, or they differ", len(got.Timeline), len(want.Timeline))
	}
	for d := range results.NumDists {
		g, w := *got.Hist(d), *want.Hist(d)
		if !g.Equals(w) || g.Max() != w.Max() {
			t.Errorf("%s: assembled %d values up to %d µs, report %d up to %d", d, g.TotalCount(), g.Max(), w.TotalCount(), w.Max())
		}
		if w.TotalCount() == 0 {
			t.Errorf("%s: nothing recorded; the test should exercise every distribution", d)
		}
	}
	if g, w := got.Intervals.List(), want.Intervals.List(); !reflect.DeepEqual(g, w) {
		t.Errorf("intervals: %d assembled, %d in the report, or they differ", len(g), len(w))
	}
	if got.Track == nil || want.Track == nil {
		t.Fatalf("track records: assembled %v, report %v", got.Track != nil, want.Track != nil)
	}
	if g, w := got.Track.Count(), want.Track.Count(); g != w || w.Expected == 0 || len(got.Track.Clients) != 24 {
		t.Errorf("track: assembled %+v of %d clients, report %+v", g, len(got.Track.Clients), w)
	}
	if got.Messages != want.Messages || !reflect.DeepEqual(got.Stopped, want.Stopped) {
		t.Errorf("tallies: messages %+v stopped %v, report %+v %v", got.Messages, got.Stopped, want.Messages, want.Stopped)
	}
	// The run lasted 4 s of 200 ms intervals: the drains during it must
	// have sent histograms, not left everything to the end.
	if during == 0 || histsDuring == 0 || want.Intervals.End() < 15 {
		t.Errorf("%d pieces (%d of histograms) drained during the run, intervals up to %d", during, histsDuring, want.Intervals.End())
	}
}

// TestStreamedKeepsOnlyTransitions: a fleet made with NewStreamed, killed
// and restarted mid-run, streams everything through Drain (the timeline
// totals are the live counters', every distribution and interval is
// there), and the Report its Run returns holds the transitions, tallies
// and track, but no timeline, intervals or histograms.
func TestStreamedKeepsOnlyTransitions(t *testing.T) {
	srv := newTargetRestarter(t, false)
	start := time.Now()
	cfg := Config{Client: spec.Client{URL: srv.URL(), Clients: 12, Mode: spec.ModeStampede, Rooms: 3, MsgRate: 20, Seed: 3,
		Policy:      backoff.Policy{Kind: backoff.Fixed, Initial: 200 * time.Millisecond, Jitter: 0.9},
		QuietPeriod: time.Second, Reactors: 2, HistInterval: 200 * time.Millisecond}, Start: start,
	}
	f, err := NewStreamed(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	ran := make(chan *results.Report, 1)
	go func() {
		rep, err := f.Run(ctx)
		if err != nil {
			t.Error(err)
		}
		ran <- rep
	}()
	a := results.NewAssembler(cfg.HistInterval)
	drain := func(upTo time.Duration) {
		ps, err := f.Drain(upTo, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ps {
			if err := a.Add(p); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitFor(t, 2*time.Second, "all connected and sending", func(s Stats) bool { return s.Connected == 12 && s.MsgAcked >= 24 }, f)
	drain(time.Since(start))
	srv.Kill()
	time.Sleep(300 * time.Millisecond)
	srv.Restart()
	rep := <-ran
	if rep == nil {
		t.FailNow()
	}
	drain(results.End)
	got, err := a.Report(start, 12, 1)
	if err != nil {
		t.Fatal(err)
	}

	st := f.Stats()
	var tl results.Bucket
	for i := range got.Timeline {
		tl.Add(&got.Timeline[i])
	}
	if uint64(tl.Attempts) != st.Attempts || uint64(tl.Successes) != st.Successes || uint64(tl.FailureCount()) != st.FailureCount() ||
		uint64(tl.DisconnectCount()) != st.DisconnectCount() || st.DisconnectCount() < 12 {
		t.Errorf("drained timeline %+v, live counters %+v", tl, st)
	}
	for _, d := range []results.Dist{results.DistConnect, results.DistTTR, results.DistRTT, results.DistResume} {
		if h := *got.Hist(d); h.TotalCount() == 0 {
			t.Errorf("%s: nothing drained", d)
		}
	}
	if got.Connect.TotalCount() != int64(st.Successes) || got.Intervals.End() < 10 {
		t.Errorf("drained %d connect latencies, %d successes; intervals up to %d", got.Connect.TotalCount(), st.Successes, got.Intervals.End())
	}

	if len(rep.Timeline) != 0 || rep.Intervals.Len() != 0 {
		t.Errorf("the streamed report kept %d buckets and %d intervals", len(rep.Timeline), rep.Intervals.Len())
	}
	for d := range results.NumDists {
		if *rep.Hist(d) != nil {
			t.Errorf("the streamed report has a %s histogram", d)
		}
	}
	ups, downs := 0, 0
	for _, tr := range rep.Transitions {
		if tr.Up {
			ups++
		} else {
			downs++
		}
	}
	if downs != int(st.DisconnectCount()) || ups < 24 || ups > downs+12 || rep.Processes != 1 {
		t.Errorf("transitions: %d up, %d down, %d disconnects; %d processes", ups, downs, st.DisconnectCount(), rep.Processes)
	}
	if got.Messages != rep.Messages || rep.Track == nil || got.Track.Count() != rep.Track.Count() {
		t.Errorf("tallies: drained %+v, report %+v", got.Messages, rep.Messages)
	}
}
