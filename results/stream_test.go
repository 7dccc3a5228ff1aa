package results

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/connerr"
)

var streamStart = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// assemble merges pieces into a report, failing the test on an error.
func assemble(t *testing.T, interval time.Duration, batches ...[]Piece) *Report {
	t.Helper()
	a := NewAssembler(interval)
	for _, ps := range batches {
		for _, p := range ps {
			if err := a.Add(p); err != nil {
				t.Fatal(err)
			}
		}
	}
	r, err := a.Report(streamStart, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// sameRecord fails the test unless got holds exactly want's timeline,
// histograms (totals and intervals), messages and stopped clients.
func sameRecord(t *testing.T, got, want *Report) {
	t.Helper()
	if !reflect.DeepEqual(got.Timeline, want.Timeline) {
		t.Errorf("timeline:\n got %+v\nwant %+v", got.Timeline, want.Timeline)
	}
	for d := range NumDists {
		if g, w := *got.Hist(d), *want.Hist(d); !g.Equals(w) || g.Max() != w.Max() || g.Min() != w.Min() {
			t.Errorf("%s: %d values up to %d, want %d up to %d", d, g.TotalCount(), g.Max(), w.TotalCount(), w.Max())
		}
	}
	if g, w := got.Intervals.List(), want.Intervals.List(); !reflect.DeepEqual(g, w) {
		t.Errorf("intervals: %d histograms, want %d (or they differ)", len(g), len(w))
	}
	if got.Messages != want.Messages {
		t.Errorf("messages %+v, want %+v", got.Messages, want.Messages)
	}
	if len(got.Stopped) != 0 || len(want.Stopped) != 0 {
		if !reflect.DeepEqual(got.Stopped, want.Stopped) {
			t.Errorf("stopped %v, want %v", got.Stopped, want.Stopped)
		}
	}
}

// TestStreamDrain: a drain gives the buckets and intervals complete before
// its offset, the tallies so far, and nothing twice; what comes late into
// a drained bucket comes with the next drain; the drains together are the
// report.
func TestStreamDrain(t *testing.T) {
	rep := NewReport(streamStart, 10)
	s := NewStream(rep)
	s.At(50*time.Millisecond).Attempts++   // bucket 0
	s.At(1250*time.Millisecond).Attempts++ // bucket 12
	s.At(1250*time.Millisecond).Successes++
	s.Record(DistConnect, 1250*time.Millisecond, 3*time.Millisecond) // interval 1
	s.Record(DistConnect, 400*time.Millisecond, 2*time.Millisecond)  // interval 0
	s.Record(DistTTR, 2100*time.Millisecond, 1500*time.Millisecond)  // interval 2
	rep.Messages.Sent = 7
	rep.Stopped = map[string]Stopped{"tls": {Count: 1, LastError: "x509"}}

	ps, err := s.Drain(1300 * time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	// Buckets 0..12 end by 1.3 s; interval 0 ends by then, 1 and 2 do not.
	if len(ps) != 3 || ps[0].Buckets == nil || ps[1].Histograms == nil || ps[2].Tallies == nil {
		t.Fatalf("pieces %+v", ps)
	}
	if b := ps[0].Buckets; b.First != 0 || len(b.Buckets) != 13 || b.Buckets[0].Attempts != 1 || b.Buckets[12] != (Bucket{Attempts: 1, Successes: 1}) {
		t.Errorf("buckets %+v", b)
	}
	if h := ps[1].Histograms; h.Interval != time.Second || len(h.List) != 1 || h.List[0].Dist != DistConnect || h.List[0].Index != 0 {
		t.Errorf("histograms %+v", h)
	}
	want := Tallies{Messages: Messages{Sent: 7}, Stopped: map[string]Stopped{"tls": {Count: 1, LastError: "x509"}}}
	if !reflect.DeepEqual(*ps[2].Tallies, want) {
		t.Errorf("tallies %+v, want %+v", *ps[2].Tallies, want)
	}
	// The drained buckets are in the report already.
	if len(rep.Timeline) != 13 || rep.Timeline[12].Successes != 1 {
		t.Errorf("report timeline %d buckets", len(rep.Timeline))
	}

	// Late into drained bucket 3 and interval 0; more tallies.
	s.At(300 * time.Millisecond).Failures[connerr.Refused]++
	s.Record(DistConnect, 300*time.Millisecond, 9*time.Millisecond)
	rep.Messages.Sent = 9
	rep.Stopped["tls"] = Stopped{Count: 3, LastError: "x509"}
	ps2, err := s.Drain(1300 * time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps2) != 3 || ps2[0].Buckets == nil || ps2[1].Histograms == nil || ps2[2].Tallies == nil {
		t.Fatalf("second drain %+v", ps2)
	}
	if b := ps2[0].Buckets; b.First != 3 || len(b.Buckets) != 1 || b.Buckets[0].Failures[connerr.Refused] != 1 {
		t.Errorf("late bucket %+v", b)
	}
	// Interval 0 opened again for the late value, and sealed again.
	if l := ps2[1].Histograms.List; len(l) != 1 || l[0].Dist != DistConnect || l[0].Index != 0 {
		t.Errorf("late interval %+v", l)
	}
	want = Tallies{Messages: Messages{Sent: 2}, Stopped: map[string]Stopped{"tls": {Count: 2}}}
	if !reflect.DeepEqual(*ps2[2].Tallies, want) {
		t.Errorf("tallies %+v, want %+v", *ps2[2].Tallies, want)
	}
	if ps, err := s.Drain(1300 * time.Millisecond); err != nil || len(ps) != 0 {
		t.Errorf("a drain with nothing new: %+v, %v", ps, err)
	}

	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	last, err := s.Drain(End)
	if err != nil {
		t.Fatal(err)
	}
	got := assemble(t, time.Second, ps, ps2, last)
	sameRecord(t, got, rep)
	// Interval 0 of connect came in two pieces and merged: 2 ms and 9 ms.
	p, err := got.Intervals.Packed(DistConnect, 0)
	if err != nil || p.TotalCount() != 2 {
		t.Errorf("connect interval 0: %v, %v", p, err)
	}
	if rep.Connect.TotalCount() != 3 || rep.TTR.TotalCount() != 1 || rep.Intervals.Len() != 3 {
		t.Errorf("report: %d connect, %d ttr, %d intervals", rep.Connect.TotalCount(), rep.TTR.TotalCount(), rep.Intervals.Len())
	}
	if n := len(rep.Timeline); n != 13 {
		t.Errorf("report timeline %d buckets, want 13", n)
	}
}

// TestStreamKeepsTwoLive: a third interval of a distribution seals the
// oldest, so a stream that is never drained holds two live histograms per
// distribution.
func TestStreamKeepsTwoLive(t *testing.T) {
	rep := NewReport(streamStart, 1)
	s := NewStream(rep)
	for i := range 5 {
		s.Record(DistRTT, time.Duration(i)*time.Second, time.Millisecond)
	}
	if len(s.live) != 2 || rep.Intervals.Len() != 3 || len(s.pending) != 3 {
		t.Errorf("%d live, %d sealed, %d pending; want 2, 3, 3", len(s.live), rep.Intervals.Len(), len(s.pending))
	}
	// A late value for sealed interval 1 opens it again (sealing 3), and
	// sealing it again merges it into the report's interval 1.
	s.Record(DistRTT, 1500*time.Millisecond, time.Millisecond)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	p, err := rep.Intervals.Packed(DistRTT, 1)
	if err != nil || p.TotalCount() != 2 {
		t.Errorf("interval 1: %v, %v", p, err)
	}
	tot, err := rep.Intervals.Total(DistRTT)
	if err != nil || !tot.Equals(rep.RTT) {
		t.Errorf("intervals total %d, report %d (%v)", tot.TotalCount(), rep.RTT.TotalCount(), err)
	}
}

// TestStreamNegativeOffsets: before the run's start lands in bucket 0 and
// interval 0, as Timeline.At does.
func TestStreamNegativeOffsets(t *testing.T) {
	rep := NewReport(streamStart, 1)
	s := NewStream(rep)
	s.At(-time.Second).Attempts++
	s.Record(DistConnect, -time.Second, time.Millisecond)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if len(rep.Timeline) != 1 || rep.Timeline[0].Attempts != 1 {
		t.Errorf("timeline %+v", rep.Timeline)
	}
	if l := rep.Intervals.List(); len(l) != 1 || l[0].Index != 0 {
		t.Errorf("intervals %+v", l)
	}
}

// TestMessagesSub: the difference of every field (a field left out would
// be lost from the stream), wrapping where a counter went down.
func TestMessagesSub(t *testing.T) {
	var a, b Messages
	va, vb := reflect.ValueOf(&a).Elem(), reflect.ValueOf(&b).Elem()
	for i := range va.NumField() {
		if va.Field(i).Kind() == reflect.Bool {
			continue // Tracked: below
		}
		va.Field(i).SetUint(uint64(100 + i))
		vb.Field(i).SetUint(uint64(7 * i))
	}
	b.Tracked = true
	d := b.sub(a)
	if !d.Tracked {
		t.Errorf("sub dropped Tracked")
	}
	vd := reflect.ValueOf(d)
	for i := range vd.NumField() {
		if vd.Field(i).Kind() == reflect.Bool {
			continue
		}
		if got, want := vd.Field(i).Uint(), uint64(7*i)-uint64(100+i); got != want {
			t.Errorf("%s: %d, want %d", vd.Type().Field(i).Name, got, want)
		}
	}
	a.Add(d)
	if a != b {
		t.Errorf("a + (b - a) = %+v, want %+v", a, b)
	}
}

// TestPieceJSON: pieces, intervals and a report with intervals survive
// their JSON form exactly.
func TestPieceJSON(t *testing.T) {
	rep := NewReport(streamStart, 2)
	s := NewStream(rep)
	for i := range 30 {
		at := time.Duration(i) * 137 * time.Millisecond
		b := s.At(at)
		b.Attempts++
		b.Failures[connerr.Timeout] += uint32(i)
		b.RecordRTT(time.Duration(i) * time.Millisecond)
		s.Record(Dist(i%int(NumDists)), at, time.Duration(i*i)*time.Millisecond)
	}
	rep.Messages = Messages{Sent: 1, Lost: 1 << 63, BadFrames: 3}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	ps, err := s.Drain(End)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(ps)
	if err != nil {
		t.Fatal(err)
	}
	var back []Piece
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, ps) {
		t.Errorf("pieces changed through JSON:\n%s", b)
	}

	rb, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var r2 Report
	if err := json.Unmarshal(rb, &r2); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(r2.Intervals.List(), rep.Intervals.List()) || r2.Intervals.Length != time.Second {
		t.Errorf("report intervals changed through JSON")
	}
}
