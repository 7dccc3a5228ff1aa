package summary

import (
	"math"
	"time"

	"github.com/stampede-dev/stampede/results"
)

// CPUPoint is one sample of a role's CPU time: a row of resources.csv
// (t_s, cpu_s).
type CPUPoint struct {
	// At is when the sample was taken, from the run's start.
	At time.Duration
	// CPUSeconds is the role's user+system CPU time so far (cumulative,
	// as ResourceStats.CPUSeconds).
	CPUSeconds float64
}

// CPUSampleSlack is how far from an instant the nearest CPU sample may
// lie for the CPU at that instant to count as sampled: the resource
// sampler takes one a second (hoststat), so a sampler that kept time has
// one within half a second of any instant of the run.
const CPUSampleSlack = time.Second

// cpuAt returns the CPU seconds of the sample of pts nearest t (the
// earlier of two as near), and false when none lies within
// CPUSampleSlack of t. pts are in time order.
func cpuAt(pts []CPUPoint, t time.Duration) (float64, bool) {
	best := -1
	var bestD time.Duration
	for i, p := range pts {
		d := p.At - t
		if d < 0 {
			d = -d
		}
		if best < 0 || d < bestD {
			best, bestD = i, d
		}
	}
	if best < 0 || bestD > CPUSampleSlack {
		return 0, false
	}
	return pts[best].CPUSeconds, true
}

// cpuAfter returns the CPU seconds of the first sample of pts at or after
// t, and false when none lies within CPUSampleSlack after it: a span that
// ends there holds all of its work and at most a second more.
func cpuAfter(pts []CPUPoint, t time.Duration) (float64, bool) {
	for _, p := range pts {
		if p.At >= t {
			return p.CPUSeconds, p.At-t <= CPUSampleSlack
		}
	}
	return 0, false
}

// CPUSpans are the two spans of a run that the CPU per connect and per
// reconnect divide (docs/metrics.md "CPU per connect and per reconnect").
type CPUSpans struct {
	// ConnectEnd ends the connect span, which starts at the run's start:
	// the end of the ramp, the flow step of the last first connect before
	// the first event (of the run without one). The idle fleet after it,
	// whose keepalive pings are no connect's, is left out.
	ConnectEnd time.Duration
	// FirstConnects is how many clients connected for the first time in
	// the connect span.
	FirstConnects int
	// HasEvent says the run had an event: the reconnect span exists.
	HasEvent bool
	// ReconnectStart and ReconnectEnd bound the reconnect span: the first
	// event's start, and the instant 99 % of its clients were up again
	// (Ready + R99) when that comes before the end of its herd window, or
	// else that end (the run's end when it has none). A last 1 % slow to
	// come back leaves out a tail whose CPU is mostly the returned
	// fleet's keepalive: at a million, 140 s of it once cost the target
	// more than its reconnects.
	ReconnectStart, ReconnectEnd time.Duration
	// Reconnects is how many clients came back in the reconnect span:
	// the first event's Recovered minus NeverDown, or, when the span ends
	// at its R99, 99 % of its ConnectedBefore (rounded up) minus
	// NeverDown.
	Reconnects int
	// Attempts is how many attempts the fleet started in the reconnect
	// span (the timeline's buckets that start in it), wasted ones
	// included.
	Attempts int
	// CloseEnd ends the close span, which starts at ReconnectStart: the
	// first event's ready (the server back), 0 when it has none.
	CloseEnd time.Duration
	// Closes is how many established connections ended in the close
	// span (the timeline's disconnects).
	Closes int
}

