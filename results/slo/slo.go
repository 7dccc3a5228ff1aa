package slo

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/results/summary"
)

// An SLO gates a run on one figure of its summary: `r99<20s`, `lost==0`,
// `herd_peak_to_mean<5`, `connect_p99<=250ms`. The grammar is
//
//	slo    = space figure space op space value space
//	figure = one of SLOFigures, e.g. "r99"
//	op     = "<" | "<=" | ">" | ">=" | "==" | "!="
//	value  = a duration with its unit (Go syntax: 250ms, 1.5s, 1m30s) for a
//	         duration figure; a plain number (5, 0.5, 1e3) otherwise;
//	         a share (recovered_share) is from 0 to 1, or a percentage
//	         (0.99 or 99%); a bare number above 1 is an error
//
// A duration figure given a number without a unit is an error, not seconds:
// `r99<20` could mean 20 s or 20 ms, and a gate must not guess. The one
// exception is 0, which needs no unit. Durations compare in seconds, to the
// nanosecond.
//
// Recovery figures (r50..r100, herd_*, *_attempts, recovered_share) are
// the worst over the run's events with somebody to recover (a client
// connected before the event went down in it): the largest, or for
// recovered_share the smallest. An R figure that was never reached (not
// enough clients came back before the run ended) is null; so is every
// figure that runs from Ready when the target was never ready again
// ("recovery never happened"), and every recovery figure of a run without
// such an event: a null figure fails its SLO whatever the operator, since
// a gate that cannot be evaluated must not pass.
//
// Figures that were not measured are null too (docs/results.md "SLO
// gates"): a latency percentile with nothing recorded (Count 0), a
// delivery figure (lost, dup_delivered, unsynced, unacked, bad_frames) of
// a run without the message protocol (Messages.Tracked false), and
// listen_overflows when the kernel counters were not read on the target's
// host (Summary.KernelRead false).
type SLO struct {
	// Expr is the SLO as given.
	Expr string
	// Figure is the short name of the figure compared, e.g. "r99".
	Figure string
	// Op is the comparison.
	Op string
	// Limit is the value compared against: seconds for a duration figure.
	Limit float64

	fig *figure
	dur time.Duration // Limit, exactly, for a duration figure
}

// SLOError is an SLO expression that does not parse; Col is the 1-based
// column (in characters) of the offending part.
type SLOError struct {
	Expr string
	Col  int
	Msg  string
}

func (e *SLOError) Error() string {
	return fmt.Sprintf("slo %q: col %d: %s", e.Expr, e.Col, e.Msg)
}

// figureKind says how a figure's value is written and compared.
type figureKind int

const (
	kindCount    figureKind = iota // a whole number of things
	kindRatio                      // a plain number
	kindShare                      // a ratio that may be written as a percentage
	kindDuration                   // seconds, written with a unit
)

// figure is one name an SLO can compare.
type figure struct {
	name string
	kind figureKind
	doc  string
	// get returns the figure's value (seconds for durations); ok false is
	// null, with why saying so for a person.
	get func(s *summary.Summary) (v float64, ok bool, why string)
	// http marks a figure of an HTTP fleet run; the others are figures of
	// WebSocket runs (run, loadgen, drill, bench, simulate).
	http bool
	// recovery marks a figure of the recovery from an event: null in a
	// run where nothing disconnects the fleet.
	recovery bool
}

// SLOFigures returns the names an SLO can compare, with a line of help
// each, in a stable order.
func SLOFigures() [][2]string {
	out := make([][2]string, len(figures))
	for i, f := range figures {
		out[i] = [2]string{f.name, f.doc}
	}
	return out
}

