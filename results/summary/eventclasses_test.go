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

// Each event counts the TLS handshakes of the connects in its own buckets:
// the restart's reconnects, not the first connects before it nor those
// after the next event; a ws:// run's events count none.
func TestSummaryEventTLS(t *testing.T) {
	r := results.NewReport(time.Time{}, 10)
	r.Timeline.At(50 * time.Millisecond).TLSFull = 10    // bucket 0: the first connects
	r.Timeline.At(250 * time.Millisecond).TLSResumed = 7 // bucket 2: restart
	r.Timeline.At(350 * time.Millisecond).TLSResumed = 2 // bucket 3: restart
	r.Timeline.At(350 * time.Millisecond).TLSFull = 1
	r.Timeline.At(650 * time.Millisecond).TLSFull = 4 // bucket 6: the second restart, to the end
	events := []results.Event{
		{Kind: "restart", Mode: "abrupt", Start: 210 * time.Millisecond, End: 300 * time.Millisecond, Ready: 300 * time.Millisecond},
		{Kind: "restart", Mode: "abrupt", Start: 610 * time.Millisecond, End: 700 * time.Millisecond, Ready: 700 * time.Millisecond},
	}
	s := Summarize(Input{Report: r, Events: events, End: time.Second})
	for i, want := range []struct {
		full, resumed uint64
		share         float64
	}{{1, 9, 0.9}, {4, 0, 0}} {
		e := s.Events[i]
		share, ok := e.TLSResumedShare()
		if e.TLSFull != want.full || e.TLSResumed != want.resumed || !ok || share != want.share {
			t.Errorf("event %d: tls full %d, resumed %d, share %v (%v); want %d, %d, %v",
				i, e.TLSFull, e.TLSResumed, share, ok, want.full, want.resumed, want.share)
		}
	}
	ws := Summarize(Input{Report: results.NewReport(time.Time{}, 10), Events: events[:1], End: time.Second})
	if _, ok := ws.Events[0].TLSResumedShare(); ok {
		t.Errorf("a ws:// run's event has a resumed share: %+v", ws.Events[0])
	}
}

// A drill's deploy and the outage the clients detected within it both
// count the reconnects that followed: an event that begins within another
// one's span does not cut its TLS count short, though it shares its
// bucket.
func TestSummaryEventTLSOverlap(t *testing.T) {
	r := results.NewReport(time.Time{}, 10)
	r.Timeline.At(1050 * time.Millisecond).TLSResumed = 8
	r.Timeline.At(1550 * time.Millisecond).TLSFull = 2
	events := []results.Event{
		{Kind: "deploy", Mode: "command", Start: 1000 * time.Millisecond, End: 1500 * time.Millisecond, Ready: 1500 * time.Millisecond},
		{Kind: "outage", Detected: true, Start: 1009 * time.Millisecond, End: 1520 * time.Millisecond, Ready: 1520 * time.Millisecond},
	}
	s := Summarize(Input{Report: r, Events: events, End: 2 * time.Second})
	for i, e := range s.Events {
		if e.TLSFull != 2 || e.TLSResumed != 8 {
			t.Errorf("event %d (%s): tls full %d, resumed %d; want 2 and 8", i, e.Kind, e.TLSFull, e.TLSResumed)
		}
	}
}
