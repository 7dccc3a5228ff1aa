package chaos_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/chaos"
)

// lines is n copies of line, each ended by a newline.
func lines(line string, n int) string {
	return strings.Repeat(line+"\n", n)
}

// An oversized schedule is refused with one short line that names where,
// and echoes at most a short prefix of what it found.
func TestParseLimits(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want string
	}{
		// More text than any schedule needs: refused before scanning.
		{"source too long", lines("# padding", chaos.MaxSourceBytes/10+1),
			`chaos: line 1, col 1: schedule of 4194310 bytes: a schedule has at most 4194304 bytes`},
		// Entry MaxEntries+1 is named; those before it parse.
		{"too many entries", lines("at 1s stall 1s", chaos.MaxEntries+5),
			`chaos: line 10001, col 1: more than 10000 entries: a schedule has at most 10000`},
		// A 1 MB word is cut to 60 characters and "...".
		{"long word", "at 1s restart " + strings.Repeat("x", 1<<20),
			`chaos: line 1, col 15: word of 1048576 bytes "` + strings.Repeat("x", 60) + `...": a word has at most 64`},
		// Short words spread over a long line.
		{"long entry", "at 1s" + strings.Repeat(" ", 600) + "stall 1s",
			`chaos: line 1, col 1: entry of 613 bytes "at 1s` + strings.Repeat(" ", 55) + `...": an entry has at most 512`},
		// The event echoed as context is cut as well.
		{"clipped context", "at 1s proxy latency=100ms jitter=50ms bandwidth=100kbit/s loss=1% for 1s oops",
			`chaos: line 1, col 74: unexpected "oops" after "proxy latency=100ms jitter=50ms bandwidth=100kbit/s loss=1% ...": expected ";" or a new line`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := chaos.Parse(tt.src)
			var se *chaos.SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Parse error = %v, want a *SyntaxError", err)
			}
			if err.Error() != tt.want {
				t.Errorf("Parse error:\n got  %.300s\n want %s", err, tt.want)
			}
		})
	}
}

// Parse stops reading at the entry past MaxEntries: the lines after it
// cost nothing, so a huge file is refused as cheaply as a barely too
// large one.
func TestParseStopsAtEntryLimit(t *testing.T) {
	barely := lines("at 1s stall 1s", chaos.MaxEntries+1)
	huge := barely + lines("at 1s stall 1s", 5*chaos.MaxEntries)
	allocs := func(src string) float64 {
		return testing.AllocsPerRun(2, func() {
			if _, err := chaos.Parse(src); err == nil {
				t.Fatal("Parse accepted more than MaxEntries entries")
			}
		})
	}
	a, b := allocs(barely), allocs(huge)
	if b > a+10 {
		t.Errorf("Parse allocated %v times for %d entries, %v for %d: it read past the limit",
			a, chaos.MaxEntries+1, b, 6*chaos.MaxEntries+1)
	}
}

// Check keeps the first MaxProblems problems and counts the rest, so a
// schedule that conflicts everywhere costs no more than one that does not.
func TestCheckKeepsFirstProblems(t *testing.T) {
	sched := mustParse(t, lines("at 1s restart", chaos.MaxEntries))
	err := sched.Check(time.Minute)
	var ce *chaos.CheckError
	if !errors.As(err, &ce) {
		t.Fatalf("Check = %v, want a *CheckError", err)
	}
	if len(ce.Problems) != chaos.MaxProblems || ce.More != chaos.MaxEntries-1-chaos.MaxProblems {
		t.Errorf("Check kept %d problems and counted %d more, want %d and %d",
			len(ce.Problems), ce.More, chaos.MaxProblems, chaos.MaxEntries-1-chaos.MaxProblems)
	}
	want := `chaos: line 2: restart at 1s fires at the same instant as the restart of line 1 (and 9998 more problems)`
	if err.Error() != want {
		t.Errorf("Check error:\n got  %v\n want %s", err, want)
	}
}

// A schedule built in code is held to MaxEntries as well.
func TestCheckRefusesTooManyEntries(t *testing.T) {
	one := mustParse(t, "at 1s stall 1s").Entries[0]
	sched := &chaos.Schedule{Entries: make([]chaos.Entry, chaos.MaxEntries+1)}
	for i := range sched.Entries {
		sched.Entries[i] = one
	}
	err := sched.Check(time.Minute)
	want := `chaos: 10001 entries: a schedule has at most 10000`
	if err == nil || err.Error() != want {
		t.Errorf("Check = %v, want %s", err, want)
	}
}

// BenchmarkCheck parses and checks schedules of growing size whose entries
// all conflict (the worst case for the checker); ns/entry stays flat when
// the cost is linear.
func BenchmarkCheck(b *testing.B) {
	for _, n := range []int{1000, 4000, chaos.MaxEntries} {
		src := lines("at 1s restart", n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sched, err := chaos.Parse(src)
				if err != nil {
					b.Fatal(err)
				}
				if sched.Check(time.Minute) == nil {
					b.Fatal("Check found no conflict")
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/entry")
		})
	}
}
