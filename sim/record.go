package sim

import (
	"time"

	"github.com/stampede-dev/stampede/connerr"
	"github.com/stampede-dev/stampede/results"
)

// recorder records the fleet as the loadgen's recorder does (the same
// results.Stream: timeline buckets, connect and TTR histograms per
// interval), counts the transitions per millisecond (results.Flow), and
// computes every event's recovery partial online, by the rules of
// results.RecoveryPartials, with 2 bits per client and event instead of
// the fleet's transitions.
type recorder struct {
	rep    *results.Report
	st     *results.Stream
	flow   results.Flow
	events []results.Event // sorted by Start
	downBy []int64
	end    int64
	ev     []eventRec
	active []int // events whose clients may still change phase
}

// eventRec is one event's recovery as it is being counted.
type eventRec struct {
	started bool
	phase   []uint64 // 2 bits per client: 0, phaseUp, phaseDown, phaseBack
	pending int      // clients in phaseDown
	part    results.RecoveryPartial
}

const (
	_         = iota // the zero phase: not up just before Start (or no longer counted)
	phaseUp          // up just before Start, not down yet
	phaseDown        // went down in the event, not back yet
	phaseBack        // back
)

func (e *eventRec) get(c uint32) uint64 { return e.phase[c/32] >> (2 * (c % 32)) & 3 }
func (e *eventRec) set(c uint32, p uint64) {
	w := &e.phase[c/32]
	*w = *w&^(3<<(2*(c%32))) | p<<(2*(c%32))
}

func newRecorder(cfg Config, events []results.Event) *recorder {
	rep := results.NewReport(cfg.Start, cfg.Clients)
	r := &recorder{rep: rep, st: results.NewStream(rep), events: events, end: int64(cfg.Duration)}
	r.downBy = make([]int64, len(events))
	for i := range events {
		r.setDownBy(i)
	}
	r.ev = make([]eventRec, len(events))
	return r
}

// setDownBy sets when event i stops counting downs as its own, as
// results.RecoveryPartials does: a down at or after it is not this
// event's. A restart whose exit waits for its closes calls it again
// once the model has seen it ready.
func (r *recorder) setDownBy(i int) {
	ev := r.events[i]
	next := time.Duration(r.end)
	for _, o := range r.events[i+1:] {
		if o.Start > ev.Start {
			next = o.Start
			break
		}
	}
	if !ev.NeverReady {
		ready := ev.Ready
		if ready == 0 {
			ready = ev.Start
		}
		next = max(next, ready)
	}
	r.downBy[i] = int64(min(next, time.Duration(r.end)))
}

func (r *recorder) attempt(at int64) { r.st.At(time.Duration(at)).Attempts++ }

// exhausted records a client whose policy ran out of attempts at offset at.
func (r *recorder) exhausted(at int64) { r.st.At(time.Duration(at)).Exhausted++ }

func (r *recorder) upgraded(start, at int64) {
	r.st.At(time.Duration(at)).Successes++
	r.st.Record(results.DistConnect, time.Duration(at), time.Duration(at-start))
}

// handshake counts a wss:// success at offset at by its TLS handshake.
func (r *recorder) handshake(at int64, resumed bool) {
	b := r.st.At(time.Duration(at))
	if resumed {
		b.TLSResumed++
	} else {
		b.TLSFull++
	}
}

func (r *recorder) failure(class connerr.Class, at int64) {
	r.st.At(time.Duration(at)).Failures[class]++
}

func (r *recorder) ended(class connerr.Class, at int64) {
	r.st.At(time.Duration(at)).Disconnects[class]++
}

// step returns the Flow count of the millisecond of at; transitions come
// in time order.
func (r *recorder) step(at int64) *results.FlowCount {
	ms := max(at, 0) / int64(results.FlowStep)
	if n := len(r.flow); n == 0 || r.flow[n-1].Step != ms {
		r.flow = append(r.flow, results.FlowCount{Step: ms})
	}
	return &r.flow[len(r.flow)-1]
}

// up records client id up at now.
func (r *recorder) up(id uint32, c *client, now int64) {
	f := r.step(now)
	f.Ups++
	if c.flags&flEver == 0 {
		f.Firsts++
	}
	c.flags |= flUp | flEver
	if c.downAt != 0 {
		r.st.Record(results.DistTTR, time.Duration(now), time.Duration(now-(c.downAt-1)))
		c.downAt = 0
	}
	r.transition(id, now, true)
}

// down records client id, up until now, down.
func (r *recorder) down(id uint32, c *client, now int64) {
	r.step(now).Downs++
	c.flags &^= flUp
	c.downAt = now + 1
	r.transition(id, now, false)
}

// snapshot starts event i: the clients up now (just before Start) are its
// ConnectedBefore.
func (r *recorder) snapshot(i int, clients []client) {
	e := &r.ev[i]
	e.started = true
	e.phase = make([]uint64, (len(clients)+31)/32)
	for id := range clients {
		if clients[id].flags&flUp != 0 {
			e.set(uint32(id), phaseUp)
			e.part.ConnectedBefore++
		}
	}
	r.active = append(r.active, i)
}

// transition moves client id through the phases of the active events.
func (r *recorder) transition(id uint32, now int64, up bool) {
	keep := r.active[:0]
	for _, i := range r.active {
		e := &r.ev[i]
		switch p := e.get(id); {
		case !up && p == phaseUp && now < r.downBy[i]:
			e.set(id, phaseDown)
			e.pending++
			e.part.Disconnected++
		case up && p == phaseDown:
			e.set(id, phaseBack)
			e.pending--
			if now < r.end {
				ms := now / int64(time.Millisecond)
				rs := &e.part.Returns
				if n := len(*rs); n > 0 && (*rs)[n-1].Ms == ms {
					(*rs)[n-1].N++
				} else {
					*rs = append(*rs, results.ReturnCount{Ms: ms, N: 1})
				}
			}
		}
		if now < r.downBy[i] || e.pending > 0 {
			keep = append(keep, i)
		} else {
			e.phase = nil // nothing of it changes any more
		}
	}
	r.active = keep
}

// finish closes the record: the Report, with its Flow and Stopped, and
// the partials in event order.
func (r *recorder) finish(s *sim) (*results.Report, []results.RecoveryPartial, error) {
	if err := r.st.Close(); err != nil {
		return nil, nil, err
	}
	r.rep.Flow = r.flow
	if r.rep.Flow == nil {
		r.rep.Flow = results.Flow{}
	}
	for cl, n := range s.stopped {
		if n == 0 {
			continue
		}
		if r.rep.Stopped == nil {
			r.rep.Stopped = map[string]results.Stopped{}
		}
		class := connerr.Class(cl)
		r.rep.Stopped[class.String()] = results.Stopped{Count: n, LastError: class.String() + " (simulated)"}
	}
	if s.exhausted > 0 {
		if r.rep.Stopped == nil {
			r.rep.Stopped = map[string]results.Stopped{}
		}
		r.rep.Stopped[results.AttemptsExhausted] = results.Stopped{Count: s.exhausted, LastError: results.AttemptsExhausted + " (simulated)"}
	}
	parts := make([]results.RecoveryPartial, len(r.ev))
	for i := range r.ev {
		parts[i] = r.ev[i].part
	}
	return r.rep, parts, nil
}