var figures = func() []*figure {
	fs := []*figure{
		rFigure("r50", func(r summary.Recovery) *float64 { return r.R50S }),
		rFigure("r90", func(r summary.Recovery) *float64 { return r.R90S }),
		rFigure("r99", func(r summary.Recovery) *float64 { return r.R99S }),
		rFigure("r100", func(r summary.Recovery) *float64 { return r.R100S }),
		worstFigure("herd_peak", kindCount, "most connection attempts in one 100 ms window of recovery",
			func(r summary.Recovery) *float64 {
				if r.HerdPeakPer100ms == nil {
					return nil
				}
				return new(float64(*r.HerdPeakPer100ms))
			}),
		worstFigure("herd_peak_to_mean", kindRatio, "herd peak over the mean of the recovery window",
			func(r summary.Recovery) *float64 { return r.HerdPeakToMean }),
		worstFigure("wasted_attempts", kindRatio, "failed attempts per client after the target was ready",
			func(r summary.Recovery) *float64 { return r.WastedAttemptsPerClient }),
		worstFigure("outage_attempts", kindRatio, "failed attempts per client during the outage",
			func(r summary.Recovery) *float64 { return r.OutageAttemptsPerClient }),
		{name: "recovered_share", kind: kindShare, recovery: true, doc: "smallest share of the clients connected before an event that came back (0..1, or %)",
			get: func(s *summary.Summary) (float64, bool, string) {
				v, ok := math.Inf(1), false
				for _, r := range s.Recovery {
					if r.Disconnected > 0 {
						v, ok = min(v, float64(r.Recovered)/float64(r.ConnectedBefore)), true
					}
				}
				if !ok {
					return 0, false, noEvent
				}
				return v, true, ""
			}},
		trackedFigure("lost", "messages acked but never delivered", func(m results.Messages) uint64 { return m.Lost }),
		trackedFigure("dup_delivered", "messages delivered twice", func(m results.Messages) uint64 { return m.DupDelivered }),
		trackedFigure("unsynced", "clients whose deliveries could not be checked (away or not resumed at the end)", func(m results.Messages) uint64 { return m.Unsynced }),
		trackedFigure("unacked", "messages still waiting for their ACK at the end", func(m results.Messages) uint64 { return m.Unacked }),
		trackedFigure("bad_frames", "frames from the server that did not decode as the protocol", func(m results.Messages) uint64 { return m.BadFrames }),
		countFigure("failures", "failed connection attempts of every class", func(s *summary.Summary) uint64 {
			var n uint64
			for _, v := range s.Connect.Failures {
				n += v
			}
			return n
		}),
		countFigure("attempts", "connection attempts", func(s *summary.Summary) uint64 { return s.Connect.Attempts }),
		countFigure(results.AttemptsExhausted, "clients that gave up because their policy ran out of attempts", func(s *summary.Summary) uint64 {
			return uint64(s.Stopped[results.AttemptsExhausted].Count)
		}),
		countFigure("stopped", "clients that gave up", func(s *summary.Summary) uint64 {
			var n uint64
			for _, v := range s.Stopped {
				n += uint64(v.Count)
			}
			return n
		}),
		{name: "listen_overflows", kind: kindCount, doc: "kernel ListenOverflows delta (whole namespace; null when not read on the target's host)",
			get: func(s *summary.Summary) (float64, bool, string) {
				if !s.KernelRead {
					note := s.KernelNote
					if note == "" {
						note = "the kernel counters were not read"
					}
					return 0, false, "not measured: " + note
				}
				return float64(max(s.Kernel.ListenOverflows, 0)), true, ""
			}},
	}
	fs = append(fs, httpFigures()...)
	for _, l := range []struct {
		name string
		get  func(s *summary.Summary) results.Latency
	}{
		{"connect", func(s *summary.Summary) results.Latency { return s.LatencyMS.Connect }},
		{"ttr", func(s *summary.Summary) results.Latency { return s.LatencyMS.TTR }},
		{"message_rtt", func(s *summary.Summary) results.Latency { return s.LatencyMS.MessageRTT }},
		{"resume", func(s *summary.Summary) results.Latency { return s.LatencyMS.Resume }},
		{"message_rtt_scheduled", func(s *summary.Summary) results.Latency { return s.LatencyMS.MessageRTTScheduled }},
		{"http", func(s *summary.Summary) results.Latency { return httpLatency(s, false) }},
		{"http_attempt", func(s *summary.Summary) results.Latency { return httpLatency(s, true) }},
	} {
		for _, q := range []struct {
			name string
			get  func(results.Latency) float64
		}{
			{"p50", func(x results.Latency) float64 { return x.P50 }},
			{"p90", func(x results.Latency) float64 { return x.P90 }},
			{"p99", func(x results.Latency) float64 { return x.P99 }},
			{"max", func(x results.Latency) float64 { return x.Max }},
		} {
			get, pick := l.get, q.get
			name := l.name
			fs = append(fs, &figure{name: l.name + "_" + q.name, kind: kindDuration, http: strings.HasPrefix(name, "http"), recovery: name == "ttr",
				doc: fmt.Sprintf("%s latency %s (null when nothing was recorded)", l.name, q.name),
				get: func(s *summary.Summary) (float64, bool, string) {
					x := get(s)
					if x.Count == 0 {
						// A percentile of nothing is not 0: no connect
						// succeeded, no message came back.
						return 0, false, "not measured: no " + name + " latency was recorded"
					}
					return pick(x) / 1e3, true, ""
				}})
		}
	}
	return fs
}()

