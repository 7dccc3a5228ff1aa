package results

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
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

// DetectOutages infers outages from the clients' side, for a run with no
// supervisor (a loadgen against someone else's server). An outage is at
// least Share of the clients connected just before it disconnecting within
// Window of each other. The share is of those connected at each candidate
// first disconnect, so a slow drain of the whole fleet is found too, once
// what remains goes fast enough. Its Start is the first of those disconnects, its
// Ready (and End) the first successful reconnect by any client after Start;
// when nobody came back before the run ended, NeverReady is true (and
// Ready and End zero): the server did not come back, and every failure
// after Start is the outage's. Kind is "outage" and Detected true. After
// one outage the search resumes with the disconnects from its Ready (or
// Start+Window, if later), so one mass drop is one event. The config must
// be valid (Validate).
func DetectOutages(r *Report, cfg DetectConfig) []Event {
	share, window := cfg.share(), cfg.window()
	type drop struct {
		at        time.Duration
		connected int // clients up just before this disconnect
	}
	var drops []drop
	var ups []time.Duration // every reconnect, in time order
	up := map[uint32]bool{}
	n := 0
	for _, tr := range sortedTransitions(r) {
		switch {
		case tr.Up && !up[tr.Client]:
			up[tr.Client] = true
			n++
			ups = append(ups, tr.At)
		case !tr.Up && up[tr.Client]:
			drops = append(drops, drop{tr.At, n})
			up[tr.Client] = false
			n--
		}
	}

	var out []Event
	j := 0 // first drop at or after drops[i].at + window
	for i := 0; i < len(drops); {
		start := drops[i].at
		for j < len(drops) && drops[j].at < start+window {
			j++
		}
		if float64(j-i) < share*float64(drops[i].connected) {
			i++
			continue
		}
		ev := Event{Kind: "outage", Start: start, Detected: true}
		resume := start + window
		// The first reconnect strictly after Start.
		k, _ := slices.BinarySearch(ups, start+1)
		if k < len(ups) {
			ev.Ready, ev.End = ups[k], ups[k]
			resume = max(resume, ev.Ready)
		} else {
			ev.NeverReady = true
			resume = math.MaxInt64
		}
		out = append(out, ev)
		for i < len(drops) && drops[i].at < resume {
			i++
		}
		j = max(j, i)
	}
	return out
}

// sortedTransitions returns r's transitions in time order. The sort is
// stable: one client's transitions at the same instant keep the order its
// process recorded them in.
func sortedTransitions(r *Report) []Transition {
	trs := slices.Clone(r.Transitions)
	slices.SortStableFunc(trs, func(a, b Transition) int { return cmp.Compare(a.At, b.At) })
	return trs
}