// cpuSpans finds the spans of a run whose events are in Start order and
// whose first event's recovery is recs[0].
func cpuSpans(flow results.Flow, tl results.Timeline, events []results.Event, recs []Recovery, end time.Duration) CPUSpans {
	var sp CPUSpans
	rampBy := end // the ramp's first connects come before it
	if len(events) > 0 {
		rampBy = events[0].Start
		sp.HasEvent = true
		sp.ReconnectStart, sp.ReconnectEnd = events[0].Start, end
		if len(recs) > 0 {
			r := recs[0]
			if w := r.WindowEndS; w != nil {
				sp.ReconnectEnd = min(end, time.Duration(math.Round(*w*1e9)))
			}
			sp.Reconnects = r.Recovered - r.NeverDown
			if ready, ok := events[0].ReadyAt(); ok && r.R99S != nil && *r.R99S > 0 {
				if at := ready + time.Duration(math.Round(*r.R99S*1e9)); at < sp.ReconnectEnd {
					sp.ReconnectEnd = at
					sp.Reconnects = results.ClientsFor(99, r.ConnectedBefore) - r.NeverDown
				}
			}
		}
	}
	for _, c := range flow {
		if at := time.Duration(c.Step) * results.FlowStep; at < rampBy && c.Firsts > 0 {
			sp.FirstConnects += int(c.Firsts)
			sp.ConnectEnd = max(sp.ConnectEnd, at+results.FlowStep)
		}
	}
	if sp.HasEvent {
		if ready, ok := events[0].ReadyAt(); ok {
			sp.CloseEnd = ready
		}
		for b := range tl {
			at := time.Duration(b) * results.Tick
			if at >= sp.ReconnectStart && at < sp.ReconnectEnd {
				sp.Attempts += int(tl[b].Attempts)
			}
			if at >= sp.ReconnectStart && at < sp.CloseEnd {
				sp.Closes += int(tl[b].DisconnectCount())
			}
		}
	}
	return sp
}

// PerConnect returns a role's CPU microseconds per first connect and per
// reconnect over sp, from its CPU samples pts (in time order), each taken
// at the sample nearest each end of its span (cpuAt), the ramp's end at
// the first sample after it (cpuAfter): nil when the divisor is 0 or
// either end was not sampled.
func (sp CPUSpans) PerConnect(pts []CPUPoint) (perConnect, perReconnect *float64) {
	perConnect = cpuPer(pts, 0, sp.ConnectEnd, cpuAfter, sp.FirstConnects)
	if sp.HasEvent {
		perReconnect = cpuPer(pts, sp.ReconnectStart, sp.ReconnectEnd, cpuAt, sp.Reconnects)
	}
	return perConnect, perReconnect
}

// PerAttempt returns a role's CPU microseconds per attempt of the
// reconnect span (wasted attempts included in the divisor: the herd's
// cost of one attempt) and per close: the close span's CPU over the
// connections that ended in it. The close span runs from the event to
// the server's ready, so the attempts refused in the outage are in its
// CPU too: the figure bounds a close from above. Nil as PerConnect's.
func (sp CPUSpans) PerAttempt(pts []CPUPoint) (perAttempt, perClose *float64) {
	if !sp.HasEvent {
		return nil, nil
	}
	perAttempt = cpuPer(pts, sp.ReconnectStart, sp.ReconnectEnd, cpuAt, sp.Attempts)
	if sp.CloseEnd > sp.ReconnectStart {
		perClose = cpuPer(pts, sp.ReconnectStart, sp.CloseEnd, cpuAt, sp.Closes)
	}
	return perAttempt, perClose
}

// cpuPer is the CPU microseconds of pts from from, taken at its nearest
// sample (cpuAt), to to, taken by endAt (cpuAt, or cpuAfter for a span
// that must hold all of its work), over n, to 0.1 µs: nil when n is 0 or
// either end was not sampled.
func cpuPer(pts []CPUPoint, from, to time.Duration, endAt func([]CPUPoint, time.Duration) (float64, bool), n int) *float64 {
	if n <= 0 {
		return nil
	}
	a, okA := cpuAt(pts, from)
	b, okB := endAt(pts, to)
	if !okA || !okB {
		return nil
	}
	us := max(0, b-a) * 1e6 / float64(n)
	return ptrTo(math.Round(us*10) / 10)
}
