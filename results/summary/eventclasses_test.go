package summary

import (
	"testing"
	"time"

	"github.com/stampede-dev/stampede/connerr"
	"github.com/stampede-dev/stampede/results"
)

// Each event's failures and disconnects come from the buckets between its
// start and the next event's; the summary carries steps and early retries.
func TestSummaryEventClasses(t *testing.T) {
	r := results.NewReport(time.Time{}, 10)
	r.Timeline.At(150 * time.Millisecond).Disconnects[connerr.Closed1006] = 4 // bucket 1: before any event
	r.Timeline.At(250 * time.Millisecond).Disconnects[connerr.Closed1006] = 5 // bucket 2: restart
	r.Timeline.At(350 * time.Millisecond).Failures[connerr.Refused] = 7       // bucket 3: restart
	r.Timeline.At(450 * time.Millisecond).Failures[connerr.Handshake5xx] = 3  // bucket 4: reject
	r.Timeline.At(950 * time.Millisecond).Failures[connerr.Handshake5xx] = 2  // bucket 9: reject, last
	early := uint64(6)
	events := []results.Event{
		{Kind: "reject", Mode: "503", Start: 420 * time.Millisecond, End: 600 * time.Millisecond, Ready: 600 * time.Millisecond, EarlyRetries: &early},
		{Kind: "restart", Mode: "abrupt", Start: 210 * time.Millisecond, End: 300 * time.Millisecond, Ready: 320 * time.Millisecond,
			Steps: []results.Step{{Proc: 0, Start: 210 * time.Millisecond, End: 250 * time.Millisecond, Ready: 260 * time.Millisecond},
				{Proc: 1, Start: 270 * time.Millisecond, End: 300 * time.Millisecond, Ready: 320 * time.Millisecond}}},
	}
	s := Summarize(Input{Report: r, Events: events, End: time.Second})
	for _, c := range []struct {
		name       string
		i          int
		class      string
		fail, disc uint64
	}{
		{"restart sees its 1006s", 0, "closed_1006", 0, 5},
		{"restart sees its refusals", 0, "refused", 7, 0},
		{"restart does not see the reject's 503s", 0, "handshake_5xx", 0, 0},
		{"reject sees its 503s to the run's end", 1, "handshake_5xx", 5, 0},
		{"reject sees no refusals", 1, "refused", 0, 0},
	} {
		e := s.Events[c.i]
		if e.Failures[c.class] != c.fail || e.Disconnects[c.class] != c.disc {
			t.Errorf("%s: event %d (%s) %s failures %d, disconnects %d; want %d, %d",
				c.name, c.i, e.Kind, c.class, e.Failures[c.class], e.Disconnects[c.class], c.fail, c.disc)
		}
	}
	if n := len(s.Events[0].Failures); n != len(connerr.Classes()) {
		t.Errorf("event failures has %d classes; want every one (%d)", n, len(connerr.Classes()))
	}
	rs := s.Events[0]
	if len(rs.Steps) != 2 || rs.Steps[1] != (StepSummary{Proc: 1, StartS: 0.27, EndS: 0.3, ReadyS: 0.32}) || rs.EarlyRetries != nil {
		t.Errorf("restart steps %+v, early retries %v; want 2 steps, none counted", rs.Steps, rs.EarlyRetries)
	}
	if rj := s.Events[1]; rj.EarlyRetries == nil || *rj.EarlyRetries != 6 || rj.Steps != nil {
		t.Errorf("reject early retries %v, steps %v; want 6 and none", rj.EarlyRetries, rj.Steps)
	}
}
