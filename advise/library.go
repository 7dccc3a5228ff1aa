package advise

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/stampede-dev/stampede/backoff"
)

// libraryAdvice is what advise knows of one client library's options: the
// values a search may give each option (a grid sized to the herd), or,
// for a library whose options cannot spread a fleet, why not.
type libraryAdvice struct {
	// name is the backoff preset's name.
	name string
	// grid returns, for an outage and a physical bound, each option's
	// values in the preset's option order; nil when the library cannot
	// express a policy that spreads its fleet.
	grid func(outage, bound time.Duration) []optionValues
	// snippet renders a preset of this library as the code a user pastes.
	snippet func(p backoff.Policy) string
	// cannot says why the library's options cannot spread the fleet.
	cannot string
}

// optionValues is one option of a preset and the values a search tries.
type optionValues struct {
	name   string
	values []string
}

// libraries are the libraries `advise --library` takes.
var libraries = []libraryAdvice{
	{
		name: "socketio",
		grid: func(o, b time.Duration) []optionValues {
			return []optionValues{
				{"reconnectionDelay", durs(250*time.Millisecond, 500*time.Millisecond, time.Second, 2*time.Second, o, o+b/2, b)},
				{"reconnectionDelayMax", durs(5*time.Second, b, 2*b, 10*time.Second, 30*time.Second, 60*time.Second)},
				{"randomizationFactor", []string{"0.5", "0.8", "1"}},
			}
		},
		snippet: func(p backoff.Policy) string {
			return fmt.Sprintf("io(URL, {\n  reconnectionDelay: %d,\n  reconnectionDelayMax: %d,\n  randomizationFactor: %s,\n})",
				msOf(p, "reconnectionDelay"), msOf(p, "reconnectionDelayMax"), p.Library.Option("randomizationFactor"))
		},
	},
	{
		name: "centrifuge",
		grid: func(o, b time.Duration) []optionValues {
			return []optionValues{
				{"minReconnectDelay", durs(250*time.Millisecond, 500*time.Millisecond, time.Second, 2*time.Second, o, b)},
				{"maxReconnectDelay", durs(b, 2*b, 10*time.Second, 20*time.Second, 60*time.Second)},
			}
		},
		snippet: func(p backoff.Policy) string {
			return fmt.Sprintf("new Centrifuge(URL, {\n  minReconnectDelay: %d,\n  maxReconnectDelay: %d,\n})",
				msOf(p, "minReconnectDelay"), msOf(p, "maxReconnectDelay"))
		},
	},
	{
		name:   "signalr",
		cannot: "withAutomaticReconnect takes one delay array for every client: no array spreads a fleet (a custom IRetryPolicy with a random delay would)",
	},
	{
		name:   "mqttjs",
		cannot: "mqtt.js retries every reconnectPeriod with no backoff and no jitter: no reconnectPeriod spreads a fleet",
	},
	{
		name:   "pusher",
		cannot: "pusher-js retries 1 s after a drop and has no option for it: nothing on the client spreads a fleet",
	},
}

// Libraries returns the names `advise --library` takes.
func Libraries() []string {
	var out []string
	for _, l := range libraries {
		out = append(out, l.name)
	}
	return out
}

// libraryOf returns name's advice, or nil.
func libraryOf(name string) *libraryAdvice {
	for i := range libraries {
		if libraries[i].name == name {
			return &libraries[i]
		}
	}
	return nil
}

// durs formats durations as a preset's option values, rounded to 10 ms.
func durs(ds ...time.Duration) []string {
	var out []string
	for _, d := range ds {
		s := max(d.Round(10*time.Millisecond), 10*time.Millisecond).String()
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// msOf is a duration option of p in whole milliseconds, as JavaScript
// options hold it.
func msOf(p backoff.Policy, name string) int64 {
	d, _ := time.ParseDuration(p.Library.Option(name))
	return d.Milliseconds()
}

// libraryPolicy is the preset with the grid's values at idx.
func (l *libraryAdvice) libraryPolicy(g []optionValues, idx []int) backoff.Policy {
	var kv []string
	for i, o := range g {
		kv = append(kv, o.name+"="+o.values[idx[i]])
	}
	return backoff.MustParse(l.name + ":" + strings.Join(kv, ","))
}

// libraryDraws returns up to n policies of the grid not yet seen: the
// library's default first, then random points.
func (l *libraryAdvice) libraryDraws(g []optionValues, rng *rand.Rand, seen map[string]bool, n int) []backoff.Policy {
	var out []backoff.Policy
	total := 1
	for _, o := range g {
		total *= len(o.values)
	}
	for tries := 0; len(out) < n && tries < 20*n; tries++ {
		idx := make([]int, len(g))
		for i, o := range g {
			idx[i] = rng.IntN(len(o.values))
		}
		p := l.libraryPolicy(g, idx)
		if s := p.String(); !seen[s] {
			seen[s] = true
			out = append(out, p)
		}
		if len(seen) >= total+2 {
			break
		}
	}
	return out
}

// libraryNeighbours returns the grid points one step from p's in one
// option.
func (l *libraryAdvice) libraryNeighbours(g []optionValues, p backoff.Policy) []backoff.Policy {
	idx := make([]int, len(g))
	for i, o := range g {
		idx[i] = slices.Index(o.values, p.Library.Option(o.name))
		if idx[i] < 0 {
			return nil
		}
	}
	var out []backoff.Policy
	for i, o := range g {
		for _, step := range []int{-1, 1} {
			if j := idx[i] + step; j >= 0 && j < len(o.values) {
				q := slices.Clone(idx)
				q[i] = j
				out = append(out, l.libraryPolicy(g, q))
			}
		}
	}
	return out
}

// Snippet is the recommendation as the code a user of the library pastes
// (a socket.io-client options object), or, when the library's options
// cannot spread a fleet, why not; ok is false without a library.
func (r *Result) Snippet() (snippet string, ok bool) {
	l := libraryOf(r.Config.Library)
	switch {
	case l == nil:
		return "", false
	case l.grid == nil:
		return l.cannot + r.bestMitigation(), true
	}
	return l.snippet(r.Recommended().Policy), true
}

// bestMitigation names the server-side mitigation that brings the current
// policy's fleet back soonest (R99), in words, or "".
func (r *Result) bestMitigation() string {
	var best *Mitigated
	for i, m := range r.Mitigations {
		if m.Recovered() && (best == nil || m.R99 < best.R99) {
			best = &r.Mitigations[i]
		}
	}
	if best == nil {
		return ""
	}
	now := "never"
	if r.Current.Recovered() {
		now = fmt.Sprintf("%.2fs", r.Current.R99)
	}
	return fmt.Sprintf(".\nWhat helps this fleet most is on the server: %s (R99 %.2fs, against %s as it is)", best.Mitigation, best.R99, now)
}
