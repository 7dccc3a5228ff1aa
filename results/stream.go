package results

import (
	"fmt"
	"math"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// End is an offset past every other on the run's time axis: DrainInto(a,
// End) drains everything.
const End = time.Duration(math.MaxInt64)

// maxLive is how many intervals of one distribution a Stream keeps live
// (open for recording) at once: the current one and the one before, for
// values that arrive a little late. An older one is sealed when a newer
// one opens.
const maxLive = 2

// Stream records one share of a run (a reactor's) into its Report and keeps
// what was recorded since the last drain, so that results can be sent
// during the run in bounded pieces (docs/results.md "Streamed results"):
//
//	recorder ──At, Record──> Stream ──DrainInto(upTo)──> Assembler ──Pieces──> wire
//	                           │ (timeline at each drain, histograms as intervals seal)
//	                           └──────────────> Report (complete after Close)
//
// Timeline counts go to the Stream's own buckets (At) and reach the
// Report's Timeline when drained or at Close. Latencies (Record) go to a
// live histogram of their interval, and the Report's total histograms are
// made at Close as the merge of its intervals (exact); an interval is sealed, encoded, into the Report's Intervals and
// the next drain when a drain reaches its end, when two newer intervals of
// its distribution are live, or at Close. Live histograms are sparse
// (hdrhistogram.PackedHistogram), so a stream holds a few KiB per live
// interval rather than the 190 KB of a dense 1 µs..1 h histogram.
// Messages and Stopped are read from the Report at each drain and sent as
// differences.
//
// A Stream is not safe for concurrent use: its recorder serialises
// recording and draining (loadgen's recorder holds a mutex).
type Stream struct {
	rep    *Report
	length time.Duration
	tl     span // counts not drained yet
	live   []liveHist
	spare  []*hdrhistogram.PackedHistogram
	// pending holds sealed intervals not drained yet.
	pending     []IntervalHistogram
	sentMsgs    Messages
	sentStopped map[string]Stopped
	sentSpeaks  bool // Report.Speaks was drained
	closed      bool
	trackSent   bool
	drainOnly   bool // the report keeps no timeline, intervals or totals (NewDrainStream)
	err         error
}

// liveHist is one distribution's histogram of an interval still open.
type liveHist struct {
	key intervalKey
	h   *hdrhistogram.PackedHistogram
}

// decoded is an interval histogram with its decoding.
type decoded struct {
	IntervalHistogram
	p *hdrhistogram.PackedHistogram
}

// NewStream returns a stream recording into rep, an empty report whose
// Intervals (created with DefaultInterval if nil) give the interval
// length. rep's histograms are nil until Close makes them.
func NewStream(rep *Report) *Stream {
	if rep.Intervals == nil {
		rep.Intervals = NewIntervals(DefaultInterval)
	}
	// The totals are made at Close, as the merge of the intervals: five
	// dense histograms (about 190 KB each) per recorder would be most of
	// an idle loadgen's memory.
	for d := range NumDists {
		*rep.Hist(d) = nil
	}
	return &Stream{rep: rep, length: rep.Intervals.Length}
}

// NewDrainStream is NewStream for a process that sends everything it
// records through DrainInto (a loadgen worker): the report keeps no copy
// of what is drained. Its Timeline stays empty, its Intervals hold
// nothing, and Close makes no total histograms (they stay nil); its
// Messages, Stopped and Track are kept as with NewStream, and the drains
// give the same figures as there. A worker then holds neither a
// second timeline nor the run's encoded intervals, and does not build
// dense totals when the run ends. Its interval histograms are encoded
// with stored deflate blocks (encodeStored), and so are the merges of the
// assemblers it drains into: the process holds no compressor.
func NewDrainStream(rep *Report) *Stream {
	s := NewStream(rep)
	s.drainOnly = true
	return s
}

// Report returns the report the stream records into. Its Timeline and
// Intervals are complete only after Close.
func (s *Stream) Report() *Report { return s.rep }

// At returns the timeline bucket of offset at from the run's start, for
// the caller to count in; a negative offset lands in bucket 0.
func (s *Stream) At(at time.Duration) *Bucket {
	i := 0
	if at > 0 {
		i = int(at / Tick)
	}
	return s.tl.at(i)
}

// Record records latency v of distribution d, which completed at offset at
// from the run's start, into the report's total histogram and the
// interval of at; v is clamped to the histograms' range as RecordLatency
// clamps it.
func (s *Stream) Record(d Dist, at, v time.Duration) {
	_ = s.liveFor(d, IntervalOf(at, s.length)).RecordValue(latencyMicros(v)) // in range: cannot fail
}

// liveFor returns the live histogram of d in interval i, opening it (and
// sealing the oldest of d if maxLive are open).
func (s *Stream) liveFor(d Dist, i int) *hdrhistogram.PackedHistogram {
	k := intervalKey{d, i}
	oldest, n := -1, 0
	for j := range s.live {
		l := &s.live[j]
		if l.key == k {
			return l.h
		}
		if l.key.dist == d {
			n++
			if oldest < 0 || l.key.index < s.live[oldest].key.index {
				oldest = j
			}
		}
	}
	if n >= maxLive {
		s.seal(oldest)
	}
	var h *hdrhistogram.PackedHistogram
	if n := len(s.spare); n > 0 {
		h, s.spare = s.spare[n-1], s.spare[:n-1]
	} else {
		h = newPacked()
	}
	s.live = append(s.live, liveHist{k, h})
	return h
}

// seal encodes live histogram j into the report's intervals and the next
// drain, and closes it.
func (s *Stream) seal(j int) {
	l := s.live[j]
	s.live = append(s.live[:j], s.live[j+1:]...)
	encode := encodePacked
	if s.drainOnly {
		encode = encodeStored
	}
	b, err := encode(l.h)
	if err == nil {
		ih := IntervalHistogram{Dist: l.key.dist, Index: l.key.index, Hdr: string(b)}
		s.pending = append(s.pending, ih)
		if !s.drainOnly {
			err = s.rep.Intervals.add(l.key, l.h, ih.Hdr)
		}
	}
	if err != nil && s.err == nil {
		s.err = fmt.Errorf("results: sealing %s interval %d: %w", l.key.dist, l.key.index, err)
	}
	l.h.Reset()
	s.spare = append(s.spare, l.h)
}

// sealBefore seals every live interval with an index below end.
func (s *Stream) sealBefore(end int) {
	for j := 0; j < len(s.live); {
		if s.live[j].key.index < end {
			s.seal(j)
			continue
		}
		j++
	}
}

// fold adds drained buckets (starting at bucket first) into the report's
// timeline, leaving out all-zero ends so its length is what counting
// straight into it would have given.
func (s *Stream) fold(first int, tl Timeline) {
	if s.drainOnly {
		return
	}
	first, tl = trim(first, tl)
	for i := range tl {
		s.rep.Timeline.At(time.Duration(first+i) * Tick).Add(&tl[i])
	}
}

// DrainInto moves into a everything recorded since the last drain that is
// complete before offset upTo: timeline buckets ending by upTo, histogram
// intervals ending by upTo (and any sealed earlier), and the differences of
// the report's Messages and Stopped; after Close, the report's Track
// once. What was recorded late into a bucket
// or interval already drained comes with the next drain, to be merged
// where it belongs. After Close, DrainInto(a, End) gives all the rest. It
// returns the first error sealing met (none is expected: the stream makes
// every histogram itself).
func (s *Stream) DrainInto(a *Assembler, upTo time.Duration) error {
	if a.interval != s.length {
		return fmt.Errorf("results: draining %s intervals into an assembler of %s", s.length, a.interval)
	}
	if !s.closed {
		s.sealBefore(IntervalOf(upTo, s.length))
	}
	if s.drainOnly {
		a.hists.stored = true // merging another stream's intervals needs no compressor either
	}
	for _, ih := range s.pending { // the stream's own encodings: decoded only to merge
		if err := a.mergeHist(intervalKey{ih.Dist, ih.Index}, nil, ih.Hdr); err != nil {
			return err
		}
	}
	clear(s.pending)
	s.pending = s.pending[:0]
	end := 0
	if upTo > 0 {
		end = int(upTo / Tick)
	}
	first, tl := s.tl.take(end)
	if !s.closed {
		s.fold(first, tl)
	}
	a.tl.add(first, tl)
	a.msgs.Add(s.rep.Messages.sub(s.sentMsgs))
	s.sentMsgs = s.rep.Messages
	for k, v := range s.rep.Stopped {
		sent := s.sentStopped[k]
		if v == sent {
			continue
		}
		d := Stopped{Count: v.Count - sent.Count}
		if sent.LastError == "" {
			d.LastError = v.LastError
		}
		addStopped(&a.stopped, map[string]Stopped{k: d})
		if s.sentStopped == nil {
			s.sentStopped = map[string]Stopped{}
		}
		s.sentStopped[k] = v
	}
	if s.rep.Speaks != "" && !s.sentSpeaks {
		a.speaks, s.sentSpeaks = s.rep.Speaks, true
	}
	// The track record is complete only once the run is over.
	if s.closed && !s.trackSent && s.rep.Track != nil {
		a.addTrack(s.rep.Track)
		s.trackSent = true
	}
	return s.err
}

// Drain returns what DrainInto(upTo) moves, as pieces of at most
// DefaultPieceBytes.
func (s *Stream) Drain(upTo time.Duration) ([]Piece, error) {
	a := NewAssembler(s.length)
	if err := s.DrainInto(a, upTo); err != nil {
		return nil, err
	}
	return a.Pieces(0)
}

// Close ends recording: every live interval is sealed and every count
// folded into the report, which is then complete (for NewDrainStream's,
// only sealed: its report keeps none of it). Recording after Close is a
// bug. Drains may follow, to send what was not sent.
func (s *Stream) Close() error {
	if s.closed {
		return s.err
	}
	s.sealBefore(math.MaxInt)
	s.fold(s.tl.first, s.tl.b)
	s.closed = true
	if s.drainOnly {
		return s.err
	}
	for d := range NumDists {
		h, err := s.rep.Intervals.Total(d)
		if err != nil && s.err == nil {
			s.err = err
		}
		*s.rep.Hist(d) = h
	}
	return s.err
}
