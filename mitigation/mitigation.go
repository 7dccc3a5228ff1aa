// Package mitigation names what a server can do for a reconnecting fleet
// it cannot change: ramp its admissions after a restart, shed load with a
// hint, spread a graceful restart's closes, or tell each client when to
// come back. A Mitigation is plain data that changes a storm's server spec
// and chaos schedule; the bundled target (package target), the simulator
// (package sim) and the bench and advise commands all read the same one,
// so a mitigation measured with real sockets and one predicted are the
// same change.
package mitigation

import (
	"math"
	"time"

	"github.com/stampede-dev/stampede/chaos"
	"github.com/stampede-dev/stampede/spec"
)

// The kinds of mitigation.
const (
	None      = "none"       // the server as it is
	AdmitRamp = "admit-ramp" // the accept rate rises from a tenth to full over the window after each start
	Shed      = "shed"       // over capacity, upgrades are answered 503 with a Retry-After spread over the window
	Spread    = "spread"     // a graceful restart sends its close frames spread over the window
	Hint      = "hint"       // a graceful restart closes 1013 telling each client to return in [down, down+window]
)

// Kinds are the kinds in the order a bench runs them.
var Kinds = []string{None, AdmitRamp, Shed, Spread, Hint}

// Mitigation is one server-side change and its window.
type Mitigation struct {
	// Kind is one of Kinds.
	Kind string `json:"kind"`
	// Window is the mitigation's span: the admission ramp's length, the
	// shed Retry-After's range, the closes' spread or the return window.
	// Unused for None.
	Window time.Duration `json:"window,omitempty"`
}

// String is how a table names it: "none", "shed=5s".
func (m Mitigation) String() string {
	if m.Kind == None || m.Kind == "" {
		return None
	}
	return m.Kind + "=" + m.Window.String()
}

// Window is the default window for a fleet of clients against a server
// of acceptRate accepts per second: the time the server needs to take
// them all back (the physical bound), in whole seconds, at least 1 s.
func Window(clients int, acceptRate float64) time.Duration {
	if acceptRate <= 0 || clients <= 0 {
		return time.Second
	}
	s := math.Ceil(float64(clients) / acceptRate)
	return time.Duration(max(1, min(s, 3600))) * time.Second
}

// All returns every kind with the same window, None first.
func All(window time.Duration) []Mitigation {
	out := make([]Mitigation, len(Kinds))
	for i, k := range Kinds {
		out[i] = Mitigation{Kind: k, Window: window}
	}
	out[0].Window = 0
	return out
}

// Apply returns the server spec and chaos schedule of a storm with m:
// AdmitRamp and Shed change the server; Spread and Hint change every
// restart of the schedule into a graceful one with the window (a crash
// cannot send close frames, so a deploy is graceful) and leave the other
// entries alone. None makes the restarts graceful too, so that the rows of
// a comparison differ only in the mitigation. The inputs are not changed.
func (m Mitigation) Apply(srv spec.Server, sched *chaos.Schedule) (spec.Server, *chaos.Schedule) {
	switch m.Kind {
	case AdmitRamp:
		srv.AdmitRamp = m.Window
	case Shed:
		srv.Shed = m.Window
	}
	if sched == nil {
		return srv, nil
	}
	out := &chaos.Schedule{Entries: make([]chaos.Entry, len(sched.Entries))}
	for i, e := range sched.Entries {
		if e.Event.Kind == chaos.Restart {
			e.Event.Mode = chaos.ModeGraceful
			switch m.Kind {
			case Spread:
				e.Event.Spread = m.Window
			case Hint:
				e.Event.Hint = m.Window
			}
			e.Text = e.String()
		}
		out.Entries[i] = e
	}
	return srv, out
}

// Check says what is wrong with m for a server spec, as a field error:
// an admission ramp and shedding need the server's accept rate, and a
// mitigation other than None needs a positive window.
func (m Mitigation) Check(srv spec.Server) error {
	switch m.Kind {
	case None:
		return nil
	case AdmitRamp, Shed, Spread, Hint:
	default:
		return spec.Errorf("Mitigation.Kind", "%q is not one of none, admit-ramp, shed, spread, hint", m.Kind)
	}
	if m.Window <= 0 {
		return spec.Errorf("Mitigation.Window", "%v must be positive", m.Window)
	}
	s, _ := m.Apply(srv, nil)
	return s.Validate()
}
