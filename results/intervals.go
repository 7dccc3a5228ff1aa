package results

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// DefaultInterval is the length of a histogram interval when none is set:
// the .hlog files hold one interval per second.
const DefaultInterval = time.Second

// MaxIntervalIndex is the largest interval index accepted (a day of 100 ms
// intervals), so a corrupt piece cannot make an hlog of millions of lines.
const MaxIntervalIndex = 864_000

// IntervalHistogram is one distribution's latencies of one interval of
// the run's time axis: those recorded at an offset from the run's start in
// [Index*L, (Index+1)*L), L being the Intervals' length.
type IntervalHistogram struct {
	// Dist is the distribution ("connect", "ttr", ... in JSON).
	Dist Dist `json:"dist"`
	// Index is the interval's number from the run's start.
	Index int `json:"i"`
	// Hdr is the histogram in HdrHistogram's V2 compressed encoding (base64
	// text, as in an .hlog line), in µs, 1 µs to 1 h at 3 significant
	// digits. A loadgen worker's zlib stream is of stored blocks
	// (NewDrainStream); any zlib reader decodes both.
	Hdr string `json:"hdr"`
}

type intervalKey struct {
	dist  Dist
	index int
}

// Intervals holds a run's latency histograms per interval, at most one per
// distribution and interval: what is added for an interval already held is
// merged into it, exactly. Each is kept encoded (a few hundred bytes to a
// few KiB), so memory grows with intervals, never with the clients or
// processes that recorded them. The zero value is not usable; see
// NewIntervals.
type Intervals struct {
	// Length is the length of every interval.
	Length time.Duration
	hists  map[intervalKey]string
	stored bool // merges encode with encodeStored (a worker's drains)
}

// NewIntervals returns an empty set of intervals of length (DefaultInterval
// if zero).
func NewIntervals(length time.Duration) *Intervals {
	if length <= 0 {
		length = DefaultInterval
	}
	return &Intervals{Length: length, hists: map[intervalKey]string{}}
}

// IntervalOf returns the index of the interval of length that holds offset
// at from the run's start; a negative offset lands in interval 0.
func IntervalOf(at, length time.Duration) int {
	if at <= 0 {
		return 0
	}
	return int(at / length)
}

// Add merges h into the set. It refuses (with an error, adding nothing) a
// histogram that does not decode, whose configuration is not stampede's
// (ErrHistogramConfig), or whose distribution or index is out of range.
func (iv *Intervals) Add(h IntervalHistogram) error {
	if h.Dist >= NumDists || h.Index < 0 || h.Index > MaxIntervalIndex {
		return fmt.Errorf("results: interval histogram %s #%d out of range", h.Dist, h.Index)
	}
	p, err := decodePacked(h.Hdr)
	if err != nil {
		return fmt.Errorf("%w (%s interval %d)", err, h.Dist, h.Index)
	}
	return iv.add(intervalKey{h.Dist, h.Index}, p, h.Hdr)
}

// add merges p (encoded as enc) into the histogram of k. p may be nil for
// an encoding known to be good (one of this process's own): it is then
// decoded only if k already holds a histogram.
func (iv *Intervals) add(k intervalKey, p *hdrhistogram.PackedHistogram, enc string) error {
	cur, ok := iv.hists[k]
	if !ok {
		iv.hists[k] = enc
		return nil
	}
	q, err := decodePacked(cur)
	if err != nil {
		return err
	}
	if err := mergePacked(k, q, p, enc); err != nil {
		return err
	}
	b, err := iv.encode(q)
	if err != nil {
		return err
	}
	iv.hists[k] = string(b)
	return nil
}

// mergePacked merges p (or enc decoded, when p is nil) into q, the
// histogram of k. p is only read.
func mergePacked(k intervalKey, q, p *hdrhistogram.PackedHistogram, enc string) error {
	if p == nil {
		var err error
		if p, err = decodePacked(enc); err != nil {
			return err
		}
	}
	if dropped := q.Merge(p); dropped > 0 {
		return fmt.Errorf("results: merging %s interval %d: %d values dropped", k.dist, k.index, dropped)
	}
	return nil
}

// encode encodes a merged histogram as iv holds them: in stored deflate
// blocks for a worker's drains (stored), compressed otherwise.
func (iv *Intervals) encode(p *hdrhistogram.PackedHistogram) ([]byte, error) {
	if iv.stored {
		return encodeStored(p)
	}
	return encodePacked(p)
}

// Merge merges every histogram of o into iv; both must have one length.
func (iv *Intervals) Merge(o *Intervals) error {
	if o == nil {
		return nil
	}
	if o.Length != iv.Length {
		return fmt.Errorf("results: merging intervals of %s and %s", iv.Length, o.Length)
	}
	for _, h := range o.List() {
		if err := iv.Add(h); err != nil {
			return err
		}
	}
	return nil
}

// Len returns the number of histograms held.
func (iv *Intervals) Len() int { return len(iv.hists) }

// List returns the histograms in distribution, then index, order.
func (iv *Intervals) List() []IntervalHistogram {
	l := make([]IntervalHistogram, 0, len(iv.hists))
	for k, h := range iv.hists {
		l = append(l, IntervalHistogram{Dist: k.dist, Index: k.index, Hdr: h})
	}
	slices.SortFunc(l, func(a, b IntervalHistogram) int {
		return cmp.Or(cmp.Compare(a.Dist, b.Dist), cmp.Compare(a.Index, b.Index))
	})
	return l
}

// End returns one past the highest interval index that holds a histogram
// of any distribution, 0 for none.
func (iv *Intervals) End() int {
	n := 0
	for k := range iv.hists {
		n = max(n, k.index+1)
	}
	return n
}

// Packed returns the histogram of d in interval i, nil when nothing was
// recorded there.
func (iv *Intervals) Packed(d Dist, i int) (*hdrhistogram.PackedHistogram, error) {
	s, ok := iv.hists[intervalKey{d, i}]
	if !ok {
		return nil, nil
	}
	return decodePacked(s)
}

// Total returns the merge of every interval of d: exactly what a
// histogram that recorded the same values directly holds.
func (iv *Intervals) Total(d Dist) (*hdrhistogram.Histogram, error) {
	h := NewHistogram()
	for k, s := range iv.hists {
		if k.dist != d {
			continue
		}
		p, err := decodePacked(s)
		if err != nil {
			return nil, err
		}
		if dropped := p.MergeInto(h); dropped > 0 {
			return nil, fmt.Errorf("results: %s interval %d: %d values dropped", d, k.index, dropped)
		}
	}
	return h, nil
}

// intervalsJSON is the JSON form of Intervals.
type intervalsJSON struct {
	Length     time.Duration       `json:"length_ns"`
	Histograms []IntervalHistogram `json:"histograms"`
}

// MarshalJSON writes {"length_ns": N, "histograms": [...]} in List order.
func (iv *Intervals) MarshalJSON() ([]byte, error) {
	return json.Marshal(intervalsJSON{iv.Length, iv.List()})
}

// UnmarshalJSON reads what MarshalJSON wrote, checking every histogram as
// Add does.
func (iv *Intervals) UnmarshalJSON(b []byte) error {
	var j intervalsJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	if j.Length <= 0 {
		return fmt.Errorf("results: intervals of length %s", j.Length)
	}
	n := NewIntervals(j.Length)
	for _, h := range j.Histograms {
		if err := n.Add(h); err != nil {
			return err
		}
	}
	*iv = *n
	return nil
}