const noEvent = "no event disconnected any client: nothing to recover"

// recoveryFigure is the worst of a recovery figure over the events with
// somebody to recover (docs/results.md "Recovery"): the largest. It is
// null when one of them has it null, saying why, or when there is no such
// event.
func recoveryFigure(s *summary.Summary, pick func(summary.Recovery) *float64) (float64, bool, string) {
	v, any := 0.0, false
	for _, r := range s.Recovery {
		if r.Disconnected == 0 {
			continue // nobody to recover: nothing measured
		}
		any = true
		p := pick(r)
		switch {
		case p == nil && r.NeverReady():
			return 0, false, "recovery never happened: the target was not ready again after event " + eventRef(s, r.Event) + " before the run ended"
		case p == nil:
			return 0, false, fmt.Sprintf("never: %d of %d clients back after event %d", r.Recovered, r.ConnectedBefore, r.Event)
		}
		v = max(v, *p)
	}
	if !any {
		return 0, false, noEvent
	}
	return v, true, ""
}

// eventRef names event i of s for a person: "0 (outage (detected) at
// 1.20s)", or "0" when s does not list it.
func eventRef(s *summary.Summary, i int) string {
	if i < 0 || i >= len(s.Events) {
		return strconv.Itoa(i)
	}
	e := s.Events[i]
	return fmt.Sprintf("%d (%s at %.2fs)", i, summary.EventName(e), e.StartS)
}

// rFigure is a fleet recovery figure: the longest over events, null if any
// event never reached it.
func rFigure(name string, pick func(summary.Recovery) *float64) *figure {
	share := strings.TrimPrefix(name, "r")
	return &figure{name: name, kind: kindDuration, recovery: true,
		doc: "seconds from ready until " + share + "% of the clients were back (worst event)",
		get: func(s *summary.Summary) (float64, bool, string) { return recoveryFigure(s, pick) }}
}

// worstFigure is a recovery figure whose worst is its largest.
func worstFigure(name string, kind figureKind, doc string, pick func(summary.Recovery) *float64) *figure {
	return &figure{name: name, kind: kind, doc: doc + " (worst event)", recovery: true,
		get: func(s *summary.Summary) (float64, bool, string) { return recoveryFigure(s, pick) }}
}

// trackedFigure is a count of the message protocol's delivery check: null
// when the run did not check deliveries (Messages.Tracked false: no
// message protocol), since 0 would claim nothing was lost.
func trackedFigure(name, doc string, get func(results.Messages) uint64) *figure {
	return &figure{name: name, kind: kindCount, doc: doc + " (null without the message protocol)",
		get: func(s *summary.Summary) (float64, bool, string) {
			if !s.Messages.Tracked {
				return 0, false, "not measured: the run did not speak the message protocol (deliveries are checked only in the stampede mode)"
			}
			return float64(get(s.Messages)), true, ""
		}}
}

func countFigure(name, doc string, get func(*summary.Summary) uint64) *figure {
	return &figure{name: name, kind: kindCount, doc: doc,
		get: func(s *summary.Summary) (float64, bool, string) { return float64(get(s)), true, "" }}
}

func lookupFigure(name string) *figure {
	for _, f := range figures {
		if f.name == name {
			return f
		}
	}
	return nil
}

