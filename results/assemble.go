package results

import (
	"encoding/json"
	"fmt"
	"maps"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/stampede-dev/stampede/results/track"
)

// maxBucketIndex is the largest timeline bucket index a piece may carry (a
// day of 100 ms buckets), so a corrupt piece cannot allocate without bound.
const maxBucketIndex = 864_000

// Assembler merges Pieces, from any number of workers and in any order,
// into one run's results: the timeline, the per-interval histograms (kept
// encoded, merged per interval; the few merged into last are kept decoded
// until read) and the tallies. What it holds grows with buckets and
// intervals, not with clients or workers. Workers use one too,
// to gather a drain of several streams before cutting it into pieces.
//
//	worker:      Stream ─DrainInto─> Assembler ─Pieces─> []Piece ─(wire)─┐
//	coordinator:                     Assembler <──────Add────────────────┘ ─Report─> Report
//
// An Assembler is not safe for concurrent use.
type Assembler struct {
	interval time.Duration
	tl       span
	hists    *Intervals
	// hot holds the intervals merged into most recently, decoded: every
	// loadgen's piece of a second merges into that second's histograms, so
	// a coordinator of many agents would otherwise decode and encode each
	// of them once per agent. An entry supersedes hists' until flushHot.
	hot     map[intervalKey]*hdrhistogram.PackedHistogram
	msgs    Messages
	stopped map[string]Stopped
	speaks  string // Report.Speaks
	track   *track.Record
	flow    flowSteps
}

// NewAssembler returns an empty assembler for histogram intervals of the
// given length (DefaultInterval if zero).
func NewAssembler(interval time.Duration) *Assembler {
	iv := NewIntervals(interval)
	return &Assembler{interval: iv.Length, hists: iv}
}

// Interval returns the length of the assembler's histogram intervals.
func (a *Assembler) Interval() time.Duration { return a.interval }

// Add merges a piece. A piece that is out of range, whose histograms do not
// decode, are of another configuration (ErrHistogramConfig) or another
// interval length is refused whole: nothing of it is merged.
func (a *Assembler) Add(p Piece) error {
	d, err := a.Decode(p)
	if err != nil {
		return err
	}
	return a.AddDecoded(d)
}

// Decoded is a piece checked and its histograms decoded by Decode, ready
// for AddDecoded. It is read-only: one may be added to several assemblers
// of the same interval.
type Decoded struct {
	p  Piece
	hs []decoded
}

// Decode checks a piece and decodes its histograms: the costly half of Add.
// It reads nothing the assembler changes, so unlike the other methods it
// may run concurrently with them: a coordinator decodes each agent's pieces
// in parallel and merges them one at a time.
func (a *Assembler) Decode(p Piece) (Decoded, error) {
	if b := p.Buckets; b != nil {
		if b.First < 0 || b.First+len(b.Buckets) > maxBucketIndex+1 {
			return Decoded{}, fmt.Errorf("results: piece of buckets %d..%d out of range", b.First, b.First+len(b.Buckets))
		}
	}
	var hs []decoded
	if h := p.Histograms; h != nil {
		if h.Interval != a.interval {
			return Decoded{}, fmt.Errorf("results: piece of %s histogram intervals, the run's are %s", h.Interval, a.interval)
		}
		hs = make([]decoded, 0, len(h.List))
		for _, ih := range h.List {
			if ih.Dist >= NumDists || ih.Index < 0 || ih.Index > MaxIntervalIndex {
				return Decoded{}, fmt.Errorf("results: interval histogram %s #%d out of range", ih.Dist, ih.Index)
			}
			d, err := decodePacked(ih.Hdr)
			if err != nil {
				return Decoded{}, fmt.Errorf("%w (%s interval %d)", err, ih.Dist, ih.Index)
			}
			hs = append(hs, decoded{ih, d})
		}
	}
	if p.Track != nil {
		if err := p.Track.Validate(); err != nil {
			return Decoded{}, err
		}
	}
	return Decoded{p: p, hs: hs}, nil
}

// AddDecoded merges a piece Decode checked and decoded, as Add does.
func (a *Assembler) AddDecoded(d Decoded) error {
	p := d.p
	if b := p.Buckets; b != nil {
		a.tl.add(b.First, b.Buckets)
	}
	for _, h := range d.hs {
		if err := a.mergeHist(intervalKey{h.Dist, h.Index}, h.p, h.Hdr); err != nil {
			return err
		}
	}
	if t := p.Tallies; t != nil {
		a.msgs.Add(t.Messages)
		addStopped(&a.stopped, t.Stopped)
		if a.speaks == "" {
			a.speaks = t.Speaks
		}
	}
	a.addTrack(p.Track)
	if len(p.Flow) > 0 {
		if err := a.flow.add(p.Flow); err != nil {
			return err
		}
	}
	return nil
}

