package chaos

import (
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/stampede-dev/stampede/fault"
)

// eventWords lists the event words in the order error messages name them.
const eventWords = "restart, stall, backlog, accept-rate, reject, proxy"

// Limits on a schedule's size. No useful schedule comes near them; they
// keep a hostile or mistaken file from costing more than a moment to parse
// and check, and its errors from echoing it back at length.
const (
	// MaxSourceBytes bounds the text Parse accepts, comments included.
	MaxSourceBytes = 4 << 20
	// MaxEntries bounds the entries of a schedule (Parse and Check).
	MaxEntries = 10_000
	// maxWordBytes bounds one word: the longest valid word, such as
	// "bandwidth=1000.000001kbit/s", is far shorter.
	maxWordBytes = 64
	// maxEntryBytes bounds one entry's text, from its first word to its last.
	maxEntryBytes = 512
	// clipRunes is how much of a word or an entry an error echoes.
	clipRunes = 60
)

// clip shortens s for an error message: its first clipRunes characters and
// "...", or s itself when it is no longer than that.
func clip(s string) string {
	if len(s) <= clipRunes {
		return s
	}
	n := 0
	for i := range s {
		if n == clipRunes {
			return s[:i] + "..."
		}
		n++
	}
	return s
}

// ReadSource reads a schedule file (--chaos-file) for Parse, refusing one
// longer than MaxSourceBytes without reading the rest of it.
func ReadSource(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxSourceBytes+1))
	if err != nil {
		return "", err
	}
	if len(b) > MaxSourceBytes {
		return "", fmt.Errorf("%s: more than %d bytes: a schedule has at most %d", path, MaxSourceBytes, MaxSourceBytes)
	}
	return string(b), nil
}

// Parse parses a chaos schedule (the text of --chaos or of a --chaos-file).
// Every error is a *SyntaxError naming the line and column, what was
// expected and what was found. An empty schedule, or one of only comments,
// is valid and has no entries. The grammar is in docs/chaos.md. A schedule
// longer than MaxSourceBytes, with more than MaxEntries entries, or with a
// word or an entry longer than any valid one is refused; its cost is linear
// in its length, and its errors echo at most a short prefix of a word.
func Parse(src string) (*Schedule, error) {
	if len(src) > MaxSourceBytes {
		return nil, &SyntaxError{Line: 1, Col: 1, Msg: fmtSize(len(src))}
	}
	s := &Schedule{}
	for i, ew := range scan(src, MaxEntries) {
		if i == MaxEntries {
			return nil, errorf(ew.words[0], "more than %d entries: a schedule has at most %d", MaxEntries, MaxEntries)
		}
		if err := checkSize(src, ew); err != nil {
			return nil, err
		}
		p := &parser{src: src, words: ew.words, end: ew.end}
		e, err := p.entry()
		if err != nil {
			return nil, err
		}
		s.Entries = append(s.Entries, e)
	}
	return s, nil
}

// fmtSize is the message for a schedule longer than MaxSourceBytes.
func fmtSize(n int) string {
	return "schedule of " + strconv.Itoa(n) + " bytes: a schedule has at most " + strconv.Itoa(MaxSourceBytes) + " bytes"
}

// checkSize refuses a word or an entry longer than any valid one, before
// the parser echoes it in a message.
func checkSize(src string, ew entryWords) error {
	for _, w := range ew.words {
		if len(w.text) > maxWordBytes {
			return errorf(w, "word of %d bytes %q: a word has at most %d", len(w.text), clip(w.text), maxWordBytes)
		}
	}
	first, last := ew.words[0], ew.words[len(ew.words)-1]
	if n := last.off + len(last.text) - first.off; n > maxEntryBytes {
		return errorf(first, "entry of %d bytes %q: an entry has at most %d", n, clip(src[first.off:last.off+len(last.text)]), maxEntryBytes)
	}
	return nil
}

// parser reads the words of one entry.
type parser struct {
	src   string
	words []token
	end   token // where the entry ends, for "found end of entry"
	pos   int   // index of the next word
	event int   // index of the event word
}

