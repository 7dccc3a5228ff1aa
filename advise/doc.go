// Package advise answers "which reconnect policy for my fleet against my
// server?" with the simulator (package sim): given the server's capacity
// (from its spec, or inferred from a real run's results folder by Infer),
// a fleet and a chaos event, Search simulates the current policy and a
// bounded, seeded set of candidate policies over several seeds, and ranks
// them on the objective among those that bring the fleet back with a herd
// the server can take (accept rate × 0.1 s + backlog per 100 ms). Verify
// then runs the recommended and the current policy for real, through a
// Runner the caller gives, and sets predicted against measured.
//
//	Config ─> Search ─┬ current policy, reference policy   (every seed)
//	                  ├ anchors + draws from the space      (2/3 of the budget)
//	                  ├ neighbours of the best three        (the rest)
//	                  └ rank: recovered, within capacity, objective
//	       ─> Result ─> Advice (summary.json "advise") ─> results folder
//	                 ─> Verify(Runner) ─> predicted against measured
//
// docs/advise.md is the user's guide.
package advise
