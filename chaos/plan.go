package chaos

import (
	"container/heap"
	"fmt"
	"math"
	"time"
)

// MaxPlanned bounds how many firings Plan returns, so that "every 1ms"
// over a day cannot exhaust memory. Check reports a schedule that exceeds it.
const MaxPlanned = 100_000

// Planned is one concrete firing of an entry.
type Planned struct {
	// At is when the event fires, from the start of the run.
	At time.Duration
	// Entry is the index of the entry in Schedule.Entries.
	Entry int
	// Event is the entry's event.
	Event Event
	// Text is the entry's source text (its canonical form for an entry
	// built in code), for logs and results.
	Text string
}

// Next returns the first firing of t at or after time after, and false when
// there is none (an "at" in the past, or a repeating entry past its Until).
// It lets a supervisor without a known run end walk a schedule lazily.
func (t Timing) Next(after time.Duration) (time.Duration, bool) {
	if !t.Repeat {
		if t.At < after {
			return 0, false
		}
		return t.At, true
	}
	if t.Every <= 0 {
		return 0, false
	}
	next := t.From
	if after > t.From {
		k := (after - t.From) / t.Every
		if (after-t.From)%t.Every != 0 {
			k++
		}
		if k > (math.MaxInt64-t.From)/t.Every {
			return 0, false // beyond the largest time.Duration
		}
		next = t.From + k*t.Every
	}
	if t.Until > 0 && next >= t.Until {
		return 0, false
	}
	return next, true
}

// Duration is how long the event keeps the target (or proxy) in its fault
// state, not counting the time processes take to start: Down for a
// restart (Spread+Down when its closes are spread: the process stops
// accepting at the start and exits after the last close), or for a
// rolling restart of procs processes procs*(Spread+Down) +
// (procs-1)*Interval; For for the other kinds (0 for a backlog or
// accept-rate change that stays).
func (ev Event) Duration(procs int) time.Duration {
	if ev.Kind != Restart {
		return ev.For
	}
	one := satAdd(ev.Spread, ev.Down)
	if ev.Procs != ProcsRolling || procs <= 1 {
		return one
	}
	n := time.Duration(procs)
	if one > 0 && n > math.MaxInt64/one {
		return math.MaxInt64
	}
	return satAdd(one*n, ev.Interval*(n-1))
}

