package results

import (
	"strings"
	"testing"
	"time"
)

// Figures that read as perfect or as failure say what they were measured
// from, in summary.json and in the text.
func TestRecoveryMeasuredFrom(t *testing.T) {
	steps := []Step{{Proc: 0, Start: ms(1000), End: ms(1100), Ready: ms(1200)}, {Proc: 1, Start: ms(2200), End: ms(2300), Ready: ms(2400)}}
	for _, tc := range []struct {
		name     string
		trans    []Transition
		ev       Event
		from     string
		note     string // a part of the note; "" for none
		noteless bool
	}{
		// A rolling restart whose clients were all back on the other
		// process before the last one was ready: every R is 0.
		{"rolling, all back before the last ready",
			[]Transition{downAt(0, ms(1000)), upAt(0, ms(1300)), downAt(1, ms(2200)), upAt(1, ms(2300))},
			Event{Kind: "restart", Start: ms(1000), End: ms(2300), Ready: ms(2400), Steps: steps},
			MeasuredLastReady, "every client was back by the last restarted process ready at 2.40s (2 processes one at a time from 1.00s)", false},
		// A rolling restart whose first process's clients were back on
		// the other before the last one was ready, and the rest after:
		// R50 is 0, R100 is not.
		{"rolling, half back before the last ready",
			[]Transition{downAt(0, ms(1000)), upAt(0, ms(1300)), downAt(1, ms(2200)), upAt(1, ms(2900))},
			Event{Kind: "restart", Start: ms(1000), End: ms(2300), Ready: ms(2400), Steps: steps},
			MeasuredLastReady, "half the clients or more were back by the last restarted process ready at 2.40s (2 processes one at a time from 1.00s): R figures count from then", false},
		// A blackhole: the fault lifted at 5 s, nobody back by the end.
		{"fault lifted, nobody back",
			[]Transition{downAt(0, ms(4000)), downAt(1, ms(4500))},
			Event{Kind: "proxy", Start: ms(1000), End: ms(5000), Ready: ms(5000)},
			MeasuredEnd, "0 of 2 back by the run's end at 8.00s, counted from the fault's end at 5.00s", false},
		// A restart measured from its ready, its clients back after it:
		// nothing reads as perfect or failure.
		{"restart, back after ready",
			[]Transition{downAt(0, ms(1000)), upAt(0, ms(2500)), downAt(1, ms(1000)), upAt(1, ms(2600))},
			Event{Kind: "restart", Start: ms(1000), End: ms(1900), Ready: ms(2000)},
			MeasuredReady, "", true},
		// Interrupted mid-restart: never ready as far as the run saw.
		{"never ready",
			[]Transition{downAt(0, ms(1000)), downAt(1, ms(1000))},
			Event{Kind: "restart", Start: ms(1000), NeverReady: true},
			MeasuredNone, "not ready again before the run's end at 8.00s: 0 of 2 back by then, no R figure", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewReport(time.Time{}, 2)
			r.Transitions = concat(fleet(2), tc.trans)
			s := Summarize(Input{Report: r, Events: []Event{tc.ev}, End: 8 * time.Second})
			rec := s.Recovery[0]
			if rec.MeasuredFrom != tc.from {
				t.Errorf("measured_from %q, want %q", rec.MeasuredFrom, tc.from)
			}
			if tc.noteless != (rec.Note == "") || !strings.Contains(rec.Note, tc.note) {
				t.Errorf("note %q, want %q", rec.Note, tc.note)
			}
			var b strings.Builder
			if err := s.WriteText(&b); err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(b.String(), "event 0: "+rec.Note); !tc.noteless && !got {
				t.Errorf("the text lacks the note:\n%s", b.String())
			}
		})
	}
}
