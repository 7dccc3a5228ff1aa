package backoff

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A library preset is a client library's own default reconnect rule, named
// in a spec by the preset's name (socketio, signalr, phoenix, ...) and
// tuned with the library's own option names:
//
//	socketio:reconnectionDelay=2s,reconnectionDelayMax=10s,randomizationFactor=0.3
//	signalr:delays=0s|5s|20s
//
// A preset is a Library value inside a Policy; the rules themselves are in
// presets.go, each naming the library, version and file it was read from.

// maxOptions and maxList bound a preset's options and its one list option,
// so a Library stays a comparable value.
const (
	maxOptions = 8
	maxList    = 16
)

// Library is a client library's reconnect rule chosen by name, with the
// options a spec gave. The zero value (no Name) means no preset: the
// policy is one of stampede's own kinds. It is comparable, so
// Parse(p.String()) == p holds for presets too.
type Library struct {
	// Name is the preset's name as written in a spec ("socketio").
	Name  string
	vals  [maxOptions]float64 // option values in the preset's order; durations in ns
	set   uint16              // bit i: option i was given
	list  [maxList]time.Duration
	nlist uint8
}

// Source names where a preset's rule was read: the package, its version and
// the file inside the published package (or repository).
type Source struct {
	// Library is the package name as its registry spells it.
	Library string `json:"library"`
	// Version is the exact version whose source was read.
	Version string `json:"version"`
	// File is the file the rule is in.
	File string `json:"file"`
}

// optKind is how an option's value is written.
type optKind uint8

const (
	optDur  optKind = iota // a Go duration: 2s, 500ms
	optSecs                // a number of seconds: 2, 0.5
	optNum                 // a number
	optInt                 // a whole number
	optList                // durations separated by |: 0s|2s|10s
	optEnum                // one of the option's names
)

// option is one option of a preset.
type option struct {
	name     string
	kind     optKind
	def      float64  // default (ns for optDur, the index for optEnum)
	min, max float64  // allowed range of the value, inclusive
	enum     []string // names for optEnum
}

// preset is one library's rule.
type preset struct {
	name   string
	source Source
	// rule is the rule in one line, for the docs and the preview.
	rule    string
	opts    []option
	defList []time.Duration // the list option's default
	// next decides one retry; see Policy.Next.
	next func(l *Library, d retryDraws, c Conn) Decision
	// resets says whether a connection up for the given time resets the
	// attempt count; nil means every connection does.
	resets func(l *Library, up time.Duration) bool
	// limit is the attempts after which the client gives up; 0 = never.
	limit func(l *Library) int
	// protocol is the session protocol the rule needs ("actioncable"),
	// empty for none.
	protocol string
}

// ClientsPerProcess is the option, on presets that draw once per process,
// that says how many clients share one process's retryDraws.
const ClientsPerProcess = "clientsPerProcess"

func (pr *preset) index(name string) int {
	return slices.IndexFunc(pr.opts, func(o option) bool { return o.name == name })
}

