// Package chaos is the chaos schedule language of a run: it says when the
// target restarts, stalls, changes its backlog or accept rate, rejects
// upgrades, or when the fault proxy in front of it misbehaves. It parses a
// schedule, checks it against a run's length and expands it into firings;
// it imports no results, so the simulator, advise and the proxy read a
// schedule without them. Package chaos/supervisor applies a schedule to a
// running target; the fault specs it names are in package fault.
//
// This file holds the schedule's syntax tree and its canonical text. Parse
// (parse.go) builds a Schedule from text such as
//
//	at 10s restart abrupt down=3s; every 30s restart graceful down=1s
//
// and Plan (plan.go) expands it into concrete firings for a run of a given
// length. The tree is plain data: Parse fills in every default, so a
// consumer never needs to know them. docs/chaos.md has the grammar.
package chaos

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/stampede-dev/stampede/fault"
)

// Schedule is a parsed chaos schedule: its entries in source order.
type Schedule struct {
	// Entries are the schedule's entries in the order they were written.
	Entries []Entry
}

// Entry is one "timing event" entry of a schedule, such as
// "every 30s restart graceful down=1s".
type Entry struct {
	// Timing says when the event fires.
	Timing Timing
	// Event says what happens.
	Event Event
	// Line and Col locate the entry's first word in the source, 1-based;
	// Col counts characters (runes), not bytes. Zero for entries built in code.
	Line, Col int
	// Text is the entry's source text, trimmed, without separator or comment.
	Text string
}

// Timing is when an entry fires: once ("at T") or repeatedly
// ("every T [from F] [until U]").
type Timing struct {
	// At is the first (for "at", the only) firing, measured from the start
	// of the run. For a repeating entry it equals From.
	At time.Duration
	// Every is the period of a repeating entry; 0 for "at".
	Every time.Duration
	// From is the first firing of a repeating entry ("from", default Every);
	// 0 for "at".
	From time.Duration
	// Until bounds a repeating entry: it fires only strictly before Until.
	// 0 means until the run ends.
	Until time.Duration
	// Repeat is true for "every", false for "at".
	Repeat bool
}

// Kind is the kind of an event.
type Kind uint8

// The event kinds. The zero Kind is invalid, so a zero Event is not mistaken
// for a restart.
const (
	// Restart restarts the target processes (Mode, Procs, Interval, Down,
	// Shape).
	Restart Kind = iota + 1
	// Stall makes the running target stop accepting connections for For.
	Stall
	// Backlog sets the target's listen backlog to N, for For (0: for good).
	Backlog
	// AcceptRate caps the target's accepts per second at Rate (0: no cap),
	// for For (0: for good).
	AcceptRate
	// Reject makes the target answer upgrades with Status and a Retry-After
	// of RetryAfter, for For.
	Reject
	// ProxyEvent makes the fault proxy apply the faults in Event.Proxy, for
	// For. (Not "Proxy": that name is the fault proxy interface.)
	ProxyEvent
)

var kindNames = [...]string{
	Restart:    "restart",
	Stall:      "stall",
	Backlog:    "backlog",
	AcceptRate: "accept-rate",
	Reject:     "reject",
	ProxyEvent: "proxy",
}

// String returns the kind's word in the schedule language, e.g. "accept-rate".
func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Restart modes (Event.Mode).
const (
	// ModeGraceful: the target sends close 1001 to each client, then exits.
	ModeGraceful = "graceful"
	// ModeAbrupt: the target exits without close frames (clients see 1006).
	// The default.
	ModeAbrupt = "abrupt"
	// ModeKill: the supervisor sends SIGKILL.
	ModeKill = "kill"
)

// Which processes of the target's SO_REUSEPORT group restart (Event.Procs).
const (
	// ProcsAll restarts every process at once. The default.
	ProcsAll = "all"
	// ProcsOne restarts one process of the group.
	ProcsOne = "one"
	// ProcsRolling restarts the processes one after another, Interval apart.
	ProcsRolling = "rolling"
)

// Downtime shapes of a restart (Event.Shape).
const (
	// ShapeClosed: the port is closed while the target is down, so connects
	// are refused. The default.
	ShapeClosed = "closed"
	// ShapeStall: the port stays open but nothing accepts while the target
	// is down, so the backlog fills and SYNs time out.
	ShapeStall = "stall"
)

// DefaultRollingInterval is the pause between processes of a rolling
// restart written without interval=.
const DefaultRollingInterval = time.Second

