// Package httpfleet runs a fleet of HTTP clients against one URL at a fixed
// offered load, every request through httpretry (the shared retry policy
// and Retry-After handling), and measures what is left: goodput, retry
// amplification, Retry-After honoured or not, early retries, abandoned
// requests and latency from the scheduled send (docs/results.md "HTTP
// fleets").
//
//	schedule (open loop: R/N per client, never waits for answers)
//	   │ one goroutine per logical request
//	   ▼
//	httpretry.Client ──attempt──> server
//	   │ OnAttempt: status, Retry-After, early?, timeline
//	   ▼
//	outcome: ok / status_NNN / refused... / unfinished
package httpfleet