func (pr *preset) optionNames() string {
	names := make([]string, len(pr.opts))
	for i, o := range pr.opts {
		names[i] = o.name
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// lookup returns the preset of a name.
func lookup(name string) *preset {
	for _, pr := range presets {
		if pr.name == name {
			return pr
		}
	}
	return nil
}

// Presets lists the names of the library presets, in the order the docs
// list them.
func Presets() []string {
	out := make([]string, len(presets))
	for i, pr := range presets {
		out[i] = pr.name
	}
	return out
}

// IsPreset reports whether name is a library preset's name.
func IsPreset(name string) bool { return lookup(name) != nil }

// Source returns where the preset's rule was read; ok is false for a
// policy that is not a preset.
func (p Policy) Source() (s Source, ok bool) {
	if pr := lookup(p.Library.Name); pr != nil {
		return pr.source, true
	}
	return Source{}, false
}

// Rule returns the preset's rule in one line, or "" for a policy that is
// not a preset.
func (p Policy) Rule() string {
	if pr := lookup(p.Library.Name); pr != nil {
		return pr.rule
	}
	return ""
}

// Protocol returns the session protocol the policy needs to behave as its
// library does ("actioncable" for ActionCable's polling), or "".
func (p Policy) Protocol() string {
	if pr := lookup(p.Library.Name); pr != nil {
		return pr.protocol
	}
	return ""
}

// value returns option name's value: the given one, else the default.
func (l *Library) value(name string) float64 {
	pr := lookup(l.Name)
	i := pr.index(name)
	if l.set&(1<<i) != 0 {
		return l.vals[i]
	}
	return pr.opts[i].def
}

// Option returns option name's value as a spec writes it (2s, 0.5): the
// given one, else the default; "" for a list option or a name the preset
// does not have.
func (l Library) Option(name string) string {
	pr := lookup(l.Name)
	if pr == nil {
		return ""
	}
	i := pr.index(name)
	if i < 0 || pr.opts[i].kind == optList {
		return ""
	}
	return pr.opts[i].format(l.value(name))
}

// given reports whether option name was given.
func (l *Library) given(name string) bool {
	return l.set&(1<<lookup(l.Name).index(name)) != 0
}

// dur returns a duration option (optDur in ns, optSecs in seconds).
func (l *Library) dur(name string) time.Duration {
	pr := lookup(l.Name)
	v := l.value(name)
	if pr.opts[pr.index(name)].kind == optSecs {
		return saturate(v * float64(time.Second))
	}
	return time.Duration(v)
}

// ms returns a duration option in milliseconds, as JavaScript holds it.
func (l *Library) ms(name string) float64 { return float64(l.dur(name)) / float64(time.Millisecond) }

// items returns the list option: the given list, else the default.
func (l *Library) items() []time.Duration {
	if l.nlist > 0 {
		return l.list[:l.nlist]
	}
	return lookup(l.Name).defList
}

// fromMS converts JavaScript milliseconds to a Duration.
func fromMS(ms float64) time.Duration { return saturate(ms * float64(time.Millisecond)) }

// parseLibrary parses a preset's options (the spec after "NAME:").
func parseLibrary(spec string, pr *preset, rest string, hasParams bool) (Policy, error) {
	fail := func(key string, off int, err error) (Policy, error) {
		return Policy{}, &SpecError{Spec: spec, Key: key, Offset: off, Err: err}
	}
	l := Library{Name: pr.name}
	if !hasParams || strings.TrimSpace(rest) == "" {
		return Policy{Library: l}, nil
	}
	off := len(pr.name) + 1
	for _, item := range strings.Split(rest, ",") {
		itemOff := off
		off += len(item) + 1
		keyText, val, hasEq := strings.Cut(item, "=")
		key, val := strings.TrimSpace(keyText), strings.TrimSpace(val)
		i := pr.index(key)
		switch {
		case key == "" && !hasEq:
			return fail("", itemOff, fmt.Errorf("empty item at offset %d", itemOff))
		case i < 0:
			return fail("", itemOff, fmt.Errorf("unknown option %q of %s at offset %d (want one of %s)", key, pr.name, itemOff, pr.optionNames()))
		case !hasEq:
			return fail(key, itemOff, fmt.Errorf("no value; want %s=VALUE", key))
		case l.set&(1<<i) != 0:
			return fail(key, itemOff, fmt.Errorf("given twice"))
		}
		if err := l.setOption(pr.opts[i], i, val); err != nil {
			return fail(key, itemOff, err)
		}
	}
	return Policy{Library: l}, nil
}

// setOption parses and checks one option's value.
func (l *Library) setOption(o option, i int, val string) error {
	var v float64
	switch o.kind {
	case optDur:
		d, err := time.ParseDuration(val)
		if err != nil {
			return err
		}
		v = float64(d)
	case optNum, optSecs:
		f, err := parseNumber(val)
		if err != nil {
			return err
		}
		v = f
	case optInt:
		n, err := strconv.Atoi(val)
		if err != nil {
			return fmt.Errorf("want a whole number, got %q", val)
		}
		v = float64(n)
	case optEnum:
		k := slices.Index(o.enum, val)
		if k < 0 {
			return fmt.Errorf("want one of %s, got %q", strings.Join(o.enum, ", "), val)
		}
		v = float64(k)
	case optList:
		if err := l.setList(val); err != nil {
			return err
		}
		l.set |= 1 << i
		return nil
	}
	if v < o.min || v > o.max || math.IsNaN(v) {
		return fmt.Errorf("must be within %s..%s, got %s", o.format(o.min), o.format(o.max), val)
	}
	l.vals[i], l.set = v, l.set|1<<i
	return nil
}

// setList parses the list option: durations separated by |.
func (l *Library) setList(val string) error {
	parts := strings.Split(val, "|")
	if len(parts) > maxList {
		return fmt.Errorf("at most %d delays, got %d", maxList, len(parts))
	}
	for k, s := range parts {
		d, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil {
			return err
		}
		if d < 0 || d > MaxInitial {
			return fmt.Errorf("delay %d must be within 0s..%s, got %s", k+1, specDuration(MaxInitial), s)
		}
		l.list[k] = d
	}
	l.nlist = uint8(len(parts))
	return nil
}

// format writes an option's value as a spec holds it.
func (o option) format(v float64) string {
	switch o.kind {
	case optDur:
		return specDuration(time.Duration(v))
	case optEnum:
		return o.enum[int(v)]
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// String renders the preset as its canonical spec: the name, then every
// option given, in the preset's order.
func (l Library) String() string {
	pr := lookup(l.Name)
	if pr == nil {
		return l.Name
	}
	var b strings.Builder
	b.WriteString(l.Name)
	sep := byte(':')
	for i, o := range pr.opts {
		if l.set&(1<<i) == 0 {
			continue
		}
		b.WriteByte(sep)
		sep = ','
		b.WriteString(o.name + "=")
		if o.kind != optList {
			b.WriteString(o.format(l.vals[i]))
			continue
		}
		for k, d := range l.list[:l.nlist] {
			if k > 0 {
				b.WriteByte('|')
			}
			b.WriteString(specDuration(d))
		}
	}
	return b.String()
}

// MarshalText writes the preset as its canonical spec.
func (l Library) MarshalText() ([]byte, error) { return []byte(l.String()), nil }

// UnmarshalText reads a preset's spec; the empty text is no preset.
func (l *Library) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*l = Library{}
		return nil
	}
	p, err := Parse(string(b))
	if err != nil {
		return err
	}
	if p.Library.Name == "" {
		return fmt.Errorf("backoff: %q is not a library preset", b)
	}
	*l = p.Library
	return nil
}
