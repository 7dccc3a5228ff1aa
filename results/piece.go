package results

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/stampede-dev/stampede/results/track"
)

// MaxMessageBytes is the largest message a worker may send the coordinator
// (docs/results.md "Streamed results").
const MaxMessageBytes = 1 << 20

// DefaultPieceBytes is the largest JSON encoding of a Piece when no other
// limit is given: MaxMessageBytes less 64 KiB for the message around it.
const DefaultPieceBytes = MaxMessageBytes - 64<<10

// Piece is one bounded part of a worker's results, streamed during the run:
// timeline buckets, per-interval histograms, or tallies. Everything in it is
// keyed on the run's time axis (bucket and interval indexes from the run's
// start) or is a sum, so the coordinator merges pieces in any order and a
// late piece is merged like any other. Exactly one field is set.
type Piece struct {
	// Buckets are timeline counters to add, bucket by bucket.
	Buckets *BucketRange `json:"buckets,omitempty"`
	// Histograms are per-interval histograms to merge.
	Histograms *HistogramSet `json:"histograms,omitempty"`
	// Tallies are run-wide counters to add.
	Tallies *Tallies `json:"tallies,omitempty"`
	// Track is a chunk of what the clients saw of the message protocol
	// (track.Record.Chunks), sent once the run is over; chunks merge with
	// track.Record.Merge.
	Track *track.Record `json:"track,omitempty"`
	// Flow is a run of the fleet's transition counts per millisecond
	// (FlowOf), sent once the run is over; runs merge with Flow.Merge.
	Flow Flow `json:"flow,omitempty"`
}

// BucketRange is a run of consecutive timeline buckets: what was counted in
// buckets First, First+1, ... since the last piece for them. A bucket may
// come in several pieces (counts recorded after it was first sent); they
// add up.
type BucketRange struct {
	// First is the index of Buckets[0] on the run's timeline (a Tick each).
	First int `json:"first"`
	// Buckets are the counts to add.
	Buckets []Bucket `json:"buckets"`
}

// HistogramSet is a list of interval histograms of one interval length.
type HistogramSet struct {
	// Interval is the length of the intervals, in ns; the coordinator
	// refuses a set whose length is not the run's.
	Interval time.Duration `json:"interval_ns"`
	// List holds the histograms; one interval and distribution may come
	// in several pieces, which merge.
	List []IntervalHistogram `json:"list"`
}

// Tallies are counters of the whole run, as differences since the last
// piece (Messages' fields wrap as uint64 if one went down, so the sum of a
// worker's tallies is always its final value).
type Tallies struct {
	// Messages are the message protocol's counters to add.
	Messages Messages `json:"messages"`
	// Stopped are the clients that gave up since the last piece, by class;
	// LastError is set in the first piece of a class.
	Stopped map[string]Stopped `json:"stopped,omitempty"`
	// Speaks is Report.Speaks, once it is known.
	Speaks string `json:"speaks,omitempty"`
}

// Size returns the length of p's JSON encoding.
func (p *Piece) Size() (int, error) {
	b, err := json.Marshal(p)
	return len(b), err
}

// sub returns m minus o field by field, wrapping as uint64 (a Messages sum
// of such differences is m again).
func (m Messages) sub(o Messages) Messages {
	return Messages{
		Sent:           m.Sent - o.Sent,
		Acked:          m.Acked - o.Acked,
		Retried:        m.Retried - o.Retried,
		DupSuppressed:  m.DupSuppressed - o.DupSuppressed,
		DupDelivered:   m.DupDelivered - o.DupDelivered,
		Lost:           m.Lost - o.Lost,
		Resumed:        m.Resumed - o.Resumed,
		ResumeGap:      m.ResumeGap - o.ResumeGap,
		Delivered:      m.Delivered - o.Delivered,
		Expected:       m.Expected - o.Expected,
		Received:       m.Received - o.Received,
		Unacked:        m.Unacked - o.Unacked,
		UnackedDropped: m.UnackedDropped - o.UnackedDropped,
		Skipped:        m.Skipped - o.Skipped,
		LossClients:    m.LossClients - o.LossClients,
		Unsynced:       m.Unsynced - o.Unsynced,
		SeqConflicts:   m.SeqConflicts - o.SeqConflicts,
		BadFrames:      m.BadFrames - o.BadFrames,
		Tracked:        m.Tracked,
	}
}

// addStopped adds the counts of o into *m, keeping the first LastError of
// each class.
func addStopped(m *map[string]Stopped, o map[string]Stopped) {
	for k, v := range o {
		if *m == nil {
			*m = map[string]Stopped{}
		}
		cur := (*m)[k]
		cur.Count += v.Count
		if cur.LastError == "" {
			cur.LastError = v.LastError
		}
		(*m)[k] = cur
	}
}

// span is a stretch of timeline buckets starting at bucket first; it grows
// at either end.
type span struct {
	first int
	b     Timeline
}

// at returns bucket i (an index on the run's timeline), growing the span.
func (s *span) at(i int) *Bucket {
	switch {
	case len(s.b) == 0:
		s.first = i
		s.b = append(s.b, Bucket{})
	case i < s.first:
		n := make(Timeline, len(s.b)+s.first-i, max(cap(s.b), len(s.b)+s.first-i))
		copy(n[s.first-i:], s.b)
		s.first, s.b = i, n
	case i >= s.first+len(s.b):
		s.b = append(s.b, make(Timeline, i+1-s.first-len(s.b))...)
	}
	return &s.b[i-s.first]
}

// add sums buckets starting at bucket first into the span.
func (s *span) add(first int, buckets []Bucket) {
	if len(buckets) == 0 {
		return
	}
	s.at(first)
	s.at(first + len(buckets) - 1)
	for i := range buckets {
		s.b[first-s.first+i].Add(&buckets[i])
	}
}

// take removes and returns the buckets before bucket end (the first
// index), leaving the rest.
func (s *span) take(end int) (int, Timeline) {
	n := min(max(end-s.first, 0), len(s.b))
	first, out := s.first, s.b[:n:n]
	if n == len(s.b) {
		s.b = nil
	} else {
		s.b = append(Timeline(nil), s.b[n:]...)
	}
	s.first += n
	return first, out
}

// trim drops the all-zero buckets at both ends of buckets (starting at
// first).
func trim(first int, buckets Timeline) (int, Timeline) {
	for len(buckets) > 0 && buckets[0] == (Bucket{}) {
		first, buckets = first+1, buckets[1:]
	}
	for len(buckets) > 0 && buckets[len(buckets)-1] == (Bucket{}) {
		buckets = buckets[:len(buckets)-1]
	}
	return first, buckets
}

// errPieceTooBig is returned when one bucket, histogram or set of tallies
// alone does not fit a piece of the limit.
func errPieceTooBig(what string, n, limit int) error {
	return fmt.Errorf("results: %s of %d bytes does not fit a piece of at most %d bytes", what, n, limit)
}
