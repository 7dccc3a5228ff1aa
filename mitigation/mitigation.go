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

// The kinds of a wss:// server (TLS).
const (
	TicketsKept = "tickets-kept" // session-ticket keys in a file kept across the restart (KeyFile)
	ECDSA       = "ecdsa"        // an ECDSA P-256 certificate instead of an RSA one
)

// Kinds are the kinds in the order a bench runs them.
var Kinds = []string{None, AdmitRamp, Shed, Spread, Hint}

// TLSKinds are the kinds of a wss:// server, run after Kinds.
var TLSKinds = []string{TicketsKept, ECDSA}

// ecdsaKind is the certificate kind ECDSA serves (tlsconf.ECDSAP256).
const ecdsaKind = "ecdsa-p256"

// Mitigation is one server-side change and its window.
type Mitigation struct {
	// Kind is one of Kinds.
	Kind string `json:"kind"`
	// Window is the mitigation's span: the admission ramp's length, the
	// shed Retry-After's range, the closes' spread or the return window.
	// Unused for None and the TLS kinds.
	Window time.Duration `json:"window,omitempty"`
	// KeyFile is TicketsKept's session-ticket key file (spec.Server's
	// TLSTicketKeys), created by the run's first server and read again
	// after each restart.
	KeyFile string `json:"key_file,omitempty"`
}

// String is how a table names it: "none", "shed=5s".
func (m Mitigation) String() string {
	switch m.Kind {
	case None, "":
		return None
	case TicketsKept, ECDSA:
		return m.Kind
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

// TLS returns the TLS kinds that would change srv, a wss:// server:
// TicketsKept (with keyFile) unless its ticket keys are in a file
// already, ECDSA unless it serves its own certificate or an ECDSA one
// already. Nil for a ws:// server.
func TLS(srv spec.Server, keyFile string) []Mitigation {
	d := srv.WithDefaults()
	if !d.TLS {
		return nil
	}
	var out []Mitigation
	if d.TLSTicketKeys == "" {
		out = append(out, Mitigation{Kind: TicketsKept, KeyFile: keyFile})
	}
	if d.CertFile == "" && d.TLSCertKind != ecdsaKind {
		out = append(out, Mitigation{Kind: ECDSA})
	}
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
	case TicketsKept:
		srv.TLSTicketKeys = m.KeyFile
	case ECDSA:
		srv.TLSCertKind = ecdsaKind
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
	case TicketsKept, ECDSA:
		return m.checkTLS(srv)
	case AdmitRamp, Shed, Spread, Hint:
	default:
		return spec.Errorf("Mitigation.Kind", "%q is not one of none, admit-ramp, shed, spread, hint, tickets-kept, ecdsa", m.Kind)
	}
	if m.Window <= 0 {
		return spec.Errorf("Mitigation.Window", "%v must be positive", m.Window)
	}
	s, _ := m.Apply(srv, nil)
	return s.Validate()
}

// checkTLS checks a TLS kind: the server must serve wss://, TicketsKept
// needs its key file, and ECDSA a certificate stampede makes.
func (m Mitigation) checkTLS(srv spec.Server) error {
	d := srv.WithDefaults()
	switch {
	case !d.TLS:
		return spec.Errorf("Mitigation.Kind", "%s needs a wss:// server (TLS)", m.Kind)
	case m.Kind == TicketsKept && m.KeyFile == "":
		return spec.Errorf("Mitigation.KeyFile", "tickets-kept needs a ticket-key file")
	case m.Kind == ECDSA && d.CertFile != "":
		return spec.Errorf("Mitigation.Kind", "ecdsa replaces the certificate stampede makes, not the server's own (CertFile)")
	}
	s, _ := m.Apply(srv, nil)
	return s.Validate()
}
