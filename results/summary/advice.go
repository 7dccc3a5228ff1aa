package summary

// Advice is the summary.json "advise" object of `stampede advise`
// (docs/advise.md, docs/summary-json.md "advise"): the server's capacity,
// the policies the simulator tried, the one recommended and the current
// one, their predicted arrival curves, and, with a verification, what real
// sockets measured. The rest of such a summary is the simulated run of
// the recommended policy with the first seed.
type Advice struct {
	// Objective is what the search minimised: "r99", "wasted" or "peak".
	Objective string `json:"objective"`
	// MaxDelayS is the longest wait between attempts a policy may have,
	// in seconds; null when none was given.
	MaxDelayS *float64 `json:"max_delay_s"`
	// Seeds are the simulator's seeds every candidate was run with.
	Seeds []uint64 `json:"seeds"`
	// Simulations counts the simulated runs of the search.
	Simulations int `json:"simulations"`
	// Capacity is the server's, as the search used it.
	Capacity AdviceCapacity `json:"capacity"`
	// PhysicalBoundS is the fleet over the accept rate: no policy brings
	// every client back sooner after the server is ready.
	PhysicalBoundS float64 `json:"physical_bound_s"`
	// Current is the current policy's prediction.
	Current AdviceCandidate `json:"current"`
	// Candidates are the best policies found, best first.
	Candidates []AdviceCandidate `json:"candidates"`
	// Recommended indexes Candidates: the policy recommended.
	Recommended int `json:"recommended"`
	// Reason is the one line of reasoning behind the recommendation.
	Reason string `json:"reason"`
	// Curves are the predicted attempt arrivals of the recommended and the
	// current policy (first seed), recommended first.
	Curves []AdviceCurve `json:"curves"`
	// Mitigations are the current policy's predictions under each
	// server-side mitigation the server can take ("none" first), for a
	// fleet that cannot change; absent when the schedule restarts nothing.
	Mitigations []AdviceMitigation `json:"mitigations,omitempty"`
	// Verify holds the real storms of a verification, one per policy;
	// absent without one.
	Verify []AdviceVerify `json:"verify,omitempty"`
}

// AdviceCapacity is a server's capacity for a reconnect herd.
type AdviceCapacity struct {
	// AcceptRate is the connections per second the server admits.
	AcceptRate float64 `json:"accept_rate"`
	// Backlog is the connections its accept queues hold, over all its
	// processes (or the load balancer's queue).
	Backlog int `json:"backlog"`
	// Per100ms is what it takes in one 100 ms window without dropping
	// a SYN: AcceptRate × 0.1 s + Backlog.
	Per100ms float64 `json:"per_100ms"`
	// Source says where the figures came from: "flags", or the measured
	// figure of a results folder and how it was read.
	Source string `json:"source"`
}

// AdviceCandidate is one policy's prediction, over every seed: R figures
// and wasted attempts are means, the herd peak the worst seed's.
type AdviceCandidate struct {
	// Policy is the policy's spec (backoff.Parse).
	Policy string `json:"policy"`
	// LongestWaitS is the longest wait the policy may ever draw, in
	// seconds; null when it has no bound.
	LongestWaitS *float64 `json:"longest_wait_s"`
	// R50S, R99S and R100S are seconds from ready; null when a seed never
	// got there.
	R50S  *float64 `json:"r50_s"`
	R99S  *float64 `json:"r99_s"`
	R100S *float64 `json:"r100_s"`
	// HerdPeakPer100ms is the most attempts in one 100 ms window.
	HerdPeakPer100ms float64 `json:"herd_peak_per_100ms"`
	// WastedAttemptsPerClient is failed attempts per client after ready.
	WastedAttemptsPerClient float64 `json:"wasted_attempts_per_client"`
	// WithinCapacity is true when the herd peak stayed within
	// Capacity.Per100ms in every seed.
	WithinCapacity bool `json:"within_capacity"`
}

// AdviceMitigation is the current policy's prediction under one
// server-side mitigation.
type AdviceMitigation struct {
	// Mitigation names it: "none", "admit-ramp=5s", "shed=5s",
	// "spread=5s" or "hint=5s", and for a wss:// server "tickets-kept"
	// or "ecdsa" (package mitigation).
	Mitigation string `json:"mitigation"`
	// Figures are the current policy's under it (Policy is the current
	// policy's spec).
	AdviceCandidate
}

// AdviceCurve is one policy's predicted attempts and successes per
// 100 ms, from the event's start.
type AdviceCurve struct {
	// Role is "recommended" or "current".
	Role string `json:"role"`
	// Policy is the policy's spec.
	Policy string `json:"policy"`
	// StartS and ReadyS are the event's start and the server's ready
	// again, in seconds from the run's start.
	StartS float64 `json:"start_s"`
	ReadyS float64 `json:"ready_s"`
	// Attempts and Successes are per 100 ms bucket from StartS.
	Attempts  []uint32 `json:"attempts"`
	Successes []uint32 `json:"successes"`
}

// AdviceVerify is one policy's real storm beside its prediction.
type AdviceVerify struct {
	// Role is "recommended" or "current"; Policy its spec.
	Role   string `json:"role"`
	Policy string `json:"policy"`
	// Dir is the real run's results folder, relative to the advise folder.
	Dir string `json:"dir"`
	// Figures are predicted against measured, in the order R50, R99,
	// R100, herd peak, wasted attempts per client.
	Figures []AdviceFigure `json:"figures"`
}

// AdviceFigure is one figure predicted and measured.
type AdviceFigure struct {
	// Name is the summary.json name of the figure ("r99_s").
	Name string `json:"name"`
	// Predicted and Measured are null when not reached.
	Predicted *float64 `json:"predicted"`
	Measured  *float64 `json:"measured"`
	// RelError is (predicted - measured) / measured; null when either is
	// null or measured is 0.
	RelError *float64 `json:"rel_error"`
}