// maxHot bounds Assembler.hot: the intervals a fleet's pieces reach at once
// (the current one, a late one) of every distribution, with room to spare.
const maxHot = 4 * int(NumDists)

// mergeHist merges p (encoded as enc; p may be nil for an encoding known
// to be good) into the histogram of k. A first histogram of k is kept as
// it came, encoded; the second decodes it into hot, where later ones merge
// without encoding. p is only read: one decoded piece may go to several
// assemblers.
func (a *Assembler) mergeHist(k intervalKey, p *hdrhistogram.PackedHistogram, enc string) error {
	q := a.hot[k]
	if q == nil {
		cur, ok := a.hists.hists[k]
		if !ok {
			a.hists.hists[k] = enc
			return nil
		}
		var err error
		if q, err = decodePacked(cur); err != nil {
			return err
		}
		if a.hot == nil {
			a.hot = map[intervalKey]*hdrhistogram.PackedHistogram{}
		}
		if len(a.hot) >= maxHot {
			if err := a.coolOldest(); err != nil {
				return err
			}
		}
		a.hot[k] = q
	}
	return mergePacked(k, q, p, enc)
}

// coolOldest encodes the hot histogram of the earliest interval back into
// hists.
func (a *Assembler) coolOldest() error {
	var oldest intervalKey
	first := true
	for k := range a.hot {
		if first || k.index < oldest.index || k.index == oldest.index && k.dist < oldest.dist {
			oldest, first = k, false
		}
	}
	return a.cool(oldest)
}

// cool encodes the hot histogram of k into hists, as hists encodes its
// merges.
func (a *Assembler) cool(k intervalKey) error {
	b, err := a.hists.encode(a.hot[k])
	if err != nil {
		return err
	}
	a.hists.hists[k] = string(b)
	delete(a.hot, k)
	return nil
}

// flushHot encodes every hot histogram into hists, before anything reads
// them.
func (a *Assembler) flushHot() error {
	for k := range a.hot {
		if err := a.cool(k); err != nil {
			return err
		}
	}
	return nil
}

// addTrack merges a track record (or chunk) into the assembler's.
func (a *Assembler) addTrack(t *track.Record) {
	if t == nil {
		return
	}
	if a.track == nil {
		a.track = &track.Record{}
	}
	a.track.Merge(t)
}

// Pieces cuts everything the assembler holds into pieces whose JSON
// encoding is at most limit bytes (DefaultPieceBytes if limit <= 0):
// bucket ranges, histogram sets and one piece of tallies, in that order.
// All-zero buckets at either end of the timeline are left out.
func (a *Assembler) Pieces(limit int) ([]Piece, error) {
	if limit <= 0 {
		limit = DefaultPieceBytes
	}
	var out []Piece
	first, tl := trim(a.tl.first, a.tl.b)
	shell := func(p Piece) (int, error) { return p.Size() }
	if len(tl) > 0 {
		// The shell with the largest First of any piece bounds every
		// piece's overhead.
		over, err := shell(Piece{Buckets: &BucketRange{First: first + len(tl), Buckets: []Bucket{}}})
		if err != nil {
			return nil, err
		}
		err = pack(len(tl), over, limit, "a timeline bucket",
			func(i int) any { return &tl[i] },
			func(i, j int) { out = append(out, Piece{Buckets: &BucketRange{First: first + i, Buckets: tl[i:j:j]}}) })
		if err != nil {
			return nil, err
		}
	}
	if err := a.flushHot(); err != nil {
		return nil, err
	}
	if list := a.hists.List(); len(list) > 0 {
		over, err := shell(Piece{Histograms: &HistogramSet{Interval: a.interval, List: []IntervalHistogram{}}})
		if err != nil {
			return nil, err
		}
		err = pack(len(list), over, limit, "a histogram",
			func(i int) any { return &list[i] },
			func(i, j int) {
				out = append(out, Piece{Histograms: &HistogramSet{Interval: a.interval, List: list[i:j:j]}})
			})
		if err != nil {
			return nil, err
		}
	}
	if a.msgs != (Messages{}) || len(a.stopped) > 0 || a.speaks != "" {
		out = append(out, Piece{Tallies: &Tallies{Messages: a.msgs, Stopped: maps.Clone(a.stopped), Speaks: a.speaks}})
	}
	if a.track != nil {
		over, err := shell(Piece{Track: &track.Record{}})
		if err != nil {
			return nil, err
		}
		chunks, err := a.track.Chunks(limit - over)
		if err != nil {
			return nil, err
		}
		for _, c := range chunks {
			out = append(out, Piece{Track: c})
		}
	}
	out, err := a.flow.Flow().appendPieces(out, limit)
	if err != nil {
		return nil, err
	}
	return out, checkPieces(out, limit)
}

