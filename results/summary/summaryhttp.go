package summary

import "github.com/stampede-dev/stampede/results"

// SummarizeHTTP is the Summary of an HTTP fleet run of clients clients
// whose figures are h: in's RunID, Seed, Config and End (the run's
// length) with h; no WebSocket figures, no events.
func SummarizeHTTP(in Input, clients int, h results.HTTP) *Summary {
	return &Summary{
		RunID: in.RunID, Seed: in.Seed, Config: configJSON(in.Config), Spec: redactedSpec(in.Spec),
		Clients: clients, Processes: 1, DurationS: in.End.Seconds(),
		// Class maps hold every class, 0 included, in every kind of
		// run (docs/summary-json.md "Class maps").
		Events: []EventSummary{}, Connect: ConnectOf(nil), Stopped: map[string]results.Stopped{}, Recovery: []Recovery{},
		KernelNote: "an HTTP fleet reads no kernel counters",
		Resources:  map[string]results.ResourceStats{results.RoleLoadgen: {}, results.RoleTarget: {}},
		SLO:        []SLOResult{}, Pass: true, Complete: true, HTTP: &h,
	}
}
