// Package live serves a run's page while the run goes: report.html's own
// page (report.WriteLive), fed by server-sent events, with a panel of the
// figures a deploy rehearsal watches (connected clients, arrivals per
// 100 ms, events as they happen, failures by class, the herd's peak
// against the server's capacity, recovery as it settles, the SLOs so far).
// When the run ends the last frame carries report.html's data, and the
// page becomes report.html.
//
//	run ──Snapshot (1/s)──> Server.Feed ──Frame──> subscriber buffers ──SSE──> browsers
//	results folder ──Finish──> final frame (report.html's data) ──────────────┘
//
// It is guarded like the control APIs (controlapi): the Host and Origin
// checks, loopback unless told otherwise (TLS beyond loopback), and a
// token. The token travels once, in the URL printed at the run's start,
// and is exchanged for an HttpOnly SameSite=Strict cookie with a redirect
// to the bare URL: the page's stream then needs no header an EventSource
// cannot send, and the token is in no later request, page or log.
//
// The run never waits for a browser: each subscriber has a small buffer,
// and a frame that finds it full is dropped for that subscriber alone.
// Every goroutine of the server and of the feed carries the pprof label
// stampede=live, so a CPU profile tells the page's cost apart.
package live
