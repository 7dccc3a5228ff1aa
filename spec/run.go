package spec

import (
	"time"

	"github.com/stampede-dev/stampede/internal/redact"
)

// The kinds of run (Run.Kind): the command, or the library call, that
// wrote a results folder.
const (
	KindRun      = "run"
	KindBench    = "bench"
	KindLoadgen  = "loadgen"
	KindDrill    = "drill"
	KindHTTP     = "http"
	KindSimulate = "simulate"
	KindAdvise   = "advise"
)

// Run is the effective config of one run, every default applied: what
// summary.json records as "spec", in the JSON a plan carries (each spec's
// own field names, durations in nanoseconds). Whatever reads a results
// folder (advise --from, report) reads this, never the command line's
// spelling in "config". Secrets are redacted (Redacted).
type Run struct {
	// Kind is the kind of run: KindRun, KindBench (a run of a bench),
	// KindLoadgen, KindDrill, KindHTTP, KindSimulate or KindAdvise.
	Kind string `json:"kind"`
	// Client is the WebSocket fleet; nil for an HTTP fleet.
	Client *Client `json:"client,omitempty"`
	// Server is the server the run started (run, bench) or modelled
	// (simulate, advise), Procs its processes; nil when the fleet was
	// aimed at a server the run did not start (loadgen, drill).
	Server *Server `json:"server,omitempty"`
	// HTTPFleet is an HTTP fleet's load; nil for a WebSocket fleet.
	HTTPFleet *HTTPFleet `json:"http_fleet,omitempty"`
	// Duration is the run's planned length.
	Duration time.Duration `json:"duration"`
	// Chaos is the chaos schedule's text; empty without one.
	Chaos string `json:"chaos,omitempty"`
	// Deploy is a drill's deploy: when its command started; nil for
	// every other kind.
	Deploy *Deploy `json:"deploy,omitempty"`
}

// Deploy is when a drill's deploy command ran: at At from the run's
// start, or by hand (WaitForOutage) when an outage was seen.
type Deploy struct {
	// At is when the command started, from the run's start; zero with
	// WaitForOutage.
	At time.Duration `json:"at,omitempty"`
	// WaitForOutage is true when the deploy was made by hand and the
	// drill waited for the outage it caused.
	WaitForOutage bool `json:"wait_for_outage,omitempty"`
}

// Redacted returns the run's config with its secrets hidden (the fleet's
// secret header values and URL user info, the store's password), for
// summary.json.
func (r Run) Redacted() Run {
	if r.Client != nil {
		c := r.Client.Redacted()
		r.Client = &c
	}
	if r.Server != nil {
		s := r.Server.Redacted()
		r.Server = &s
	}
	return r
}

// Redacted returns the server's spec with its store URL's password
// hidden.
func (c Server) Redacted() Server {
	c.Store = redact.URL(c.Store)
	return c
}
