package loadgen

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/stampede-dev/stampede/connerr"
	"github.com/stampede-dev/stampede/results"
)

// recorder is one reactor's record of the run: a results.Report and the
// results.Stream that records into it, and live counters that Fleet.Stats
// reads (atomics on the reactor's own cache lines).
//
// The reactor's goroutine (or a wss client's) records; Fleet.Drain takes
// what was recorded since its last call from another goroutine while the
// fleet runs. mu serialises the two: every method that writes rep or st
// holds it, and so does drain. It is uncontended but for the drain once a
// second.
type recorder struct {
	mu  sync.Mutex
	rep *results.Report
	st  *results.Stream
	cnt *counters
	trs transitions // the report's Transitions until close
	res transitions // the report's Resubscribed until close
}

// transitionChunk is how many transitions one chunk of a recorder's list
// holds (16 KiB).
const transitionChunk = 1024

// transitions is a list of transitions in chunks of transitionChunk: it
// grows without copying what it holds or leaving the old array behind as
// garbage, and never holds more than one chunk of spare room (an append
// grown slice holds up to as much again, a herd's worth).
type transitions struct {
	chunks [][]results.Transition
	n      int
}

func (t *transitions) add(tr results.Transition) {
	if t.n%transitionChunk == 0 {
		t.chunks = append(t.chunks, make([]results.Transition, 0, transitionChunk))
	}
	c := &t.chunks[len(t.chunks)-1]
	*c = append(*c, tr)
	t.n++
}

// appendTo appends the list to dst and empties it.
func (t *transitions) appendTo(dst []results.Transition) []results.Transition {
	for _, c := range t.chunks {
		dst = append(dst, c...)
	}
	*t = transitions{}
	return dst
}

// counters are a reactor's live totals.
type counters struct {
	_            [64]byte // keep neighbouring reactors' counters off this cache line
	connected    atomic.Int64
	inflight     atomic.Int64
	attempts     atomic.Uint64
	successes    atomic.Uint64
	msgSent      atomic.Uint64
	msgDelivered atomic.Uint64
	msgAcked     atomic.Uint64
	subscribed   atomic.Int64
	failures     [connerr.NumClasses]atomic.Uint64
	disconnects  [connerr.NumClasses]atomic.Uint64
	stopped      [connerr.NumClasses]atomic.Uint64
	_            [64]byte
}

// newRecorder returns a recorder of clients clients for a run that starts
// at start, with histogram intervals of interval (results.DefaultInterval
// if zero); streamed, its report keeps nothing that drains take
// (NewStreamed, results.NewDrainStream).
func newRecorder(start time.Time, clients int, interval time.Duration, streamed bool) *recorder {
	// Not results.NewReport: the stream has no use for its five dense
	// total histograms.
	rep := &results.Report{Start: start, Clients: clients, Processes: 1, Intervals: results.NewIntervals(interval)}
	st := results.NewStream
	if streamed {
		st = results.NewDrainStream
	}
	return &recorder{rep: rep, st: st(rep), cnt: &counters{}}
}

// drain moves into a what was recorded since the last drain and is
// complete before offset upTo (results.Stream.DrainInto).
func (r *recorder) drain(a *results.Assembler, upTo time.Duration) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.st.DrainInto(a, upTo)
}

// close ends recording: the report is complete afterwards, its
// Transitions included.
func (r *recorder) close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rep.Transitions = r.trs.appendTo(r.rep.Transitions)
	if r.res.n > 0 {
		r.rep.Resubscribed = r.res.appendTo(r.rep.Resubscribed)
	}
	return r.st.Close()
}

// tally changes the report's message counters with fn.
func (r *recorder) tally(fn func(m *results.Messages)) {
	r.mu.Lock()
	fn(&r.rep.Messages)
	r.mu.Unlock()
}

// attempt records an attempt started at offset at.
func (r *recorder) attempt(at int64) {
	r.mu.Lock()
	r.st.At(time.Duration(at)).Attempts++
	r.mu.Unlock()
	r.cnt.attempts.Add(1)
	r.cnt.inflight.Add(1)
}