// ParseSLOs parses every expression, stopping at the first error.
func ParseSLOs(exprs []string) ([]SLO, error) {
	out := make([]SLO, 0, len(exprs))
	for _, e := range exprs {
		s, err := ParseSLO(e)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// ParseSLO parses one SLO expression; an error is an *SLOError naming the
// column.
func ParseSLO(expr string) (SLO, error) {
	fail := func(at int, format string, a ...any) (SLO, error) {
		return SLO{}, &SLOError{Expr: expr, Col: utf8.RuneCountInString(expr[:at]) + 1, Msg: fmt.Sprintf(format, a...)}
	}
	i := skipSpace(expr, 0)
	if i == len(expr) {
		return fail(i, "empty SLO; write FIGURE OP VALUE, e.g. r99<20s")
	}
	// Figure.
	start := i
	for i < len(expr) && (expr[i] >= 'a' && expr[i] <= 'z' || expr[i] >= '0' && expr[i] <= '9' || expr[i] == '_' || expr[i] >= 'A' && expr[i] <= 'Z') {
		i++
	}
	name := expr[start:i]
	if name == "" {
		return fail(start, "expected a figure name such as r99 or lost, got %q", rest(expr[start:]))
	}
	fig := lookupFigure(strings.ToLower(name))
	if fig == nil {
		return fail(start, "unknown figure %q (known: %s)", name, figureNames())
	}
	// Operator.
	i = skipSpace(expr, i)
	opAt := i
	op := ""
	for _, o := range []string{"<=", ">=", "==", "!=", "<", ">"} {
		if strings.HasPrefix(expr[i:], o) {
			op = o
			break
		}
	}
	switch {
	case op == "" && strings.HasPrefix(expr[i:], "="):
		return fail(opAt, "use == to compare, not =")
	case op == "":
		return fail(opAt, "expected an operator (<, <=, >, >=, ==, !=) after %s, got %q", fig.name, rest(expr[i:]))
	}
	i += len(op)
	// Value: up to the next space.
	i = skipSpace(expr, i)
	valAt := i
	for i < len(expr) && !isSpace(expr[i]) {
		i++
	}
	lit := expr[valAt:i]
	if lit == "" {
		return fail(valAt, "expected a value after %s", op)
	}
	if j := skipSpace(expr, i); j < len(expr) {
		return fail(j, "unexpected %q after the value", rest(expr[j:]))
	}
	s := SLO{Expr: expr, Figure: fig.name, Op: op, fig: fig}
	if msg := s.parseValue(lit); msg != "" {
		return fail(valAt, "%s", msg)
	}
	return s, nil
}

// parseValue sets the limit from lit, or returns why it cannot.
func (s *SLO) parseValue(lit string) string {
	if s.fig.kind == kindDuration {
		if isNumber(lit) {
			if v, err := strconv.ParseFloat(lit, 64); err != nil {
				return fmt.Sprintf("bad number %q", lit)
			} else if v == 0 {
				return s.checkPassable() // 0 needs no unit
			}
			return fmt.Sprintf("%s is a duration: give a unit, e.g. %ss or %sms", s.Figure, lit, lit)
		}
		d, err := time.ParseDuration(lit)
		if err != nil {
			return fmt.Sprintf("bad duration %q: want a number and a unit (ns, us, ms, s, m, h), e.g. 250ms", lit)
		}
		s.dur, s.Limit = d, d.Seconds()
		return s.checkPassable()
	}
	n := 0
	for n < len(lit) && isNumber(lit[n:n+1]) {
		n++
	}
	num, unit := lit[:n], lit[n:]
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		return fmt.Sprintf("bad number %q", lit)
	}
	switch {
	case unit == "":
	case unit == "%" && s.fig.kind == kindShare:
		v /= 100
	case isUnit(unit):
		return fmt.Sprintf("%s is not a duration: drop the unit %q", s.Figure, unit)
	default:
		return fmt.Sprintf("bad number %q", lit)
	}
	if s.fig.kind == kindShare && (v < 0 || v > 1) {
		// A share is 0..1; 99 is 99 %, written so, never guessed (as a
		// duration needs its unit): `>=99` would otherwise always fail.
		if unit == "" && v > 1 && v <= 100 {
			return fmt.Sprintf("%s is a share from 0 to 1: write %s or %s%%, not %s", s.Figure,
				strconv.FormatFloat(v/100, 'g', -1, 64), num, num)
		}
		return fmt.Sprintf("%s is a share from 0 to 1 (or 0%% to 100%%), got %s", s.Figure, lit)
	}
	s.Limit = v
	return s.checkPassable()
}

// checkPassable returns why the SLO can never pass, or "": every figure is
// zero or more, and a share at most 1, so `r99<-5s`, `lost<0` and
// `recovered_share>100%` gate nothing.
func (s *SLO) checkPassable() string {
	v := strconv.FormatFloat(s.Limit, 'g', -1, 64)
	if s.fig.kind == kindDuration {
		v = s.dur.String()
	}
	switch {
	case s.Limit < 0:
		return fmt.Sprintf("%s is never negative: a limit of %s gates nothing", s.Figure, v)
	case s.Limit == 0 && s.Op == "<":
		return fmt.Sprintf("%s is never negative: %s<0 cannot pass; write %s==0", s.Figure, s.Figure, s.Figure)
	case s.fig.kind == kindShare && s.Limit == 1 && s.Op == ">":
		return fmt.Sprintf("%s is at most 1 (100%%): %s>1 cannot pass; write %s>=1", s.Figure, s.Figure, s.Figure)
	}
	return ""
}

// CheckSLOKind returns an *SLOError for the first SLO that gates on a
// figure the kind of run never measures: an HTTP fleet's figures
// (http_p99, goodput) on a WebSocket run, or a WebSocket run's (r99,
// connect_p99) on an HTTP fleet (http true). Such an SLO is null, and
// fails, whatever happens in the run: it is refused before the run.
func CheckSLOKind(slos []SLO, http bool) error {
	for _, s := range slos {
		if s.fig == nil || s.fig.http == http {
			continue
		}
		msg := fmt.Sprintf("%s is a figure of an HTTP fleet run, not of a WebSocket run", s.Figure)
		if http {
			msg = fmt.Sprintf("%s is a figure of a WebSocket run, not of an HTTP fleet run", s.Figure)
		}
		return &SLOError{Expr: s.Expr, Col: strings.Index(strings.ToLower(s.Expr), s.Figure) + 1, Msg: msg}
	}
	return nil
}

// CheckSLORecovery returns an *SLOError for the first SLO that gates on a
// figure of the recovery from an event (r99, recovered_share, herd_peak,
// wasted_attempts, ttr_p99) in a run where nothing is scheduled to
// disconnect the fleet: such a figure is null, and the SLO fails,
// whatever happens, so it is refused before the run. A run against the
// user's server detects outages itself and is not checked.
func CheckSLORecovery(slos []SLO) error {
	for _, s := range slos {
		if s.fig == nil || !s.fig.recovery {
			continue
		}
		return &SLOError{Expr: s.Expr, Col: strings.Index(strings.ToLower(s.Expr), s.Figure) + 1,
			Msg: fmt.Sprintf("%s measures the recovery from a chaos event, and this run has none scheduled: it could only fail", s.Figure)}
	}
	return nil
}

// isNumber reports whether s is made of the characters of a decimal
// number: digits, '.', an exponent and signs. strconv decides the rest.
func isNumber(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') {
			return false
		}
	}
	return s != ""
}