// next returns the next word, or false at the end of the entry.
func (p *parser) next() (token, bool) {
	if p.pos >= len(p.words) {
		return p.end, false
	}
	p.pos++
	return p.words[p.pos-1], true
}

// peek returns the text of the next word, "" at the end of the entry.
func (p *parser) peek() string {
	if p.pos >= len(p.words) {
		return ""
	}
	return p.words[p.pos].text
}

// span is the source text of words[from:to], "" when empty.
func (p *parser) span(from, to int) string {
	if to <= from {
		return ""
	}
	last := p.words[to-1]
	return p.src[p.words[from].off : last.off+len(last.text)]
}

// context is the event's text before the word next() just returned (all of
// it when next() found the end of the entry), for "after ..." in messages.
func (p *parser) context(ok bool) string {
	end := p.pos
	if ok {
		end--
	}
	return clip(p.span(p.event, end))
}

// entry parses "timing event".
func (p *parser) entry() (Entry, error) {
	first, last := p.words[0], p.words[len(p.words)-1]
	e := Entry{Line: first.line, Col: first.col, Text: p.src[first.off : last.off+len(last.text)]}
	var err error
	if e.Timing, err = p.timing(); err != nil {
		return e, err
	}
	if e.Event, err = p.eventClause(); err != nil {
		return e, err
	}
	return e, nil
}

// timing parses "at T" or "every T [from F] [until U]".
func (p *parser) timing() (Timing, error) {
	var t Timing
	w, _ := p.next()
	switch w.text {
	case "at":
		at, ok := p.next()
		d, err := duration(at, ok, "at", nonNegative)
		t.At = d
		return t, err
	case "every":
		every, ok := p.next()
		d, err := duration(every, ok, "every", positive)
		if err != nil {
			return t, err
		}
		t.Repeat, t.Every, t.From = true, d, d
		var from, until *token
		for p.peek() == "from" || p.peek() == "until" {
			kw, _ := p.next()
			seen := &from
			if kw.text == "until" {
				seen = &until
			}
			if *seen != nil {
				return t, errorf(kw, "duplicate %q: already given at col %d", kw.text, (*seen).col)
			}
			*seen = &kw
			v, ok := p.next()
			bound := nonNegative
			if kw.text == "until" {
				bound = positive
			}
			d, err := duration(v, ok, kw.text, bound)
			if err != nil {
				return t, err
			}
			if kw.text == "from" {
				t.From = d
			} else {
				t.Until = d
			}
		}
		if until != nil && t.Until <= t.From {
			return t, errorf(*until, "expected an \"until\" later than the first firing at %v, found \"until %v\": the entry would never fire", t.From, t.Until)
		}
		t.At = t.From
		return t, nil
	}
	return t, errorf(w, "expected \"at\" or \"every\" to start an entry, found %q", w.text)
}

// eventClause parses the event after the timing, and checks that nothing
// follows it.
func (p *parser) eventClause() (Event, error) {
	p.event = p.pos
	w, ok := p.next()
	if !ok {
		return Event{}, errorf(w, "expected an event (%s) after %q, found end of entry", eventWords, clip(p.span(0, p.event)))
	}
	var (
		ev  Event
		err error
	)
	switch w.text {
	case "restart":
		ev, err = p.restart()
	case "stall":
		ev, err = p.stall()
	case "backlog":
		ev, err = p.backlog()
	case "accept-rate":
		ev, err = p.acceptRate()
	case "reject":
		ev, err = p.reject()
	case "proxy":
		ev, err = p.proxy()
	default:
		return ev, errorf(w, "unknown event %q: expected one of %s", w.text, eventWords)
	}
	if err != nil {
		return ev, err
	}
	if t, ok := p.next(); ok {
		want := `";" or a new line`
		if (ev.Kind == Backlog || ev.Kind == AcceptRate) && ev.For == 0 {
			want = `"for", ` + want
		}
		return ev, errorf(t, "unexpected %q after %q: expected %s", t.text, p.context(ok), want)
	}
	return ev, nil
}