// Event is what an entry does. Which fields matter depends on Kind; the
// others are zero. Parse fills in every default.
//
//	Kind        fields
//	Restart     Mode, Procs, Interval (rolling only), Down, Shape
//	Stall       For (how long the target does not accept)
//	Backlog     N, For (0: the new backlog stays)
//	AcceptRate  Rate (0: unlimited), For (0: the new rate stays)
//	Reject      Status, RetryAfter (0: no Retry-After header), For
//	ProxyEvent  Proxy, For
type Event struct {
	// Kind is the kind of event.
	Kind Kind
	// Mode is the restart mode: ModeGraceful, ModeAbrupt or ModeKill.
	Mode string
	// Procs says which processes restart: ProcsAll, ProcsOne or ProcsRolling.
	Procs string
	// Interval is the pause between processes of a rolling restart.
	Interval time.Duration
	// Down is how long a restarted process stays down before it starts
	// again; 0 restarts it at once.
	Down time.Duration
	// Shape is what the port does while down: ShapeClosed or ShapeStall.
	Shape string
	// Spread is a graceful restart's close window: each stopping process
	// sends its close frames spread evenly over it, then exits. 0 sends
	// them all at once.
	Spread time.Duration
	// Hint is a graceful restart's return window: each client is closed
	// with 1013 (try again later) and a delay in the close reason drawn
	// uniformly from [Down, Down+Hint], so the fleet comes back spread
	// over the window instead of at once. 0 closes with 1001 and no hint.
	Hint time.Duration
	// For is how long the event lasts; after it the previous state is
	// restored. 0 means a backlog or accept-rate change that stays.
	For time.Duration
	// N is the new listen backlog.
	N int
	// Rate is the new accept rate in connections per second; 0 is unlimited.
	Rate float64
	// Status is the HTTP status that upgrades are answered with (400..599).
	Status int
	// RetryAfter is the Retry-After sent with Status, in whole seconds;
	// 0 sends none.
	RetryAfter time.Duration
	// Proxy is the set of faults the fault proxy applies.
	Proxy fault.Set
}

// String returns the schedule in canonical form: entries in source order,
// separated by "; ". Parse(s.String()) gives back the same entries (apart
// from Line, Col and Text). A nil schedule is "".
func (s *Schedule) String() string {
	if s == nil {
		return ""
	}
	parts := make([]string, len(s.Entries))
	for i, e := range s.Entries {
		parts[i] = e.String()
	}
	return strings.Join(parts, "; ")
}

// String returns the entry in canonical form, e.g. "at 10s stall 5s".
func (e Entry) String() string { return e.Timing.String() + " " + e.Event.String() }

// String returns "at T" or "every T [from F] [until U]", omitting a From
// equal to Every and a zero Until.
func (t Timing) String() string {
	if !t.Repeat {
		return "at " + t.At.String()
	}
	s := "every " + t.Every.String()
	if t.From != t.Every {
		s += " from " + t.From.String()
	}
	if t.Until > 0 {
		s += " until " + t.Until.String()
	}
	return s
}

// String returns the event in canonical form: defaults are left out, proxy
// faults come in a fixed order, durations in time.Duration's notation.
func (ev Event) String() string {
	var b strings.Builder
	b.WriteString(ev.Kind.String())
	forClause := func() {
		if ev.For > 0 {
			b.WriteString(" for ")
			b.WriteString(ev.For.String())
		}
	}
	switch ev.Kind {
	case Restart:
		b.WriteString(" " + ev.Mode)
		switch ev.Procs {
		case ProcsRolling:
			b.WriteString(" rolling interval=" + ev.Interval.String())
		case ProcsAll, "":
		default:
			b.WriteString(" procs=" + ev.Procs)
		}
		if ev.Down > 0 {
			b.WriteString(" down=" + ev.Down.String())
		}
		if ev.Shape != ShapeClosed && ev.Shape != "" {
			b.WriteString(" shape=" + ev.Shape)
		}
		if ev.Spread > 0 {
			b.WriteString(" spread=" + ev.Spread.String())
		}
		if ev.Hint > 0 {
			b.WriteString(" hint=" + ev.Hint.String())
		}
	case Stall:
		b.WriteString(" " + ev.For.String())
	case Backlog:
		b.WriteString(" " + strconv.Itoa(ev.N))
		forClause()
	case AcceptRate:
		if ev.Rate == 0 {
			b.WriteString(" unlimited")
		} else {
			b.WriteString(" " + strconv.FormatFloat(ev.Rate, 'f', -1, 64) + "/s")
		}
		forClause()
	case Reject:
		b.WriteString(" " + strconv.Itoa(ev.Status))
		if ev.RetryAfter > 0 {
			b.WriteString(" retry-after=" + ev.RetryAfter.String())
		}
		forClause()
	case ProxyEvent:
		b.WriteString(ev.Proxy.String())
		forClause()
	}
	return b.String()
}

// HasProxyEvents reports whether s has proxy events, which need the fault
// proxy between the fleet and the target. A nil schedule has none.
func (s *Schedule) HasProxyEvents() bool {
	if s == nil {
		return false
	}
	for _, e := range s.Entries {
		if e.Event.Kind == ProxyEvent {
			return true
		}
	}
	return false
}