// satAdd adds two non-negative durations, saturating instead of wrapping.
func satAdd(a, b time.Duration) time.Duration {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// Plan expands the schedule into its firings strictly before runEnd, in
// time order; firings at the same instant keep source order. A runEnd <= 0
// means the run's end is not known: "at" entries all fire, and repeating
// entries fire until their Until. Either way at most MaxPlanned firings are
// returned (the earliest ones); Check says when that cuts the plan short.
// A nil schedule has no firings.
func (s *Schedule) Plan(runEnd time.Duration) []Planned {
	return s.plan(runEnd, MaxPlanned)
}

// plan is Plan with a limit on the number of firings.
func (s *Schedule) plan(runEnd time.Duration, limit int) []Planned {
	if s == nil {
		return nil
	}
	end := runEnd
	if end <= 0 {
		end = math.MaxInt64
	}
	// A heap of each entry's next firing merges the entries in time order
	// without expanding any entry past the MaxPlanned earliest firings.
	h := &firings{}
	for i, e := range s.Entries {
		if at, ok := e.Timing.Next(0); ok && at < end {
			h.items = append(h.items, firing{at: at, entry: i})
		}
	}
	heap.Init(h)
	var out []Planned
	for h.Len() > 0 && len(out) < limit {
		f := h.items[0]
		e := s.Entries[f.entry]
		out = append(out, Planned{At: f.at, Entry: f.entry, Event: e.Event, Text: e.text()})
		if f.at < math.MaxInt64 {
			if at, ok := e.Timing.Next(f.at + 1); ok && at < end {
				h.items[0].at = at
				heap.Fix(h, 0)
				continue
			}
		}
		heap.Pop(h)
	}
	return out
}

// text is the entry's source text, or its canonical form if it has none.
func (e Entry) text() string {
	if e.Text != "" {
		return e.Text
	}
	return e.String()
}

// firing is an entry's next firing in Plan's heap.
type firing struct {
	at    time.Duration
	entry int
}

// firings is a min-heap by (at, entry).
type firings struct{ items []firing }

func (h *firings) Len() int { return len(h.items) }
func (h *firings) Less(i, j int) bool {
	a, b := h.items[i], h.items[j]
	return a.at < b.at || a.at == b.at && a.entry < b.entry
}
func (h *firings) Swap(i, j int) { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *firings) Push(x any)    { h.items = append(h.items, x.(firing)) }
func (h *firings) Pop() any {
	x := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return x
}

// Problem is one reason a schedule cannot be applied as written.
type Problem struct {
	// Entry is the index in Schedule.Entries of the entry at fault.
	Entry int
	// At is the firing concerned.
	At time.Duration
	// Msg says what is wrong, starting with the entry's line, e.g.
	// `line 2: restart at 30s starts while the restart at 28s (line 1) is
	// still down, until 31s`.
	Msg string
}

// MaxProblems bounds the problems a CheckError keeps; the rest are counted.
const MaxProblems = 100

// CheckError lists the problems Check found, in time order.
type CheckError struct {
	// Problems are the first problems found (at least one, at most
	// MaxProblems).
	Problems []Problem
	// More counts the problems found beyond those kept in Problems.
	More int
}

// Error returns one line: the first problem and how many more there are.
func (e *CheckError) Error() string {
	msg := "chaos: " + e.Problems[0].Msg
	if n := len(e.Problems) - 1 + e.More; n == 1 {
		msg += " (and 1 more problem)"
	} else if n > 1 {
		msg += fmt.Sprintf(" (and %d more problems)", n)
	}
	return msg
}

// Check reports, as a *CheckError, what in the schedule cannot happen as
// written in a run that ends at runEnd:
//
//   - an entry that fires only at or after the run's end;
//   - an event that lasts past the run's end (a restart's down time, a
//     stall, a reject, a proxy fault, a backlog or accept-rate "for");
//   - more than MaxPlanned firings;
//   - a restart while the previous restart is still down;
//   - a stall or reject while the target is down after a restart;
//   - a stall, reject or proxy fault while the previous one of its kind is
//     still on, and a backlog or accept-rate change before the previous
//     change with "for" is restored;
//   - two events of one kind at the same instant.
//
// Check does not know how many processes the target has, so it counts a
// rolling restart as one process (see Event.Duration). A runEnd <= 0 skips
// the checks against the run's end. Each pair of entries is reported once,
// at its first conflicting firing. A nil schedule has no problems.
//
// Check's cost is linear in the number of entries and firings (the firings
// are bounded by MaxPlanned); a schedule of more than MaxEntries entries
// (built in code: Parse refuses one) is refused without further checks.
func (s *Schedule) Check(runEnd time.Duration) error {
	if s == nil {
		return nil
	}
	if n := len(s.Entries); n > MaxEntries {
		return &CheckError{Problems: []Problem{{Entry: MaxEntries, Msg: fmt.Sprintf(
			"%d entries: a schedule has at most %d", n, MaxEntries)}}}
	}
	c := checker{s: s, seen: map[problemKey]bool{}, perLine: map[int]int{}}
	for _, e := range s.Entries {
		c.perLine[e.Line]++
	}
	if runEnd > 0 {
		for i, e := range s.Entries {
			first, ok := e.Timing.Next(0)
			switch {
			case e.Timing.Repeat && (!ok || first >= runEnd):
				c.add(i, first, i, "%q never fires: its first firing at %v is not before the run ends at %v", clip(e.text()), first, runEnd)
			case !ok || first >= runEnd:
				c.add(i, first, i, "%q fires at %v, not before the run ends at %v", clip(e.text()), first, runEnd)
			}
		}
	}
	plan := s.plan(runEnd, MaxPlanned+1)
	if len(plan) > MaxPlanned {
		p := plan[MaxPlanned]
		c.keep(Problem{Entry: p.Entry, At: p.At, Msg: fmt.Sprintf(
			"%s: the schedule fires more than %d times (firing %d is at %v); shorten the run or lengthen \"every\"",
			c.where(p.Entry), MaxPlanned, MaxPlanned+1, p.At)})
		plan = plan[:MaxPlanned]
	}
	var last [ProxyEvent + 1]window // per kind, the window that ends last
	for _, p := range plan {
		k := p.Event.Kind
		w := window{start: p.At, end: satAdd(p.At, p.Event.Duration(1)), entry: p.Entry, set: true}
		if runEnd > 0 && w.end > runEnd {
			c.add(p.Entry, p.At, p.Entry, "%s at %v lasts until %v, after the run ends at %v", k, p.At, w.end, runEnd)
		}
		if r := last[Restart]; (k == Stall || k == Reject) && r.covers(p.At) {
			c.add(p.Entry, p.At, r.entry, "%s at %v starts while the target is down after the restart at %v (%s), until %v",
				k, p.At, r.start, c.where(r.entry), r.end)
		}
		if k < Restart || k > ProxyEvent {
			continue
		}
		prev := last[k]
		switch {
		case prev.set && prev.start == p.At:
			c.add(p.Entry, p.At, prev.entry, "%s at %v fires at the same instant as the %s of %s", k, p.At, k, c.where(prev.entry))
		case prev.set && p.At < prev.end:
			c.add(p.Entry, p.At, prev.entry, "%s at %v starts while the %s at %v (%s) %s, until %v",
				k, p.At, k, prev.start, c.where(prev.entry), stillOn[k], prev.end)
		}
		if !prev.set || w.end >= prev.end {
			last[k] = w
		}
	}
	if len(c.problems) == 0 {
		return nil
	}
	return &CheckError{Problems: c.problems, More: c.more}
}

// stillOn says, per kind, that an event is still in effect.
var stillOn = [...]string{
	Restart:    "is still down",
	Stall:      "is still stalling",
	Backlog:    "is not restored yet",
	AcceptRate: "is not restored yet",
	Reject:     "is still rejecting",
	ProxyEvent: "is still on",
}

// window is the span [start, end) during which a firing is in effect.
type window struct {
	start, end time.Duration
	entry      int
	set        bool
}

// covers reports whether t falls in the window; a zero-length window
// covers its own instant.
func (w window) covers(t time.Duration) bool {
	return w.set && t >= w.start && (t < w.end || t == w.start)
}

// problemKey identifies a problem for deduplication: the entry at fault,
// the other entry involved, and the message's pattern.
type problemKey struct {
	entry, other int
	format       string
}

// checker collects Check's problems.
type checker struct {
	s        *Schedule
	problems []Problem // the first MaxProblems
	more     int       // problems found beyond those
	seen     map[problemKey]bool
	perLine  map[int]int // entries per source line, for where
}

// add records a problem of entry i at time at, unless the same problem
// between the same entries was already recorded. Past MaxProblems it only
// counts the problem, without formatting it.
func (c *checker) add(i int, at time.Duration, other int, format string, args ...any) {
	key := problemKey{i, other, format}
	if c.seen[key] {
		return
	}
	c.seen[key] = true
	if len(c.problems) >= MaxProblems {
		c.more++
		return
	}
	c.problems = append(c.problems, Problem{Entry: i, At: at,
		Msg: c.where(i) + ": " + fmt.Sprintf(format, args...)})
}

// keep records p, or counts it past MaxProblems.
func (c *checker) keep(p Problem) {
	if len(c.problems) >= MaxProblems {
		c.more++
		return
	}
	c.problems = append(c.problems, p)
}

// where names entry i by its line, adding the column when another entry
// shares the line (a one-line --chaos), or by its position for entries
// built in code.
func (c *checker) where(i int) string {
	e := c.s.Entries[i]
	if e.Line <= 0 {
		return fmt.Sprintf("entry %d", i+1)
	}
	if c.perLine[e.Line] > 1 {
		return fmt.Sprintf("line %d, col %d", e.Line, e.Col)
	}
	return fmt.Sprintf("line %d", e.Line)
}
