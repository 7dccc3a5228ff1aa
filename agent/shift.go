package agent

import (
	"time"

	"github.com/stampede-dev/stampede/results"
)

// MaxMessageBytes bounds one protocol message on any transport.
const MaxMessageBytes = results.MaxMessageBytes

// ShiftTimes adds d to every wall-clock instant m carries. An agent whose
// clock is d behind its coordinator's (an offset estimated over NATS)
// shifts what it sends by +d and what it receives by -d, so every instant
// on the wire is on the coordinator's clock, the run's time axis.
func ShiftTimes(m *Message, d time.Duration) {
	move := func(t *time.Time) {
		if !t.IsZero() {
			*t = t.Add(d)
		}
	}
	if m.Start != nil {
		s := *m.Start
		move(&s.At)
		m.Start = &s
	}
	if m.Progress != nil {
		p := *m.Progress
		move(&p.At)
		move(&p.Started)
		m.Progress = &p
	}
	if m.Event != nil {
		e := *m.Event
		move(&e.At)
		m.Event = &e
	}
	if m.Reply != nil && m.Reply.Restarted != nil {
		r := *m.Reply
		rs := *r.Restarted
		move(&rs.Listening)
		move(&rs.Ready)
		rs.Steps = append(rs.Steps[:0:0], rs.Steps...)
		for i := range rs.Steps {
			move(&rs.Steps[i].Stop)
			move(&rs.Steps[i].Listening)
			move(&rs.Steps[i].Ready)
		}
		r.Restarted = &rs
		m.Reply = &r
	}
}