func isUnit(u string) bool {
	switch u {
	case "ns", "us", "µs", "μs", "ms", "s", "m", "h", "%":
		return true
	}
	return false
}

func skipSpace(s string, i int) int {
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	return i
}

func isSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\n' || b == '\r' }

// rest is s shortened for an error message.
func rest(s string) string {
	if len(s) > 16 {
		for i := 16; i > 0; i-- {
			if utf8.RuneStart(s[i]) {
				return s[:i] + "..."
			}
		}
	}
	return s
}

func figureNames() string {
	names := make([]string, len(figures))
	for i, f := range figures {
		names[i] = f.name
	}
	return strings.Join(names, ", ")
}

// String returns the SLO in canonical form: it parses back to the same SLO.
func (s SLO) String() string {
	if s.fig == nil {
		return s.Expr
	}
	v := strconv.FormatFloat(s.Limit, 'g', -1, 64)
	if s.fig.kind == kindDuration {
		v = s.dur.String()
	}
	return s.Figure + s.Op + v
}

// MarshalText writes the SLO as given, so a config holding SLOs records
// them readably.
func (s SLO) MarshalText() ([]byte, error) { return []byte(s.Expr), nil }

// UnmarshalText parses an SLO.
func (s *SLO) UnmarshalText(b []byte) error {
	p, err := ParseSLO(string(b))
	if err != nil {
		return err
	}
	*s = p
	return nil
}

