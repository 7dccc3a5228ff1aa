package results

import (
	"errors"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/stampede-dev/stampede/connerr"
	"github.com/stampede-dev/stampede/results/track"
)

// encoded returns h in the encoding pieces carry.
func encoded(t *testing.T, h *hdrhistogram.Histogram) string {
	t.Helper()
	b, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestAssemblerRefuses: histograms of another configuration or interval
// length, and indexes out of range, are errors, and a refused piece adds
// nothing.
func TestAssemblerRefuses(t *testing.T) {
	ok := NewHistogram()
	RecordLatency(ok, time.Millisecond)
	other := func(lo, hi int64, sig int) string {
		h := hdrhistogram.New(lo, hi, sig)
		_ = h.RecordValue(1000)
		return encoded(t, h)
	}
	good := IntervalHistogram{Dist: DistConnect, Index: 2, Hdr: encoded(t, ok)}
	for _, tc := range []struct {
		name   string
		piece  Piece
		config bool // the error is ErrHistogramConfig
	}{
		{"2 significant digits", Piece{Histograms: &HistogramSet{Interval: time.Second, List: []IntervalHistogram{good, {Dist: DistTTR, Hdr: other(histMin, histMax, 2)}}}}, true},
		{"a lower highest value", Piece{Histograms: &HistogramSet{Interval: time.Second, List: []IntervalHistogram{{Dist: DistTTR, Hdr: other(histMin, 1e6, 3)}}}}, true},
		{"a higher lowest value", Piece{Histograms: &HistogramSet{Interval: time.Second, List: []IntervalHistogram{{Dist: DistTTR, Hdr: other(10, histMax, 3)}}}}, true},
		{"500 ms intervals", Piece{Histograms: &HistogramSet{Interval: 500 * time.Millisecond, List: []IntervalHistogram{good}}}, false},
		{"not a histogram", Piece{Histograms: &HistogramSet{Interval: time.Second, List: []IntervalHistogram{{Hdr: "HISTFAAAAnotbase64"}}}}, false},
		{"a negative interval", Piece{Histograms: &HistogramSet{Interval: time.Second, List: []IntervalHistogram{{Index: -1, Hdr: good.Hdr}}}}, false},
		{"an unknown distribution", Piece{Histograms: &HistogramSet{Interval: time.Second, List: []IntervalHistogram{{Dist: NumDists, Hdr: good.Hdr}}}}, false},
		{"a negative bucket", Piece{Buckets: &BucketRange{First: -1, Buckets: []Bucket{{Attempts: 1}}}}, false},
		{"a bucket past a day", Piece{Buckets: &BucketRange{First: maxBucketIndex, Buckets: []Bucket{{}, {Attempts: 1}}}}, false},
		{"a track room of more seqs than keys", Piece{Track: &track.Record{Rooms: map[string]*track.Room{"r": {Seqs: track.Uints{1, 2}, Keys: track.Uints{7}}}}}, false},
		{"a track room of unsorted seqs", Piece{Track: &track.Record{Rooms: map[string]*track.Room{"r": {Seqs: track.Uints{2, 1}, Keys: track.Uints{7, 8}}}}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := NewAssembler(time.Second)
			err := a.Add(tc.piece)
			if err == nil {
				t.Fatal("accepted")
			}
			if got := errors.Is(err, ErrHistogramConfig); got != tc.config {
				t.Errorf("error %q: ErrHistogramConfig %v, want %v", err, got, tc.config)
			}
			if ps, err := a.Pieces(0); err != nil || len(ps) != 0 {
				t.Errorf("a refused piece left %d pieces (%v)", len(ps), err)
			}
		})
	}
	// A report merge refuses the same.
	a, b := NewReport(streamStart, 1), NewReport(streamStart, 1)
	b.TTR = hdrhistogram.New(histMin, histMax, 2)
	if err := a.Merge(b); !errors.Is(err, ErrHistogramConfig) {
		t.Errorf("Report.Merge: %v", err)
	}
}

// maxBucket is a bucket with every counter at its largest.
func maxBucket() Bucket {
	b := Bucket{Attempts: math.MaxUint32, Successes: math.MaxUint32, MsgSent: math.MaxUint32, MsgAcked: math.MaxUint32,
		MsgDelivered: math.MaxUint32, RTTCount: math.MaxUint32, RTTSumMicros: math.MaxUint64, RTTMaxMicros: math.MaxUint32}
	for c := range connerr.NumClasses {
		b.Failures[c], b.Disconnects[c] = math.MaxUint32, math.MaxUint32
	}
	return b
}

// TestPiecesBounded: whatever the assembler holds is cut into pieces of at
// most the limit, which assemble back to the same.
func TestPiecesBounded(t *testing.T) {
	for _, limit := range []int{4 << 10, 64 << 10, 0} {
		a := NewAssembler(time.Second)
		n := 30_000 // 50 minutes of buckets, each at its largest
		if limit > 0 {
			n = 500
		}
		tl := make([]Bucket, n)
		for i := range tl {
			tl[i] = maxBucket()
		}
		if err := a.Add(Piece{Buckets: &BucketRange{First: 7, Buckets: tl}}); err != nil {
			t.Fatal(err)
		}
		for i := range 200 {
			h := NewHistogram()
			for v := range 50 {
				RecordLatency(h, time.Duration(i*1000+v*37)*time.Microsecond)
			}
			if err := a.Add(Piece{Histograms: &HistogramSet{Interval: time.Second, List: []IntervalHistogram{{Dist: Dist(i % 5), Index: i, Hdr: encoded(t, h)}}}}); err != nil {
				t.Fatal(err)
			}
		}
		a.msgs.Sent = 12
		ps, err := a.Pieces(limit)
		if err != nil {
			t.Fatal(err)
		}
		max := limit
		if max == 0 {
			max = DefaultPieceBytes
		}
		var buckets, hists int
		b := NewAssembler(time.Second)
		for _, p := range ps {
			sz, err := p.Size()
			if err != nil || sz > max {
				t.Fatalf("limit %d: a piece of %d bytes (%v)", limit, sz, err)
			}
			if p.Buckets != nil {
				buckets++
			}
			if p.Histograms != nil {
				hists++
			}
			if err := b.Add(p); err != nil {
				t.Fatal(err)
			}
		}
		if buckets < 2 || (limit == 4<<10 && hists < 2) {
			t.Errorf("limit %d: %d bucket pieces, %d histogram pieces: not split", limit, buckets, hists)
		}
		if !reflect.DeepEqual(b.tl, a.tl) || !reflect.DeepEqual(b.hists.List(), a.hists.List()) || b.msgs != a.msgs {
			t.Errorf("limit %d: pieces do not assemble to what was cut", limit)
		}
	}
}

// TestWorstHistogramFits: a histogram with every one of its 23,552
// buckets holding a large count still fits one default piece.
func TestWorstHistogramFits(t *testing.T) {
	h := NewHistogram()
	s := h.Export()
	for i := range s.Counts {
		s.Counts[i] = 1<<40 + int64(i)*7919
	}
	h = hdrhistogram.Import(s)
	p := Piece{Histograms: &HistogramSet{Interval: time.Second, List: []IntervalHistogram{{Dist: DistTTR, Index: MaxIntervalIndex, Hdr: encoded(t, h)}}}}
	n, err := p.Size()
	if err != nil || n > DefaultPieceBytes {
		t.Errorf("worst histogram piece: %d bytes (%v), limit %d", n, err, DefaultPieceBytes)
	}
	a := NewAssembler(time.Second)
	if err := a.Add(p); err != nil {
		t.Fatal(err)
	}
	// A limit below one item is an error, not a piece over the limit.
	if _, err := a.Pieces(n / 2); err == nil || !strings.Contains(err.Error(), "does not fit") {
		t.Errorf("a histogram larger than the limit: %v", err)
	}
}

// TestAssemblerAnyOrder: pieces merge to the same whatever their order,
// the same bucket and interval arriving from several workers.
func TestAssemblerAnyOrder(t *testing.T) {
	var ps []Piece
	for w := range 3 {
		rep := NewReport(streamStart, 1)
		s := NewStream(rep)
		for i := range 40 {
			at := time.Duration(i*250+w*10) * time.Millisecond
			s.At(at).Successes++
			s.Record(DistConnect, at, time.Duration(1+i+w)*time.Millisecond)
		}
		rep.Messages.Sent = uint64(w + 1)
		for _, upTo := range []time.Duration{3 * time.Second, 7 * time.Second} {
			p, err := s.Drain(upTo)
			if err != nil {
				t.Fatal(err)
			}
			ps = append(ps, p...)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		p, err := s.Drain(End)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p...)
	}
	fwd := assemble(t, time.Second, ps)
	rev := make([]Piece, len(ps))
	for i := range ps {
		rev[len(ps)-1-i] = ps[i]
	}
	sameRecord(t, assemble(t, time.Second, rev), fwd)
	if fwd.Connect.TotalCount() != 120 || fwd.Messages.Sent != 6 || fwd.Intervals.Len() != 10 || len(fwd.Timeline) != 98 {
		t.Errorf("connect %d, sent %d, intervals %d, buckets %d", fwd.Connect.TotalCount(), fwd.Messages.Sent, fwd.Intervals.Len(), len(fwd.Timeline))
	}
}

// TestAssemblerHotIntervals: the decoded intervals the assembler keeps hot
// (more keys than maxHot, reached out of order, so that some are encoded
// back and decoded again) give byte for byte the encodings of merging
// every histogram into Intervals one at a time, and pieces cut meanwhile
// see every merge.
func TestAssemblerHotIntervals(t *testing.T) {
	a := NewAssembler(time.Second)
	want := NewIntervals(time.Second)
	const agents, intervals = 7, 3 * maxHot
	for round := range 3 {
		for i := range intervals {
			idx := (i*7 + round) % intervals // out of order
			for w := range agents {
				for _, d := range []Dist{DistConnect, DistTTR} {
					h := NewHistogram()
					for v := range 5 + w {
						RecordLatency(h, time.Duration(1+idx*agents+w+v*round)*time.Millisecond)
					}
					ih := IntervalHistogram{Dist: d, Index: idx, Hdr: encoded(t, h)}
					if err := want.Add(ih); err != nil {
						t.Fatal(err)
					}
					if err := a.Add(Piece{Histograms: &HistogramSet{Interval: time.Second, List: []IntervalHistogram{ih}}}); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		ps, err := a.Pieces(0)
		if err != nil {
			t.Fatal(err)
		}
		var got []IntervalHistogram
		for _, p := range ps {
			if p.Histograms != nil {
				got = append(got, p.Histograms.List...)
			}
		}
		if !reflect.DeepEqual(got, want.List()) {
			t.Fatalf("round %d: the pieces' %d histograms differ from %d merged one at a time", round, len(got), want.Len())
		}
	}
	rep, err := a.Report(streamStart, agents, agents)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rep.Intervals.List(), want.List()) {
		t.Error("the report's intervals differ from those merged one at a time")
	}
}

// BenchmarkAssemblerAgents merges what 56 loadgen agents send in a second
// of a storm: each a piece with that second's connect and ttr histograms.
// Reported per piece.
func BenchmarkAssemblerAgents(b *testing.B) {
	const agents = 56
	pieces := make([][]IntervalHistogram, agents)
	for w := range agents {
		for _, d := range []Dist{DistConnect, DistTTR} {
			h := NewHistogram()
			for v := range 300 {
				RecordLatency(h, time.Duration(1+w*7919+v*104729%100000)*time.Microsecond)
			}
			enc, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
			if err != nil {
				b.Fatal(err)
			}
			pieces[w] = append(pieces[w], IntervalHistogram{Dist: d, Hdr: string(enc)})
		}
	}
	a := NewAssembler(time.Second)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		list := slices.Clone(pieces[i%agents])
		for j := range list {
			list[j].Index = i / agents
		}
		if err := a.Add(Piece{Histograms: &HistogramSet{Interval: time.Second, List: list}}); err != nil {
			b.Fatal(err)
		}
	}
}