// forClause parses an optional (or, if required, mandatory) "for D".
func (p *parser) forClause(required bool) (time.Duration, error) {
	if p.peek() != "for" {
		if !required {
			return 0, nil
		}
		t, ok := p.next()
		return 0, errorf(t, "expected \"for\" and a duration after %q, found %s", p.context(ok), found(t, ok))
	}
	p.next()
	t, ok := p.next()
	return duration(t, ok, "for", positive)
}

// keyed remembers the key=value words (and bare option words) an event has
// seen, to reject duplicates.
type keyed map[string]token

// once records key at t, or fails if the event already has it.
func (k keyed) once(key string, t token) error {
	if prev, dup := k[key]; dup {
		return errorf(t, "duplicate %q: already given at col %d", key, prev.col)
	}
	k[key] = t
	return nil
}

// needsValue is the error for a key written without "=value".
func needsValue(t token, example string) error {
	return errorf(t, "expected %q followed by its value, as in %s (no spaces), found %q", t.text+"=", example, t.text)
}

// restart parses
// "restart [graceful|abrupt|kill] [rolling | procs=all|one|rolling]
// [interval=D] [down=D] [shape=closed|stall] [spread=D] [hint=D]".
func (p *parser) restart() (Event, error) {
	r := &restartOpts{ev: Event{Kind: Restart, Mode: ModeAbrupt, Procs: ProcsAll, Shape: ShapeClosed}, seen: keyed{}}
	for {
		t, ok := p.next()
		if !ok {
			break
		}
		var err error
		if key, _, hasValue := strings.Cut(t.text, "="); hasValue {
			err = r.option(t, key)
		} else {
			err = r.word(t)
		}
		if err != nil {
			return r.ev, err
		}
	}
	return r.finish()
}

// restartOpts is a restart being parsed: the event so far, and the words
// that chose its mode and its processes and set its keys, for errors that
// point at them.
type restartOpts struct {
	ev          Event
	seen        keyed
	mode, procs *token
}

// unknownRestart is the error for a word a restart does not take.
func unknownRestart(t token, word string) error {
	return errorf(t, "unknown restart option %q: expected graceful, abrupt, kill, rolling, procs=, interval=, down=, shape=, spread= or hint=", word)
}

// word takes a restart option written without a value: a mode or
// "rolling".
func (r *restartOpts) word(t token) error {
	switch t.text {
	case ModeGraceful, ModeAbrupt, ModeKill:
		if r.mode != nil {
			if r.mode.text == t.text {
				return errorf(t, "duplicate %q: already given at col %d", t.text, r.mode.col)
			}
			return errorf(t, "restart mode given twice: %q, then %q", r.mode.text, t.text)
		}
		r.mode, r.ev.Mode = &t, t.text
		return nil
	case ProcsRolling:
		if err := setProcs(&r.procs, t); err != nil {
			return err
		}
		r.ev.Procs = ProcsRolling
		return nil
	case "procs":
		return needsValue(t, "procs=one")
	case "interval", "down", "spread", "hint":
		return needsValue(t, t.text+"=1s")
	case "shape":
		return needsValue(t, "shape=stall")
	}
	return unknownRestart(t, t.text)
}

// option takes a restart option written key=value.
func (r *restartOpts) option(t token, key string) error {
	v := value(t, key)
	switch key {
	case "procs":
		switch v.text {
		case ProcsAll, ProcsOne, ProcsRolling:
		default:
			return errorf(v, "expected all, one or rolling after \"procs=\", found %s", quoteValue(v))
		}
		if err := setProcs(&r.procs, t); err != nil {
			return err
		}
		r.ev.Procs = v.text
		return nil
	case "interval", "down", "shape", "spread", "hint":
	default:
		return unknownRestart(t, key+"=")
	}
	if err := r.seen.once(key+"=", t); err != nil {
		return err
	}
	var err error
	switch key {
	case "interval":
		r.ev.Interval, err = duration(v, true, "interval=", positive)
	case "down":
		r.ev.Down, err = duration(v, true, "down=", nonNegative)
	case "spread":
		r.ev.Spread, err = duration(v, true, "spread=", positive)
	case "hint":
		r.ev.Hint, err = duration(v, true, "hint=", positive)
	case "shape":
		if v.text != ShapeClosed && v.text != ShapeStall {
			err = errorf(v, "expected closed or stall after \"shape=\", found %s", quoteValue(v))
		}
		r.ev.Shape = v.text
	}
	return err
}

