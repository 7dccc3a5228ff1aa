// Package cluster runs one loadgen fleet as a coordinator and several
// workers: worker processes on this machine first, workers on other hosts
// (over NATS) later, with the same messages. A worker is an in-process
// loadgen.Fleet with its share of the client IDs.
//
//	coordinator                          worker
//	     │ ── plan (config, client IDs) ──>  │ validate, check limits
//	     │ <────────── ready ─────────────── │
//	     │ ── start (absolute instant) ───>  │ wait for the instant, run the fleet
//	     │ <──── progress (every second) ─── │
//	     │ ── stop ───────────────────────>  │ (or the planned duration ends)
//	     │ <──── final (histograms, ...) ─── │
//
// Histograms travel in HdrHistogram's own encoding and are merged, never
// averaged. The start barrier is an absolute wall-clock instant, so every
// worker's offsets share one time axis.
package cluster

import (
	"time"

	"github.com/stampede-dev/stampede/loadgen"
)

// Kind names a protocol message.
type Kind string

// The messages, in the order a healthy exchange sends them.
const (
	KindPlan     Kind = "plan"     // coordinator -> worker
	KindReady    Kind = "ready"    // worker -> coordinator
	KindStart    Kind = "start"    // coordinator -> worker
	KindProgress Kind = "progress" // worker -> coordinator
	KindStop     Kind = "stop"     // coordinator -> worker
	KindFinal    Kind = "final"    // worker -> coordinator
	KindError    Kind = "error"    // worker -> coordinator: the worker failed
)

// Message is one protocol message; exactly the field named by Kind is set.
type Message struct {
	Kind     Kind      `json:"kind"`
	Worker   int       `json:"worker"`
	Plan     *Plan     `json:"plan,omitempty"`
	Ready    *Ready    `json:"ready,omitempty"`
	Start    *Start    `json:"start,omitempty"`
	Progress *Progress `json:"progress,omitempty"`
	Final    *Final    `json:"final,omitempty"`
	Error    string    `json:"error,omitempty"`
}

// Plan is a worker's share of a run: its loadgen configuration, whose
// FirstID and Clients give the worker's client IDs.
type Plan struct {
	// RunID names the run.
	RunID string `json:"run_id"`
	// Loadgen is the worker's fleet; its Start is set by the Start message.
	Loadgen loadgen.Config `json:"loadgen"`
}

// Ready says a worker accepted its plan.
type Ready struct {
	// Host is the worker's host name.
	Host string `json:"host"`
	// PID is the worker's process ID, for resource sampling.
	PID int `json:"pid"`
}

// Start is the barrier: every worker begins at At (wall clock) and runs for
// Duration unless stopped sooner.
type Start struct {
	At       time.Time     `json:"at"`
	Duration time.Duration `json:"duration"`
}

// Progress is a worker's live counters.
type Progress struct {
	At    time.Time     `json:"at"`
	Stats loadgen.Stats `json:"stats"`
}

// Final is a worker's whole record of the run.
type Final struct {
	Report WireReport `json:"report"`
}