// Eval compares the SLO's figure in sum with its limit.
func (s SLO) Eval(sum *summary.Summary) summary.SLOResult {
	r := summary.SLOResult{Expr: s.Expr, Limit: s.Limit}
	if s.fig == nil {
		r.Detail = "not parsed"
		return r
	}
	if s.fig.kind == kindDuration {
		r.Unit = "s"
	}
	v, ok, why := s.fig.get(sum)
	if !ok {
		r.Detail = s.Figure + " = null: " + why
		return r
	}
	r.Value = &v
	a, b := v, s.Limit
	if s.fig.kind == kindDuration { // compare whole nanoseconds: no float noise
		a, b = math.Round(v*1e9), float64(s.dur)
	}
	switch s.Op {
	case "<":
		r.Pass = a < b
	case "<=":
		r.Pass = a <= b
	case ">":
		r.Pass = a > b
	case ">=":
		r.Pass = a >= b
	case "==":
		r.Pass = a == b
	case "!=":
		r.Pass = a != b
	}
	r.Detail = s.Figure + " = " + s.format(v)
	if !r.Pass {
		switch {
		case s.Op == "!=":
			r.Detail += ", must not be " + s.format(s.Limit)
		case a == b:
			r.Detail += ", at the limit"
		case a > b:
			r.Detail += ", over by " + s.format(v-s.Limit)
		default:
			r.Detail += ", under by " + s.format(s.Limit-v)
		}
	}
	return r
}

// format writes a value of the SLO's figure for a person.
func (s SLO) format(v float64) string {
	switch s.fig.kind {
	case kindDuration:
		// Milliseconds above a second, microseconds above a millisecond:
		// "2.109s", "1.5ms", as a person reads them.
		d := time.Duration(math.Round(v * 1e9))
		switch a := max(d, -d); {
		case a >= time.Second:
			d = d.Round(time.Millisecond)
		case a >= time.Millisecond:
			d = d.Round(time.Microsecond)
		}
		return d.String()
	case kindCount:
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(math.Round(v*1e4)/1e4, 'f', -1, 64)
}

// EvalSLOs evaluates every SLO against sum, in order.
func EvalSLOs(slos []SLO, sum *summary.Summary) []summary.SLOResult {
	out := make([]summary.SLOResult, len(slos))
	for i, s := range slos {
		out[i] = s.Eval(sum)
	}
	return out
}

// httpFigures are the figures of an HTTP fleet run (docs/results.md "HTTP
// fleets"): null in a run without the summary's http object.
func httpFigures() []*figure {
	fig := func(name string, kind figureKind, doc string, get func(h *results.HTTP) (float64, bool, string)) *figure {
		return &figure{name: name, kind: kind, doc: doc + " (HTTP fleet; null otherwise)", http: true,
			get: func(s *summary.Summary) (float64, bool, string) {
				if s.HTTP == nil {
					return 0, false, "not measured: not an HTTP fleet run"
				}
				return get(s.HTTP)
			}}
	}
	count := func(name, doc string, get func(h *results.HTTP) uint64) *figure {
		return fig(name, kindCount, doc, func(h *results.HTTP) (float64, bool, string) { return float64(get(h)), true, "" })
	}
	return []*figure{
		fig("goodput", kindRatio, "logical requests that finally got a 2xx, per second",
			func(h *results.HTTP) (float64, bool, string) { return h.GoodputPerS, true, "" }),
		fig("amplification", kindRatio, "attempts per logical request",
			func(h *results.HTTP) (float64, bool, string) {
				if h.Requests == 0 {
					return 0, false, "not measured: no request was sent"
				}
				return h.Amplification, true, ""
			}),
		count("early_retries", "attempts sooner than the previous answer's Retry-After allowed", func(h *results.HTTP) uint64 { return h.EarlyRetries }),
		count("abandoned", "logical requests given up after their attempts", func(h *results.HTTP) uint64 { return h.Abandoned }),
		count("not_retried_unsafe", "retryable failures of POST/PATCH without an Idempotency-Key, not retried", func(h *results.HTTP) uint64 { return h.NotRetriedUnsafe }),
		count("http_requests", "logical HTTP requests sent", func(h *results.HTTP) uint64 { return h.Requests }),
		count("http_succeeded", "logical HTTP requests that finally got a 2xx", func(h *results.HTTP) uint64 { return h.Succeeded }),
	}
}

// httpLatency returns an HTTP fleet's latency from the scheduled send, or
// per attempt; Count 0 (null) in a run without the http object.
func httpLatency(s *summary.Summary, attempt bool) results.Latency {
	switch {
	case s.HTTP == nil:
		return results.Latency{}
	case attempt:
		return s.HTTP.AttemptLatencyMS
	}
	return s.HTTP.LatencyMS
}