// finish checks the options that need another (interval= a rolling
// restart, spread= and hint= a graceful one) and fills in the rolling
// interval's default.
func (r *restartOpts) finish() (Event, error) {
	ev := r.ev
	if t, ok := r.seen["interval="]; ok && ev.Procs != ProcsRolling {
		return ev, errorf(t, "\"interval=\" needs a rolling restart: add \"rolling\", or drop %q", t.text)
	}
	for _, key := range []string{"spread=", "hint="} {
		if t, ok := r.seen[key]; ok && ev.Mode != ModeGraceful {
			return ev, errorf(t, "%q needs a graceful restart (it shapes the close frames, which only a graceful stop sends): add \"graceful\"", key)
		}
	}
	if ev.Procs == ProcsRolling && ev.Interval == 0 {
		ev.Interval = DefaultRollingInterval
	}
	return ev, nil
}

// setProcs records which processes restart, given as word t,
// rejecting a second, conflicting or repeated choice.
func setProcs(prev **token, t token) error {
	if *prev != nil {
		first := (*prev).text
		switch {
		case first == t.text:
			return errorf(t, "duplicate %q: already given at col %d", t.text, (*prev).col)
		case procsOf(first) == procsOf(t.text):
			return errorf(t, "duplicate %q: %q at col %d says the same", t.text, first, (*prev).col)
		}
		return errorf(t, "%q conflicts with %q: a restart has one choice of processes", t.text, first)
	}
	*prev = &t
	return nil
}

// procsOf is the choice of processes a word makes: "rolling" or the value
// of "procs=".
func procsOf(word string) string {
	return strings.TrimPrefix(word, "procs=")
}

// stall parses "stall D" (or "stall for D").
func (p *parser) stall() (Event, error) {
	ev := Event{Kind: Stall}
	after := "stall"
	if p.peek() == "for" {
		p.next()
		after = "for"
	}
	t, ok := p.next()
	var err error
	ev.For, err = duration(t, ok, after, positive)
	return ev, err
}

// backlog parses "backlog N [for D]".
func (p *parser) backlog() (Event, error) {
	ev := Event{Kind: Backlog}
	t, ok := p.next()
	n, err := strconv.Atoi(t.text)
	switch {
	case !ok || !isDigits(strings.TrimPrefix(t.text, "-")):
		return ev, errorf(t, "expected a backlog (a number of connections) after \"backlog\", found %s", found(t, ok))
	case err != nil || n < 1 || n > math.MaxInt32:
		return ev, errorf(t, "expected a backlog from 1 to %d after \"backlog\", found %q", math.MaxInt32, t.text)
	}
	ev.N = n
	ev.For, err = p.forClause(false)
	return ev, err
}

// acceptRate parses "accept-rate R/s|unlimited|0 [for D]".
func (p *parser) acceptRate() (Event, error) {
	ev := Event{Kind: AcceptRate}
	t, ok := p.next()
	if !ok {
		return ev, errorf(t, "expected a rate like 100/s, or unlimited, after \"accept-rate\", found end of entry")
	}
	if t.text != "unlimited" && t.text != "0" {
		r, msg := parseRate(t.text)
		if msg != "" {
			return ev, errorf(t, "%s after \"accept-rate\", found %q", msg, t.text)
		}
		ev.Rate = r
	}
	var err error
	ev.For, err = p.forClause(false)
	return ev, err
}

// reject parses "reject STATUS [retry-after=D] for D".
func (p *parser) reject() (Event, error) {
	ev := Event{Kind: Reject}
	t, ok := p.next()
	status, err := strconv.Atoi(t.text)
	if !ok || err != nil || !isDigits(t.text) || status < 400 || status > 599 {
		return ev, errorf(t, "expected an HTTP status from 400 to 599 (such as 503 or 429) after \"reject\", found %s", found(t, ok))
	}
	ev.Status = status
	if key, _, _ := strings.Cut(p.peek(), "="); key == "retry-after" {
		t, _ := p.next()
		if t.text == "retry-after" {
			return ev, needsValue(t, "retry-after=2s")
		}
		v := value(t, key)
		if ev.RetryAfter, err = duration(v, true, "retry-after=", positive); err != nil {
			return ev, err
		}
		if ev.RetryAfter%time.Second != 0 {
			return ev, errorf(v, "expected whole seconds after \"retry-after=\" (the header carries seconds), found %q", v.text)
		}
	}
	ev.For, err = p.forClause(true)
	return ev, err
}

