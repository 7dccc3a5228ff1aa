package summary

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/stampede-dev/stampede/results"
)

// DetectConfig tunes DetectOutages. The zero value is the default.
type DetectConfig struct {
	// Share is the fraction of the connected clients that must disconnect
	// within Window for an outage, in (0, 1]; 0 means 0.5.
	Share float64
	// Window is how close together those disconnects must be; 0 means 1 s.
	Window time.Duration
}

// ErrDetectConfig is wrapped by every error DetectConfig.Validate returns.
var ErrDetectConfig = errors.New("results: invalid detect config")

// Validate reports a Share outside [0, 1] or a negative Window.
func (c DetectConfig) Validate() error {
	if math.IsNaN(c.Share) || c.Share < 0 || c.Share > 1 {
		return fmt.Errorf("%w: share %v not in (0, 1]", ErrDetectConfig, c.Share)
	}
	if c.Window < 0 {
		return fmt.Errorf("%w: window %s is negative", ErrDetectConfig, c.Window)
	}
	return nil
}

func (c DetectConfig) share() float64 {
	if c.Share == 0 {
		return 0.5
	}
	return c.Share
}

func (c DetectConfig) window() time.Duration {
	if c.Window == 0 {
		return time.Second
	}
	return c.Window
}

// DetectOutages is DetectFlow on the flow of r's transitions
// (Report.TransitionFlow).
func DetectOutages(r *results.Report, cfg DetectConfig) []results.Event {
	return DetectFlow(r.TransitionFlow(), cfg)
}

// DetectFlow infers outages from the clients' side, for a run with no
// supervisor (a loadgen against someone else's server), from the fleet's
// merged Flow. An outage is at least Share of the clients connected just
// before it disconnecting within Window of each other. The share is of
// those connected at each candidate first disconnect, so a slow drain of
// the whole fleet is found too, once what remains goes fast enough. Its
// Start is the step of the first of those disconnects, its Ready (and End)
// the first later step in which any client came back; when nobody came
// back before the run ended, NeverReady is true (and Ready and End zero):
// the server did not come back, and every failure after Start is the
// outage's. Kind is "outage" and Detected true. After one outage the
// search resumes with the disconnects from its Ready (or Start+Window, if
// later), so one mass drop is one event. Times are exact to the Flow's
// 1 ms steps: within one step, disconnects count before reconnects. The
// config must be valid (Validate).
func DetectFlow(f results.Flow, cfg DetectConfig) []results.Event {
	share, window := cfg.share(), cfg.window()
	// connected[i] is the number of clients up just before step f[i]'s
	// disconnects; downs[i] the disconnects of f[0..i-1].
	connected := make([]int, len(f))
	downs := make([]int, len(f)+1)
	n := 0
	for i, c := range f {
		connected[i] = n
		n += int(c.Ups) - int(c.Downs)
		downs[i+1] = downs[i] + int(c.Downs)
	}
	at := func(i int) time.Duration { return time.Duration(f[i].Step) * results.FlowStep }
	var out []results.Event
	j := 0 // first step at or after at(i) + window
	for i := 0; i < len(f); {
		if f[i].Downs == 0 {
			i++
			continue
		}
		start := at(i)
		for j < len(f) && at(j) < start+window {
			j++
		}
		j = max(j, i+1)
		// The first disconnect of the step is the most favourable
		// candidate of the step: each later one has one disconnect fewer
		// in its window and only a share of one fewer client to beat.
		if float64(downs[j]-downs[i]) < share*float64(connected[i]) {
			i++
			continue
		}
		ev := results.Event{Kind: "outage", Start: start, Detected: true}
		resume := start + window
		k := i + 1
		for k < len(f) && f[k].Ups == 0 {
			k++
		}
		if k < len(f) {
			ev.Ready, ev.End = at(k), at(k)
			resume = max(resume, ev.Ready)
		} else {
			ev.NeverReady = true
			resume = math.MaxInt64
		}
		out = append(out, ev)
		for i < len(f) && at(i) < resume {
			i++
		}
		j = max(j, i)
	}
	return out
}
