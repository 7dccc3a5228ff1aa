package chaos_test

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/chaos"
)

func mustParse(t *testing.T, src string) *chaos.Schedule {
	t.Helper()
	s, err := chaos.Parse(src)
	if err != nil {
		t.Fatalf("Parse(%q): %v", src, err)
	}
	return s
}

func TestTimingNext(t *testing.T) {
	tests := []struct {
		name   string
		timing chaos.Timing
		after  time.Duration
		want   time.Duration
		wantOK bool
	}{
		{"at, before", at(10 * s), 5 * s, 10 * s, true},
		{"at, on it", at(10 * s), 10 * s, 10 * s, true},
		{"at, past", at(10 * s), 11 * s, 0, false},
		{"every, from start", every(30 * s), 0, 30 * s, true},
		{"every, on a firing", every(30 * s), 60 * s, 60 * s, true},
		{"every, between firings", every(30 * s), 61 * s, 90 * s, true},
		{"every from 0", chaos.Timing{Every: 5 * s, Repeat: true}, 0, 0, true},
		{"every from 2s", chaos.Timing{At: 2 * s, Every: 5 * s, From: 2 * s, Repeat: true}, 3 * s, 7 * s, true},
		// until is exclusive: a firing exactly at until does not happen.
		{"until exclusive", chaos.Timing{At: 5 * s, Every: 5 * s, From: 5 * s, Until: 15 * s, Repeat: true}, 11 * s, 0, false},
		{"until inclusive below", chaos.Timing{At: 5 * s, Every: 5 * s, From: 5 * s, Until: 15 * s, Repeat: true}, 10 * s, 10 * s, true},
		{"overflow", every(time.Duration(1 << 62)), time.Duration(1<<62) + 1, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := tt.timing.Next(tt.after)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("%+v.Next(%v) = %v, %v; want %v, %v", tt.timing, tt.after, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

// plannedAt lists (time, entry) pairs of a plan, the part a test states.
type plannedAt struct {
	At    time.Duration
	Entry int
}

func TestPlan(t *testing.T) {
	tests := []struct {
		name   string
		src    string
		runEnd time.Duration
		want   []plannedAt
	}{
		{
			// docs/chaos.md's example over a 100 s run: the every-30s restart
			// fires at 30, 60 and 90 s; the backlog change at 60 s comes
			// after the restart at 60 s because it is written later.
			name:   "docs example",
			src:    "at 10s restart abrupt down=3s; every 30s restart graceful down=1s; at 60s backlog 16; at 70s stall 5s; at 80s proxy latency=200ms loss=1% for 10s",
			runEnd: 100 * s,
			want: []plannedAt{{10 * s, 0}, {30 * s, 1}, {60 * s, 1}, {60 * s, 2}, {70 * s, 3},
				{80 * s, 4}, {90 * s, 1}},
		},
		{
			// from sets the first firing; until stops strictly before it.
			name:   "from and until",
			src:    "every 10s from 5s until 35s stall 1s",
			runEnd: time.Minute,
			want:   []plannedAt{{5 * s, 0}, {15 * s, 0}, {25 * s, 0}},
		},
		{
			name:   "from zero",
			src:    "every 20s from 0s stall 1s",
			runEnd: time.Minute,
			want:   []plannedAt{{0, 0}, {20 * s, 0}, {40 * s, 0}},
		},
		{
			// The run's end is exclusive too, for at and every alike.
			name:   "run end cuts",
			src:    "every 5s restart kill down=1s; at 20s stall 1s",
			runEnd: 20 * s,
			want:   []plannedAt{{5 * s, 0}, {10 * s, 0}, {15 * s, 0}},
		},
		{
			// Ties keep source order even when the later entry is an
			// "at" written first in time.
			name:   "ties in source order",
			src:    "every 10s stall 1s; at 10s backlog 8; every 5s proxy reset for 1s",
			runEnd: 21 * s,
			want:   []plannedAt{{5 * s, 2}, {10 * s, 0}, {10 * s, 1}, {10 * s, 2}, {15 * s, 2}, {20 * s, 0}, {20 * s, 2}},
		},
		{
			// No known end: at entries all fire, every entries until
			// their until.
			name:   "no run end",
			src:    "at 1h stall 1s; every 1m until 3m restart",
			runEnd: 0,
			want:   []plannedAt{{time.Minute, 1}, {2 * time.Minute, 1}, {time.Hour, 0}},
		},
		{name: "empty", src: "", runEnd: time.Minute, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sched := mustParse(t, tt.src)
			plan := sched.Plan(tt.runEnd)
			var got []plannedAt
			for _, p := range plan {
				got = append(got, plannedAt{p.At, p.Entry})
				e := sched.Entries[p.Entry]
				if p.Event != e.Event || p.Text != e.Text {
					t.Errorf("firing at %v: event %+v text %q, want the entry's %+v %q", p.At, p.Event, p.Text, e.Event, e.Text)
				}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Plan(%v):\n got  %v\n want %v", tt.runEnd, got, tt.want)
			}
		})
	}
}

// An entry built in code has no source text; Plan gives its canonical form.
func TestPlanTextOfBuiltEntry(t *testing.T) {
	sched := &chaos.Schedule{Entries: []chaos.Entry{{Timing: at(s), Event: chaos.Event{Kind: chaos.Stall, For: 2 * s}}}}
	plan := sched.Plan(time.Minute)
	if len(plan) != 1 || plan[0].Text != "at 1s stall 2s" {
		t.Fatalf("Plan = %+v, want one firing with text %q", plan, "at 1s stall 2s")
	}
}

// Plan stops at MaxPlanned firings, keeping the earliest across entries.
func TestPlanCap(t *testing.T) {
	sched := mustParse(t, "every 1ms stall 1us; at 50ms backlog 8")
	plan := sched.Plan(time.Hour)
	if len(plan) != chaos.MaxPlanned {
		t.Fatalf("len(Plan) = %d, want %d", len(plan), chaos.MaxPlanned)
	}
	// Firings 1ms..50ms are stalls, then the backlog at 50ms after the
	// stall at 50ms, then stalls again: the last one kept is at 99.999s.
	if p := plan[50]; p.At != 50*ms || p.Entry != 1 {
		t.Errorf("plan[50] = %v entry %d, want 50ms entry 1", p.At, p.Entry)
	}
	if p := plan[len(plan)-1]; p.At != (chaos.MaxPlanned-1)*ms || p.Entry != 0 {
		t.Errorf("last firing = %v entry %d, want %v entry 0", p.At, p.Entry, (chaos.MaxPlanned-1)*ms)
	}
	var ce *chaos.CheckError
	if err := sched.Check(time.Hour); !errors.As(err, &ce) ||
		ce.Problems[0].Msg != `line 1, col 1: the schedule fires more than 100000 times (firing 100001 is at 1m40s); shorten the run or lengthen "every"` {
		t.Errorf("Check = %v, want the cap reported first", err)
	}
}

func TestEventDuration(t *testing.T) {
	rolling := restart("abrupt")
	rolling.Procs, rolling.Interval, rolling.Down = chaos.ProcsRolling, 2*s, 500*ms
	down := restart("kill")
	down.Down = 3 * s
	tests := []struct {
		name  string
		ev    chaos.Event
		procs int
		want  time.Duration
	}{
		{"restart down", down, 4, 3 * s},
		// 4 processes: each down 500ms, 2s apart: 4*0.5 + 3*2.
		{"rolling 4 procs", rolling, 4, 8 * s},
		{"rolling 1 proc", rolling, 1, 500 * ms},
		{"stall", chaos.Event{Kind: chaos.Stall, For: 5 * s}, 1, 5 * s},
		{"backlog for good", chaos.Event{Kind: chaos.Backlog, N: 16}, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.ev.Duration(tt.procs); got != tt.want {
				t.Errorf("Duration(%d) = %v, want %v", tt.procs, got, tt.want)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name   string
		src    string
		runEnd time.Duration
		want   []string // problem messages, in order; nil for no error
	}{
		{
			name:   "docs example fits 100s",
			src:    "at 10s restart abrupt down=3s; every 30s restart graceful down=1s; at 60s backlog 16; at 70s stall 5s; at 80s proxy latency=200ms loss=1% for 10s",
			runEnd: 100 * s,
		},
		{
			name:   "rolling, proxy, stall and reject fit 1m",
			src:    "at 5s restart rolling interval=2s; at 20s proxy latency=200ms for 5s; at 30s stall 3s; at 40s reject 503 retry-after=2s for 3s",
			runEnd: time.Minute,
		},
		{
			// A proxy fault during a restart's downtime is fine: they
			// act on different things.
			name:   "proxy during restart",
			src:    "at 10s restart down=5s; at 12s proxy latency=1s for 10s",
			runEnd: time.Minute,
		},
		{
			// Backlog changes without "for" follow one another.
			name:   "permanent backlog changes",
			src:    "at 10s backlog 8; at 11s backlog 16",
			runEnd: time.Minute,
		},
		{
			name:   "after the end",
			src:    "at 10s stall 1s\nat 90s stall 5s\nevery 2m restart",
			runEnd: time.Minute,
			want: []string{
				`line 2: "at 90s stall 5s" fires at 1m30s, not before the run ends at 1m0s`,
				`line 3: "every 2m restart" never fires: its first firing at 2m0s is not before the run ends at 1m0s`,
			},
		},
		{
			name:   "lasts past the end",
			src:    "at 58s stall 5s\nevery 25s restart down=6s",
			runEnd: time.Minute,
			want: []string{
				`line 1: stall at 58s lasts until 1m3s, after the run ends at 1m0s`,
			},
		},
		{
			name:   "restart during restart down",
			src:    "at 28s restart down=3s\nevery 30s restart graceful down=1s",
			runEnd: time.Minute,
			want: []string{
				`line 2: restart at 30s starts while the restart at 28s (line 1) is still down, until 31s`,
			},
		},
		{
			// An every entry whose down time is longer than its period
			// collides with itself; reported once.
			name:   "every overlapping itself",
			src:    "every 5s restart kill down=6s",
			runEnd: 21 * s,
			want: []string{
				`line 1: restart at 10s starts while the restart at 5s (line 1) is still down, until 11s`,
				`line 1: restart at 20s lasts until 26s, after the run ends at 21s`,
			},
		},
		{
			name:   "same instant",
			src:    "at 30s restart; every 30s restart graceful",
			runEnd: time.Minute,
			want: []string{
				`line 1, col 17: restart at 30s fires at the same instant as the restart of line 1, col 1`,
			},
		},
		{
			name:   "stall while down",
			src:    "at 10s restart down=3s\nat 12s stall 5s\nat 12s reject 503 for 1s",
			runEnd: time.Minute,
			want: []string{
				`line 2: stall at 12s starts while the target is down after the restart at 10s (line 1), until 13s`,
				`line 3: reject at 12s starts while the target is down after the restart at 10s (line 1), until 13s`,
			},
		},
		{
			name:   "overlapping faults of one kind",
			src:    "at 10s proxy latency=1s for 10s\nat 15s proxy loss=5% for 1s\nat 20s backlog 8 for 10s\nat 25s backlog 4\nat 40s stall 5s\nat 42s stall 1s",
			runEnd: time.Minute,
			want: []string{
				`line 2: proxy at 15s starts while the proxy at 10s (line 1) is still on, until 20s`,
				`line 4: backlog at 25s starts while the backlog at 20s (line 3) is not restored yet, until 30s`,
				`line 6: stall at 42s starts while the stall at 40s (line 5) is still stalling, until 45s`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := mustParse(t, tt.src).Check(tt.runEnd)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Check(%v) = %v, want nil", tt.runEnd, err)
				}
				return
			}
			var ce *chaos.CheckError
			if !errors.As(err, &ce) {
				t.Fatalf("Check(%v) = %v, want a *CheckError", tt.runEnd, err)
			}
			var got []string
			for _, p := range ce.Problems {
				got = append(got, p.Msg)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Check(%v) problems:\n got  %q\n want %q", tt.runEnd, got, tt.want)
			}
		})
	}
}

// CheckError's text is one line: the first problem and a count.
func TestCheckErrorText(t *testing.T) {
	err := mustParse(t, "at 90s stall 1s; at 95s stall 1s; at 99s stall 1s").Check(time.Minute)
	want := `chaos: line 1, col 1: "at 90s stall 1s" fires at 1m30s, not before the run ends at 1m0s (and 2 more problems)`
	if err == nil || err.Error() != want {
		t.Errorf("Check error:\n got  %v\n want %s", err, want)
	}
}

// A run without --chaos may hold a nil schedule.
func TestNilSchedule(t *testing.T) {
	var sched *chaos.Schedule
	if p := sched.Plan(time.Minute); p != nil {
		t.Errorf("Plan = %v, want nil", p)
	}
	if err := sched.Check(time.Minute); err != nil {
		t.Errorf("Check = %v, want nil", err)
	}
	if got := sched.String(); got != "" {
		t.Errorf("String = %q, want empty", got)
	}
}