// proxyFaults names the proxy faults for messages.
const proxyFaults = "latency=, jitter=, bandwidth=, loss=, reset or blackhole"

// proxy parses "proxy FAULT... for D".
func (p *parser) proxy() (Event, error) {
	ev := Event{Kind: ProxyEvent}
	f := &ev.Proxy
	seen := keyed{}
	var order []token // faults in source order, for exclusivity messages
	for p.peek() != "for" {
		t, ok := p.next()
		if !ok {
			if len(order) == 0 {
				return ev, errorf(t, "expected a proxy fault (%s) after \"proxy\", found end of entry", proxyFaults)
			}
			return ev, errorf(t, "expected \"for\" and a duration after %q, found end of entry", p.context(ok))
		}
		key, _, hasValue := strings.Cut(t.text, "=")
		switch {
		case !hasValue && (key == "reset" || key == "blackhole"):
			if err := seen.once(key, t); err != nil {
				return ev, err
			}
			f.Reset = f.Reset || key == "reset"
			f.Blackhole = f.Blackhole || key == "blackhole"
			order = append(order, t)
			continue
		case !hasValue && (key == "latency" || key == "jitter"):
			return ev, needsValue(t, key+"=100ms")
		case !hasValue && key == "bandwidth":
			return ev, needsValue(t, "bandwidth=1MB/s")
		case !hasValue && key == "loss":
			return ev, needsValue(t, "loss=1%")
		case hasValue && (key == "latency" || key == "jitter" || key == "bandwidth" || key == "loss"):
		default:
			return ev, errorf(t, "unknown proxy fault %q: expected %s", t.text, proxyFaults)
		}
		if err := seen.once(key+"=", t); err != nil {
			return ev, err
		}
		order = append(order, t)
		v := value(t, key)
		var err error
		switch key {
		case "latency":
			f.Latency, err = duration(v, true, "latency=", positive)
		case "jitter":
			f.Jitter, err = duration(v, true, "jitter=", positive)
		case "bandwidth":
			var msg string
			if f.Bandwidth, msg = parseBandwidth(v.text); msg != "" {
				err = errorf(v, "%s after \"bandwidth=\", found %s", msg, quoteValue(v))
			}
		case "loss":
			var msg string
			if f.Loss, msg = parsePercent(v.text); msg != "" {
				err = errorf(v, "%s after \"loss=\", found %s", msg, quoteValue(v))
			}
		}
		if err != nil {
			return ev, err
		}
	}
	if len(order) == 0 {
		t, _ := p.next()
		return ev, errorf(t, "expected a proxy fault (%s) after \"proxy\", found \"for\"", proxyFaults)
	}
	if err := checkFaults(f, seen, order); err != nil {
		return ev, err
	}
	var err error
	ev.For, err = p.forClause(true)
	return ev, err
}

// checkFaults rejects fault sets that cannot be applied together.
func checkFaults(f *fault.Set, seen keyed, order []token) error {
	if len(order) > 1 {
		for _, excl := range []string{"reset", "blackhole"} {
			if t, ok := seen[excl]; ok {
				other := order[0]
				if other.text == excl {
					other = order[1]
				}
				return errorf(t, "%q cannot be combined with other faults (it ends all traffic), found %q too", excl, other.text)
			}
		}
	}
	if t, ok := seen["jitter="]; ok {
		switch {
		case f.Latency == 0:
			return errorf(t, "\"jitter=\" varies a latency: expected \"latency=\" too, found none")
		case f.Jitter > f.Latency:
			return errorf(t, "expected a jitter of at most latency=%v (a delay cannot be negative), found %q", f.Latency, t.text)
		}
	}
	return nil
}
