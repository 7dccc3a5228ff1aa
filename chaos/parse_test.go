package chaos_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/chaos"
	"github.com/stampede-dev/stampede/fault"
)

const (
	ms = time.Millisecond
	s  = time.Second
)

// restart is a restart event with Parse's defaults, for table cases to
// override.
func restart(mode string) chaos.Event {
	return chaos.Event{Kind: chaos.Restart, Mode: mode, Procs: chaos.ProcsAll, Shape: chaos.ShapeClosed}
}

func at(d time.Duration) chaos.Timing { return chaos.Timing{At: d} }

func every(d time.Duration) chaos.Timing {
	return chaos.Timing{At: d, Every: d, From: d, Repeat: true}
}

// parseCases are schedules that parse, with their exact entries. FuzzParse
// starts from them too.
var parseCases = []struct {
	name string
	src  string
	want []chaos.Entry
}{
	{
		// The example of docs/chaos.md, every construct
		// of the first version on one line.
		name: "docs example",
		src:  "at 10s restart abrupt down=3s; every 30s restart graceful down=1s; at 60s backlog 16; at 70s stall 5s; at 80s proxy latency=200ms loss=1% for 10s",
		want: []chaos.Entry{
			{Timing: at(10 * s), Event: func() chaos.Event { e := restart("abrupt"); e.Down = 3 * s; return e }(),
				Line: 1, Col: 1, Text: "at 10s restart abrupt down=3s"},
			{Timing: every(30 * s), Event: func() chaos.Event { e := restart("graceful"); e.Down = 1 * s; return e }(),
				Line: 1, Col: 32, Text: "every 30s restart graceful down=1s"},
			{Timing: at(60 * s), Event: chaos.Event{Kind: chaos.Backlog, N: 16},
				Line: 1, Col: 68, Text: "at 60s backlog 16"},
			{Timing: at(70 * s), Event: chaos.Event{Kind: chaos.Stall, For: 5 * s},
				Line: 1, Col: 87, Text: "at 70s stall 5s"},
			{Timing: at(80 * s), Event: chaos.Event{Kind: chaos.ProxyEvent, For: 10 * s,
				Proxy: fault.Set{Latency: 200 * ms, Loss: 0.01}},
				Line: 1, Col: 104, Text: "at 80s proxy latency=200ms loss=1% for 10s"},
		},
	},
	{
		// A rolling restart, a proxy fault, a stall and a
		// rejection window.
		name: "rolling, proxy, stall and reject",
		src:  "at 5s restart rolling interval=2s; at 20s proxy latency=200ms for 5s; at 30s stall 3s; at 40s reject 503 retry-after=2s for 3s",
		want: []chaos.Entry{
			{Timing: at(5 * s), Event: func() chaos.Event {
				e := restart("abrupt")
				e.Procs, e.Interval = chaos.ProcsRolling, 2*s
				return e
			}(), Line: 1, Col: 1, Text: "at 5s restart rolling interval=2s"},
			{Timing: at(20 * s), Event: chaos.Event{Kind: chaos.ProxyEvent, For: 5 * s, Proxy: fault.Set{Latency: 200 * ms}},
				Line: 1, Col: 36, Text: "at 20s proxy latency=200ms for 5s"},
			{Timing: at(30 * s), Event: chaos.Event{Kind: chaos.Stall, For: 3 * s},
				Line: 1, Col: 71, Text: "at 30s stall 3s"},
			{Timing: at(40 * s), Event: chaos.Event{Kind: chaos.Reject, Status: 503, RetryAfter: 2 * s, For: 3 * s},
				Line: 1, Col: 88, Text: "at 40s reject 503 retry-after=2s for 3s"},
		},
	},
	{
		name: "repeated kill",
		src:  "every 5s restart kill down=1s",
		want: []chaos.Entry{{Timing: every(5 * s), Event: func() chaos.Event { e := restart("kill"); e.Down = s; return e }(),
			Line: 1, Col: 1, Text: "every 5s restart kill down=1s"}},
	},
	{
		// Nothing but "restart": every default filled in.
		name: "restart defaults",
		src:  "at 0s restart",
		want: []chaos.Entry{{Timing: at(0), Event: restart("abrupt"), Line: 1, Col: 1, Text: "at 0s restart"}},
	},
	{
		// procs=rolling without interval= gets the default 1s.
		name: "rolling default interval",
		src:  "at 1s restart procs=rolling",
		want: []chaos.Entry{{Timing: at(s), Event: func() chaos.Event {
			e := restart("abrupt")
			e.Procs, e.Interval = chaos.ProcsRolling, chaos.DefaultRollingInterval
			return e
		}(), Line: 1, Col: 1, Text: "at 1s restart procs=rolling"}},
	},
	{
		// Options in any order; the stall shape keeps the port open.
		name: "restart all options",
		src:  "at 1m30s restart shape=stall down=1.5s procs=one graceful",
		want: []chaos.Entry{{Timing: at(90 * s), Event: chaos.Event{Kind: chaos.Restart, Mode: "graceful", Procs: "one",
			Down: 1500 * ms, Shape: "stall"}, Line: 1, Col: 1, Text: "at 1m30s restart shape=stall down=1.5s procs=one graceful"}},
	},
	{
		// A deploy's close frames spread out, and the fleet told when to return.
		name: "restart spread and hint",
		src:  "at 8s restart graceful down=2s spread=5s hint=4s",
		want: []chaos.Entry{{Timing: at(8 * s), Event: chaos.Event{Kind: chaos.Restart, Mode: "graceful", Procs: "all",
			Down: 2 * s, Shape: "closed", Spread: 5 * s, Hint: 4 * s}, Line: 1, Col: 1, Text: "at 8s restart graceful down=2s spread=5s hint=4s"}},
	},
	{
		name: "every from until",
		src:  "every 10s from 0s until 1m stall 2s",
		want: []chaos.Entry{{Timing: chaos.Timing{At: 0, Every: 10 * s, From: 0, Until: time.Minute, Repeat: true},
			Event: chaos.Event{Kind: chaos.Stall, For: 2 * s}, Line: 1, Col: 1, Text: "every 10s from 0s until 1m stall 2s"}},
	},
	{
		name: "every until before from",
		src:  "every 10s until 1m from 15s stall for 2s",
		want: []chaos.Entry{{Timing: chaos.Timing{At: 15 * s, Every: 10 * s, From: 15 * s, Until: time.Minute, Repeat: true},
			Event: chaos.Event{Kind: chaos.Stall, For: 2 * s}, Line: 1, Col: 1, Text: "every 10s until 1m from 15s stall for 2s"}},
	},
	{
		name: "backlog and accept-rate for",
		src:  "at 1s backlog 8 for 5s; at 2s accept-rate 250/s for 1s; at 3s accept-rate 0.5/s; at 4s accept-rate unlimited; at 5s accept-rate 0",
		want: []chaos.Entry{
			{Timing: at(s), Event: chaos.Event{Kind: chaos.Backlog, N: 8, For: 5 * s}, Line: 1, Col: 1, Text: "at 1s backlog 8 for 5s"},
			{Timing: at(2 * s), Event: chaos.Event{Kind: chaos.AcceptRate, Rate: 250, For: s}, Line: 1, Col: 25, Text: "at 2s accept-rate 250/s for 1s"},
			{Timing: at(3 * s), Event: chaos.Event{Kind: chaos.AcceptRate, Rate: 0.5}, Line: 1, Col: 57, Text: "at 3s accept-rate 0.5/s"},
			{Timing: at(4 * s), Event: chaos.Event{Kind: chaos.AcceptRate}, Line: 1, Col: 82, Text: "at 4s accept-rate unlimited"},
			{Timing: at(5 * s), Event: chaos.Event{Kind: chaos.AcceptRate}, Line: 1, Col: 111, Text: "at 5s accept-rate 0"},
		},
	},
	{
		// Without retry-after= the rejection carries no Retry-After.
		name: "reject without retry-after",
		src:  "at 1s reject 429 for 10s",
		want: []chaos.Entry{{Timing: at(s), Event: chaos.Event{Kind: chaos.Reject, Status: 429, For: 10 * s},
			Line: 1, Col: 1, Text: "at 1s reject 429 for 10s"}},
	},
	{
		// 100kbit/s is 12,500 bytes/s; 1.5MB/s is decimal megabytes.
		name: "proxy faults",
		src:  "at 1s proxy latency=100ms jitter=50ms bandwidth=100kbit/s loss=0.5% for 1m\nat 2m proxy bandwidth=1.5MB/s for 1s\nat 3m proxy bandwidth=512KiB/s for 1s\nat 4m proxy reset for 1s\nat 5m proxy blackhole for 2s",
		want: []chaos.Entry{
			{Timing: at(s), Event: chaos.Event{Kind: chaos.ProxyEvent, For: time.Minute, Proxy: fault.Set{
				Latency: 100 * ms, Jitter: 50 * ms, Bandwidth: 12500, Loss: 0.005}},
				Line: 1, Col: 1, Text: "at 1s proxy latency=100ms jitter=50ms bandwidth=100kbit/s loss=0.5% for 1m"},
			{Timing: at(2 * time.Minute), Event: chaos.Event{Kind: chaos.ProxyEvent, For: s, Proxy: fault.Set{Bandwidth: 1500000}},
				Line: 2, Col: 1, Text: "at 2m proxy bandwidth=1.5MB/s for 1s"},
			{Timing: at(3 * time.Minute), Event: chaos.Event{Kind: chaos.ProxyEvent, For: s, Proxy: fault.Set{Bandwidth: 512 * 1024}},
				Line: 3, Col: 1, Text: "at 3m proxy bandwidth=512KiB/s for 1s"},
			{Timing: at(4 * time.Minute), Event: chaos.Event{Kind: chaos.ProxyEvent, For: s, Proxy: fault.Set{Reset: true}},
				Line: 4, Col: 1, Text: "at 4m proxy reset for 1s"},
			{Timing: at(5 * time.Minute), Event: chaos.Event{Kind: chaos.ProxyEvent, For: 2 * s, Proxy: fault.Set{Blackhole: true}},
				Line: 5, Col: 1, Text: "at 5m proxy blackhole for 2s"},
		},
	},
	{
		// A file: comments, blank lines, CRLF line ends, indentation,
		// and two entries on one line.
		name: "file layout",
		src:  "# warm-up first\r\n\r\n  at 10s stall 1s   # short\r\nat 20s stall 2s;at 30s stall 3s;\n\t# end\n",
		want: []chaos.Entry{
			{Timing: at(10 * s), Event: chaos.Event{Kind: chaos.Stall, For: s}, Line: 3, Col: 3, Text: "at 10s stall 1s"},
			{Timing: at(20 * s), Event: chaos.Event{Kind: chaos.Stall, For: 2 * s}, Line: 4, Col: 1, Text: "at 20s stall 2s"},
			{Timing: at(30 * s), Event: chaos.Event{Kind: chaos.Stall, For: 3 * s}, Line: 4, Col: 17, Text: "at 30s stall 3s"},
		},
	},
	{name: "empty", src: "", want: nil},
	{name: "only comments and separators", src: "# nothing yet\n ; ;\n", want: nil},
}

