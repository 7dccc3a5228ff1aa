package summary

import "math"

// Row is one line of the bench comparison table: one run (one policy).
type Row struct {
	// Policy names the run's backoff policy as written on the command line.
	Policy string
	// Mitigation names the server-side mitigation of a run in a
	// comparison of mitigations ("none", "shed=5s"); empty otherwise.
	Mitigation string
	// Summary is the run's summary; nil prints a row of dashes.
	Summary *Summary
}

// WorstRecovery returns the event of s that recovered worst, the one a
// comparison should show: among events with somebody to recover (a client
// connected before went down), the lowest share recovered, then the
// longest R100 (never is longest), then the most wasted attempts per
// client (unmeasured is most); the first event when none had anybody to
// recover; false when there are no events. For a bench run with one
// restart, that restart; a harmless event (a backlog change that dropped
// nobody) never hides a restart.
func (s *Summary) WorstRecovery() (Recovery, bool) {
	if len(s.Recovery) == 0 {
		return Recovery{}, false
	}
	best := -1
	for i, r := range s.Recovery {
		if r.Disconnected == 0 {
			continue
		}
		if best < 0 || worse(r, s.Recovery[best]) {
			best = i
		}
	}
	if best < 0 {
		best = 0
	}
	return s.Recovery[best], true
}

// worse reports whether a recovered worse than b; both have clients.
func worse(a, b Recovery) bool {
	// a.Recovered/a.N < b.Recovered/b.N, without division.
	l, r := a.Recovered*b.ConnectedBefore, b.Recovered*a.ConnectedBefore
	if l != r {
		return l < r
	}
	switch {
	case a.R100S == nil && b.R100S != nil:
		return true
	case a.R100S != nil && b.R100S == nil:
		return false
	case a.R100S != nil && *a.R100S != *b.R100S:
		return *a.R100S > *b.R100S
	}
	orInf := func(p *float64) float64 {
		if p == nil {
			return math.Inf(1)
		}
		return *p
	}
	return orInf(a.WastedAttemptsPerClient) > orInf(b.WastedAttemptsPerClient)
}
