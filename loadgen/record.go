package loadgen

import (
	"sync/atomic"
	"time"

	"github.com/stampede-dev/stampede/connerr"
	"github.com/stampede-dev/stampede/results"
)

// recorder is one reactor's record of the run: a results.Report only its
// goroutine writes (merged after the run, so no locks) and live counters
// that Fleet.Stats reads (atomics on the reactor's own cache lines).
type recorder struct {
	rep *results.Report
	cnt *counters
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
	failures     [connerr.NumClasses]atomic.Uint64
	disconnects  [connerr.NumClasses]atomic.Uint64
	stopped      [connerr.NumClasses]atomic.Uint64
	_            [64]byte
}

func newRecorder(start time.Time, clients int) *recorder {
	return &recorder{rep: results.NewReport(start, clients), cnt: &counters{}}
}

// attempt records an attempt started at offset at.
func (r *recorder) attempt(at int64) {
	r.rep.Timeline.At(time.Duration(at)).Attempts++
	r.cnt.attempts.Add(1)
	r.cnt.inflight.Add(1)
}

// success records client id connected at offset at, its attempt having
// started at start, and up at once (upgraded, then up); downAt is when it
// last lost its connection (noTime if this is its first).
func (r *recorder) success(id uint32, start, at, downAt int64) {
	r.upgraded(start, at)
	r.up(id, at, downAt)
}

// upgraded records an attempt started at start that got its 101 at offset
// at: a success, with its connect latency.
func (r *recorder) upgraded(start, at int64) {
	r.rep.Timeline.At(time.Duration(at)).Successes++
	results.RecordLatency(r.rep.Connect, time.Duration(at-start))
	r.cnt.successes.Add(1)
	r.cnt.inflight.Add(-1)
	r.cnt.connected.Add(1)
}

// up records client id up at offset at: its Up transition and, when it
// had lost a connection at downAt (not noTime), its time to recover.
func (r *recorder) up(id uint32, at, downAt int64) {
	r.rep.Transitions = append(r.rep.Transitions, results.Transition{Client: id, At: time.Duration(at), Up: true})
	if downAt != noTime {
		results.RecordLatency(r.rep.TTR, time.Duration(at-downAt))
	}
}

// failure records an attempt that failed at offset at.
func (r *recorder) failure(class connerr.Class, at int64) {
	r.rep.Timeline.At(time.Duration(at)).Failures[class]++
	r.cnt.failures[class].Add(1)
	r.cnt.inflight.Add(-1)
}

// disconnect records client id's established connection ending at offset
// at, with class, the client having been up (ended, then down).
func (r *recorder) disconnect(id uint32, class connerr.Class, at int64) {
	r.ended(class, at)
	r.down(id, at)
}

// ended records an established connection (one that got its 101) ending
// at offset at, with class.
func (r *recorder) ended(class connerr.Class, at int64) {
	r.rep.Timeline.At(time.Duration(at)).Disconnects[class]++
	r.cnt.disconnects[class].Add(1)
	r.cnt.connected.Add(-1)
}

// down records client id's Down transition at offset at; only a client
// recorded up goes down, so each client's transitions alternate.
func (r *recorder) down(id uint32, at int64) {
	r.rep.Transitions = append(r.rep.Transitions, results.Transition{Client: id, At: time.Duration(at)})
}

// stop records a client giving up after a failure of class, with its last
// error's text.
func (r *recorder) stop(class connerr.Class, lastErr string) {
	if r.rep.Stopped == nil {
		r.rep.Stopped = map[string]results.Stopped{}
	}
	s := r.rep.Stopped[class.String()]
	s.Count++
	if s.LastError == "" {
		s.LastError = lastErr
	}
	r.rep.Stopped[class.String()] = s
	r.cnt.stopped[class].Add(1)
}

// sent records a message sent at offset at.
func (r *recorder) sent(at int64) {
	r.rep.Timeline.At(time.Duration(at)).MsgSent++
	r.rep.Messages.Sent++
	r.cnt.msgSent.Add(1)
}

// delivered records a message delivered at offset at after a round trip of
// rtt from its actual send and fromDue from its scheduled send (both 0
// when not measured).
func (r *recorder) delivered(at int64, rtt, fromDue time.Duration) {
	r.rep.Timeline.At(time.Duration(at)).MsgDelivered++
	r.rep.Messages.Delivered++
	if rtt > 0 {
		results.RecordLatency(r.rep.RTT, rtt)
		results.RecordLatency(r.rep.RTTScheduled, max(fromDue, rtt))
		r.rep.Timeline.At(time.Duration(at)).RecordRTT(rtt)
	}
	r.cnt.msgDelivered.Add(1)
}