func TestParse(t *testing.T) {
	for _, tt := range parseCases {
		t.Run(tt.name, func(t *testing.T) {
			got, err := chaos.Parse(tt.src)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.src, err)
			}
			if !reflect.DeepEqual(got.Entries, tt.want) {
				t.Errorf("Parse(%q) entries:\n got  %+v\n want %+v", tt.src, got.Entries, tt.want)
			}
		})
	}
}

// parseErrorCases are schedules that do not parse, with their exact
// errors. FuzzParse starts from them too.
var parseErrorCases = []struct {
	name string
	src  string
	want string
}{
	{"spread without graceful", "at 1s restart abrupt spread=5s",
		`chaos: line 1, col 22: "spread=" needs a graceful restart (it shapes the close frames, which only a graceful stop sends): add "graceful"`},
	{"hint without graceful", "at 1s restart down=2s hint=5s",
		`chaos: line 1, col 23: "hint=" needs a graceful restart (it shapes the close frames, which only a graceful stop sends): add "graceful"`},
	{"hint zero", "at 1s restart graceful hint=0s",
		`chaos: line 1, col 29: expected a positive duration after "hint=", found "0s"`},
	{"bad down value", "every 5s restart kill down=2x",
		`chaos: line 1, col 28: expected a duration after "down=", found "2x"`},
	{"empty value", "at 1s restart down= shape=stall",
		`chaos: line 1, col 20: expected a duration after "down=", found nothing (write down=1s, without spaces)`},
	{"spaces around =", "at 1s restart down = 3s",
		`chaos: line 1, col 15: expected "down=" followed by its value, as in down=1s (no spaces), found "down"`},
	{"duration without unit", "at 10 stall 5s",
		`chaos: line 1, col 4: expected a duration after "at", found "10" (a duration needs a unit, as in 10s)`},
	{"not a number either", "at inf stall 5s",
		`chaos: line 1, col 4: expected a duration after "at", found "inf"`},
	{"negative at", "at -1s stall 1s",
		`chaos: line 1, col 4: expected a non-negative duration after "at", found "-1s"`},
	{"negative down", "at 1s restart down=-1s",
		`chaos: line 1, col 20: expected a non-negative duration after "down=", found "-1s"`},
	{"every zero", "every 0s stall 1s",
		`chaos: line 1, col 7: expected a positive duration after "every", found "0s"`},
	{"until before from", "every 10s from 30s until 20s stall 1s",
		`chaos: line 1, col 20: expected an "until" later than the first firing at 30s, found "until 20s": the entry would never fire`},
	{"until equals first firing", "every 10s until 10s stall 1s",
		`chaos: line 1, col 11: expected an "until" later than the first firing at 10s, found "until 10s": the entry would never fire`},
	{"duplicate until", "every 10s until 20s until 30s stall 1s",
		`chaos: line 1, col 21: duplicate "until": already given at col 11`},
	{"no timing", "restart abrupt",
		`chaos: line 1, col 1: expected "at" or "every" to start an entry, found "restart"`},
	{"no event", "at 10s",
		`chaos: line 1, col 7: expected an event (restart, stall, backlog, accept-rate, reject, proxy) after "at 10s", found end of entry`},
	{"unknown event on line 2", "at 1s stall 1s\nat 10s restrat abrupt",
		`chaos: line 2, col 8: unknown event "restrat": expected one of restart, stall, backlog, accept-rate, reject, proxy`},
	{"unknown restart option", "at 1s restart fast",
		`chaos: line 1, col 15: unknown restart option "fast": expected graceful, abrupt, kill, rolling, procs=, interval=, down=, shape=, spread= or hint=`},
	{"two modes", "at 1s restart graceful abrupt",
		`chaos: line 1, col 24: restart mode given twice: "graceful", then "abrupt"`},
	{"duplicate down", "at 1s restart down=1s down=2s",
		`chaos: line 1, col 23: duplicate "down=": already given at col 15`},
	{"rolling with procs=one", "at 1s restart rolling procs=one",
		`chaos: line 1, col 23: "procs=one" conflicts with "rolling": a restart has one choice of processes`},
	{"rolling twice", "at 1s restart rolling procs=rolling",
		`chaos: line 1, col 23: duplicate "procs=rolling": "rolling" at col 15 says the same`},
	{"bad procs", "at 1s restart procs=two",
		`chaos: line 1, col 21: expected all, one or rolling after "procs=", found "two"`},
	{"interval without rolling", "at 1s restart interval=2s",
		`chaos: line 1, col 15: "interval=" needs a rolling restart: add "rolling", or drop "interval=2s"`},
	{"bad shape", "at 1s restart down=1s shape=open",
		`chaos: line 1, col 29: expected closed or stall after "shape=", found "open"`},
	{"stall without duration", "at 1s stall",
		`chaos: line 1, col 12: expected a duration after "stall", found end of entry`},
	{"stall then comment", "at 1s stall   # how long?",
		`chaos: line 1, col 15: expected a duration after "stall", found end of entry`},
	{"stall zero", "at 1s stall 0s",
		`chaos: line 1, col 13: expected a positive duration after "stall", found "0s"`},
	{"stall trailing word", "at 1s stall 5s for 3s",
		`chaos: line 1, col 16: unexpected "for" after "stall 5s": expected ";" or a new line`},
	{"backlog zero", "at 1s backlog 0",
		`chaos: line 1, col 15: expected a backlog from 1 to 2147483647 after "backlog", found "0"`},
	{"backlog word", "at 1s backlog many",
		`chaos: line 1, col 15: expected a backlog (a number of connections) after "backlog", found "many"`},
	{"backlog trailing word", "at 1s backlog 16 please",
		`chaos: line 1, col 18: unexpected "please" after "backlog 16": expected "for", ";" or a new line`},
	{"backlog for zero", "at 1s backlog 16 for 0s",
		`chaos: line 1, col 22: expected a positive duration after "for", found "0s"`},
	{"accept-rate without unit", "at 1s accept-rate 100",
		`chaos: line 1, col 19: expected a rate like 100/s, or unlimited, after "accept-rate", found "100"`},
	{"accept-rate negative", "at 1s accept-rate -5/s",
		`chaos: line 1, col 19: expected a rate like 100/s, or unlimited, after "accept-rate", found "-5/s"`},
	{"reject 200", "at 1s reject 200 for 1s",
		`chaos: line 1, col 14: expected an HTTP status from 400 to 599 (such as 503 or 429) after "reject", found "200"`},
	{"reject without for", "at 1s reject 503 retry-after=2s",
		`chaos: line 1, col 32: expected "for" and a duration after "reject 503 retry-after=2s", found end of entry`},
	{"retry-after fraction", "at 1s reject 503 retry-after=1.5s for 1s",
		`chaos: line 1, col 30: expected whole seconds after "retry-after=" (the header carries seconds), found "1.5s"`},
	{"proxy without faults", "at 1s proxy for 1s",
		`chaos: line 1, col 13: expected a proxy fault (latency=, jitter=, bandwidth=, loss=, reset or blackhole) after "proxy", found "for"`},
	{"proxy without for", "at 1s proxy latency=1s",
		`chaos: line 1, col 23: expected "for" and a duration after "proxy latency=1s", found end of entry`},
	{"unknown proxy fault", "at 1s proxy delay=1s for 1s",
		`chaos: line 1, col 13: unknown proxy fault "delay=1s": expected latency=, jitter=, bandwidth=, loss=, reset or blackhole`},
	{"loss above 100", "at 1s proxy loss=101% for 1s",
		`chaos: line 1, col 18: expected a percentage above 0% and at most 100% after "loss=", found "101%"`},
	{"loss without percent", "at 1s proxy loss=0.01 for 1s",
		`chaos: line 1, col 18: expected a percentage like 1% or 0.5% after "loss=", found "0.01"`},
	{"loss negative", "at 1s proxy loss=-1% for 1s",
		`chaos: line 1, col 18: expected a percentage like 1% or 0.5% after "loss=", found "-1%"`},
	{"ambiguous bandwidth unit", "at 1s proxy bandwidth=10mb/s for 1s",
		`chaos: line 1, col 23: expected a rate like 1MB/s, 512KB/s or 100kbit/s (units B, KB, MB, GB, KiB, MiB, GiB, bit, kbit, Mbit, Gbit) after "bandwidth=", found "10mb/s"`},
	{"bandwidth below a byte", "at 1s proxy bandwidth=1bit/s for 1s",
		`chaos: line 1, col 23: expected a rate of at least 1B/s after "bandwidth=", found "1bit/s"`},
	{"jitter above latency", "at 1s proxy latency=1s jitter=2s for 1s",
		`chaos: line 1, col 24: expected a jitter of at most latency=1s (a delay cannot be negative), found "jitter=2s"`},
	{"jitter alone", "at 1s proxy jitter=2s for 1s",
		`chaos: line 1, col 13: "jitter=" varies a latency: expected "latency=" too, found none`},
	{"reset with latency", "at 1s proxy latency=1s reset for 1s",
		`chaos: line 1, col 24: "reset" cannot be combined with other faults (it ends all traffic), found "latency=1s" too`},
	{"duplicate latency", "at 1s proxy latency=1s latency=2s for 1s",
		`chaos: line 1, col 24: duplicate "latency=": already given at col 13`},
	{"column counts characters", "at 1s stall 1s # café\nat 2s stall 2s; at 3s stall 3é",
		`chaos: line 2, col 29: expected a duration after "stall", found "3é"`},
}