// tlsHandshake records the TLS handshake of a wss:// success at offset
// at: full, or resumed.
func (r *recorder) tlsHandshake(at int64, resumed bool) {
	r.mu.Lock()
	b := r.st.At(time.Duration(at))
	if resumed {
		b.TLSResumed++
	} else {
		b.TLSFull++
	}
	r.mu.Unlock()
}

// upgraded records an attempt started at start that got its 101 at offset
// at: a success, with its connect latency.
func (r *recorder) upgraded(start, at int64) {
	r.mu.Lock()
	r.st.At(time.Duration(at)).Successes++
	r.st.Record(results.DistConnect, time.Duration(at), time.Duration(at-start))
	r.mu.Unlock()
	r.cnt.successes.Add(1)
	r.cnt.inflight.Add(-1)
	r.cnt.connected.Add(1)
}

// up records client id up at offset at: its Up transition and, when it
// had lost a connection at downAt (not noTime), its time to recover.
func (r *recorder) up(id uint32, at, downAt int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.trs.add(results.Transition{Client: id, At: time.Duration(at), Up: true})
	if downAt != noTime {
		r.st.Record(results.DistTTR, time.Duration(at), time.Duration(at-downAt))
	}
}

// failure records an attempt that failed at offset at.
func (r *recorder) failure(class connerr.Class, at int64) {
	r.mu.Lock()
	r.st.At(time.Duration(at)).Failures[class]++
	r.mu.Unlock()
	r.cnt.failures[class].Add(1)
	r.cnt.inflight.Add(-1)
}

// ended records an established connection (one that got its 101) ending
// at offset at, with class.
func (r *recorder) ended(class connerr.Class, at int64) {
	r.mu.Lock()
	r.st.At(time.Duration(at)).Disconnects[class]++
	r.mu.Unlock()
	r.cnt.disconnects[class].Add(1)
	r.cnt.connected.Add(-1)
}

// down records client id's Down transition at offset at; only a client
// recorded up goes down, so each client's transitions alternate.
func (r *recorder) down(id uint32, at int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.trs.add(results.Transition{Client: id, At: time.Duration(at)})
}

// stop records a client giving up at offset at after a failure of class,
// with its last error's text: under results.AttemptsExhausted when its
// policy ran out of attempts, else under the class.
func (r *recorder) stop(class connerr.Class, lastErr string, at int64, exhausted bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.rep.Stopped == nil {
		r.rep.Stopped = map[string]results.Stopped{}
	}
	key := class.String()
	if exhausted {
		key = results.AttemptsExhausted
		r.st.At(time.Duration(at)).Exhausted++
	}
	s := r.rep.Stopped[key]
	s.Count++
	if s.LastError == "" {
		s.LastError = lastErr
	}
	r.rep.Stopped[key] = s
	r.cnt.stopped[class].Add(1)
}

// sent records a message sent at offset at.
func (r *recorder) sent(at int64) {
	r.mu.Lock()
	r.st.At(time.Duration(at)).MsgSent++
	r.rep.Messages.Sent++
	r.mu.Unlock()
	r.cnt.msgSent.Add(1)
}

// delivered records a message delivered at offset at after a round trip of
// rtt from its actual send and fromDue from its scheduled send (both 0
// when not measured).
func (r *recorder) delivered(at int64, rtt, fromDue time.Duration) {
	r.mu.Lock()
	b := r.st.At(time.Duration(at))
	b.MsgDelivered++
	r.rep.Messages.Delivered++
	if rtt > 0 {
		r.st.Record(results.DistRTT, time.Duration(at), rtt)
		r.st.Record(results.DistRTTScheduled, time.Duration(at), max(fromDue, rtt))
		b.RecordRTT(rtt)
	}
	r.mu.Unlock()
	r.cnt.msgDelivered.Add(1)
}