// Pieces cuts f, a flow in step order (FlowOf's), into pieces whose JSON
// encoding is at most limit bytes (DefaultPieceBytes if limit <= 0), as
// an Assembler holding f alone would, without the Assembler's array of
// one cell per millisecond of the run: what a loadgen worker sends of its
// transitions when its run ends.
func (f Flow) Pieces(limit int) ([]Piece, error) {
	if limit <= 0 {
		limit = DefaultPieceBytes
	}
	out, err := f.appendPieces(nil, limit)
	if err != nil {
		return nil, err
	}
	return out, checkPieces(out, limit)
}

func (f Flow) appendPieces(out []Piece, limit int) ([]Piece, error) {
	if len(f) == 0 {
		return out, nil
	}
	// Not a Piece with an empty Flow: omitempty would leave the field,
	// and its bytes, out of the shell.
	b, err := json.Marshal(map[string]Flow{"flow": {}})
	if err != nil {
		return nil, err
	}
	err = pack(len(f), len(b), limit, "a flow step",
		func(i int) any { return &f[i] },
		func(i, j int) { out = append(out, Piece{Flow: f[i:j:j]}) })
	return out, err
}

// checkPieces checks that every piece's encoding fits limit: the bound is
// a promise.
func checkPieces(out []Piece, limit int) error {
	for i := range out {
		n, err := out[i].Size()
		if err != nil {
			return err
		}
		if n > limit {
			return errPieceTooBig("a piece", n, limit)
		}
	}
	return nil
}

// pack cuts n items into consecutive runs whose JSON array, inside a shell
// of over bytes, fits limit, calling emit for each run [i, j).
func pack(n, over, limit int, what string, item func(int) any, emit func(i, j int)) error {
	start, size := 0, over
	for i := 0; i < n; i++ {
		b, err := json.Marshal(item(i))
		if err != nil {
			return err
		}
		k := len(b) + 1 // and its comma
		if over+k > limit {
			return errPieceTooBig(what, len(b), limit)
		}
		if size+k > limit {
			emit(start, i)
			start, size = i, over
		}
		size += k
	}
	emit(start, n)
	return nil
}

// Report returns what was assembled as a Report of the run that started
// at start: the timeline from bucket 0, the per-interval histograms, each
// distribution's total as the merge of its intervals (exact, as
// Intervals.Total), and the tallies. Clients and processes are the
// caller's to say.
func (a *Assembler) Report(start time.Time, clients, processes int) (*Report, error) {
	r := NewReport(start, clients)
	r.Processes = processes
	if first, tl := trim(a.tl.first, a.tl.b); len(tl) > 0 {
		r.Timeline = make(Timeline, first+len(tl))
		copy(r.Timeline[first:], tl)
	}
	if err := a.flushHot(); err != nil {
		return nil, err
	}
	r.Intervals = NewIntervals(a.interval)
	maps.Copy(r.Intervals.hists, a.hists.hists)
	for d := range NumDists {
		h, err := a.hists.Total(d)
		if err != nil {
			return nil, err
		}
		*r.Hist(d) = h
	}
	r.Messages = a.msgs
	r.Stopped = maps.Clone(a.stopped)
	r.Speaks = a.speaks
	r.Track = a.track
	r.Flow = a.flow.Flow()
	return r, nil
}

// Timeline returns a copy of the timeline merged so far, from bucket 0 to
// the last bucket any piece reached: what a live view draws while the run
// goes. Buckets drained out by Pieces are not in it.
func (a *Assembler) Timeline() Timeline {
	s := &a.tl
	if len(s.b) == 0 {
		return nil
	}
	out := make(Timeline, s.first+len(s.b))
	copy(out[s.first:], s.b)
	return out
}