func TestParseErrors(t *testing.T) {
	for _, tt := range parseErrorCases {
		t.Run(tt.name, func(t *testing.T) {
			got, err := chaos.Parse(tt.src)
			if err == nil {
				t.Fatalf("Parse(%q) = %v, want error %q", tt.src, got, tt.want)
			}
			if err.Error() != tt.want {
				t.Errorf("Parse(%q) error:\n got  %s\n want %s", tt.src, err, tt.want)
			}
			var se *chaos.SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Parse(%q) error %T is not a *SyntaxError", tt.src, err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err)
			}
		})
	}
}

// maxErrorBytes bounds a Parse error: a fixed message, positions and a few
// clipped, quoted words (a quoted character takes at most 10 bytes).
const maxErrorBytes = 2048

// FuzzParse checks that Parse never panics, that its errors are one-line
// *SyntaxErrors with a position, and that whatever parses round-trips
// through String unchanged.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"at 10s restart abrupt down=3s; every 30s restart graceful down=1s; at 60s backlog 16; at 70s stall 5s; at 80s proxy latency=200ms loss=1% for 10s",
		"at 5s restart rolling interval=2s; at 20s proxy latency=200ms for 5s; at 30s stall 3s; at 40s reject 503 retry-after=2s for 3s",
		"every 5s restart kill down=1s",
		"at 8s restart graceful rolling down=2s spread=5s hint=4s",
		"every 10s from 0s until 1m restart procs=one shape=stall down=1.5s\n# comment\nat 1s accept-rate 2.5/s for 1m",
		"at 1s proxy latency=100ms jitter=50ms bandwidth=100kbit/s loss=0.0001% for 1m",
		"at 1s proxy bandwidth=1.234567MB/s for 1s; at 2s proxy reset for 1s; at 3s backlog 1 for 1ns",
		"at 1s accept-rate unlimited; at 2s accept-rate 0.000001/s",
		"every 5s restart kill down=2x",
		"at 1s stall 1s # café\nat 2s stall 3é",
		"at 2562047h47m16.854775807s stall 1ns",
		"at 1s restart " + strings.Repeat("\x1b[31m", 20),
		"at 1s proxy latency=100ms jitter=50ms bandwidth=100kbit/s loss=1% for 1s oops",
	} {
		f.Add(seed)
	}
	for _, c := range parseCases {
		f.Add(c.src)
	}
	for _, c := range parseErrorCases {
		f.Add(c.src)
	}
	f.Fuzz(func(t *testing.T, src string) {
		sched, err := chaos.Parse(src)
		if err != nil {
			var se *chaos.SyntaxError
			if !errors.As(err, &se) || se.Line < 1 || se.Col < 1 || strings.Contains(err.Error(), "\n") {
				t.Fatalf("Parse(%q): bad error %#v", src, err)
			}
			// Errors echo short prefixes of the input, never all of it.
			if len(err.Error()) > maxErrorBytes {
				t.Fatalf("Parse(%.100q...): error of %d bytes, want at most %d", src, len(err.Error()), maxErrorBytes)
			}
			return
		}
		canon := sched.String()
		again, err := chaos.Parse(canon)
		if err != nil {
			t.Fatalf("Parse(%q).String() = %q does not parse: %v", src, canon, err)
		}
		if len(again.Entries) != len(sched.Entries) {
			t.Fatalf("round trip of %q: %d entries, want %d", canon, len(again.Entries), len(sched.Entries))
		}
		for i := range sched.Entries {
			a, b := sched.Entries[i], again.Entries[i]
			if a.Timing != b.Timing || a.Event != b.Event {
				t.Fatalf("round trip of %q entry %d:\n got  %+v %+v\n want %+v %+v", canon, i, b.Timing, b.Event, a.Timing, a.Event)
			}
		}
		if s2 := again.String(); s2 != canon {
			t.Fatalf("String is not canonical: %q, then %q", canon, s2)
		}
		// Check walks the plan; keep the plan small so the fuzzer stays fast.
		for _, e := range sched.Entries {
			if e.Timing.Repeat && e.Timing.Every < time.Millisecond {
				return
			}
		}
		_ = sched.Check(10 * time.Second)
	})
}
