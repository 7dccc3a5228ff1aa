package report

import (
	"strings"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/internal/resultstest"
	"github.com/stampede-dev/stampede/results/summary"

	"github.com/stampede-dev/stampede/results"
)

// Figures that read as perfect or as failure say what they were measured
// from, in summary.json and in the text.
func TestRecoveryMeasuredFrom(t *testing.T) {
	steps := []results.Step{{Proc: 0, Start: resultstest.Ms(1000), End: resultstest.Ms(1100), Ready: resultstest.Ms(1200)}, {Proc: 1, Start: resultstest.Ms(2200), End: resultstest.Ms(2300), Ready: resultstest.Ms(2400)}}
	for _, tc := range []struct {
		name     string
		trans    []results.Transition
		ev       results.Event
		from     string
		note     string // a part of the note; "" for none
		noteless bool
	}{
		// A rolling restart whose clients were all back on the other
		// process before the last one was ready: every R is 0.
		{"rolling, all back before the last ready",
			[]results.Transition{resultstest.DownAt(0, resultstest.Ms(1000)), resultstest.UpAt(0, resultstest.Ms(1300)), resultstest.DownAt(1, resultstest.Ms(2200)), resultstest.UpAt(1, resultstest.Ms(2300))},
			results.Event{Kind: "restart", Start: resultstest.Ms(1000), End: resultstest.Ms(2300), Ready: resultstest.Ms(2400), Steps: steps},
			summary.MeasuredLastReady, "every client was back by the last restarted process ready at 2.40s (2 processes one at a time from 1.00s)", false},
		// A rolling restart whose first process's clients were back on
		// the other before the last one was ready, and the rest after:
		// R50 is 0, R100 is not.
		{"rolling, half back before the last ready",
			[]results.Transition{resultstest.DownAt(0, resultstest.Ms(1000)), resultstest.UpAt(0, resultstest.Ms(1300)), resultstest.DownAt(1, resultstest.Ms(2200)), resultstest.UpAt(1, resultstest.Ms(2900))},
			results.Event{Kind: "restart", Start: resultstest.Ms(1000), End: resultstest.Ms(2300), Ready: resultstest.Ms(2400), Steps: steps},
			summary.MeasuredLastReady, "half the clients or more were back by the last restarted process ready at 2.40s (2 processes one at a time from 1.00s): R figures count from then", false},
		// A blackhole: the fault lifted at 5 s, nobody back by the end.
		{"fault lifted, nobody back",
			[]results.Transition{resultstest.DownAt(0, resultstest.Ms(4000)), resultstest.DownAt(1, resultstest.Ms(4500))},
			results.Event{Kind: "proxy", Start: resultstest.Ms(1000), End: resultstest.Ms(5000), Ready: resultstest.Ms(5000)},
			summary.MeasuredEnd, "0 of 2 back by the run's end at 8.00s, counted from the fault's end at 5.00s", false},
		// A restart measured from its ready, its clients back after it:
		// nothing reads as perfect or failure.
		{"restart, back after ready",
			[]results.Transition{resultstest.DownAt(0, resultstest.Ms(1000)), resultstest.UpAt(0, resultstest.Ms(2500)), resultstest.DownAt(1, resultstest.Ms(1000)), resultstest.UpAt(1, resultstest.Ms(2600))},
			results.Event{Kind: "restart", Start: resultstest.Ms(1000), End: resultstest.Ms(1900), Ready: resultstest.Ms(2000)},
			summary.MeasuredReady, "", true},
		// Interrupted mid-restart: never ready as far as the run saw.
		{"never ready",
			[]results.Transition{resultstest.DownAt(0, resultstest.Ms(1000)), resultstest.DownAt(1, resultstest.Ms(1000))},
			results.Event{Kind: "restart", Start: resultstest.Ms(1000), NeverReady: true},
			summary.MeasuredNone, "not ready again before the run's end at 8.00s: 0 of 2 back by then, no R figure", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := results.NewReport(time.Time{}, 2)
			r.Transitions = resultstest.Concat(resultstest.Fleet(2), tc.trans)
			s := summary.Summarize(summary.Input{Report: r, Events: []results.Event{tc.ev}, End: 8 * time.Second})
			rec := s.Recovery[0]
			if rec.MeasuredFrom != tc.from {
				t.Errorf("measured_from %q, want %q", rec.MeasuredFrom, tc.from)
			}
			if tc.noteless != (rec.Note == "") || !strings.Contains(rec.Note, tc.note) {
				t.Errorf("note %q, want %q", rec.Note, tc.note)
			}
			var b strings.Builder
			if err := WriteText(&b, s); err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(b.String(), "event 0: "+rec.Note); !tc.noteless && !got {
				t.Errorf("the text lacks the note:\n%s", b.String())
			}
		})
	}
}
