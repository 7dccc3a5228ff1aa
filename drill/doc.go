// Package drill rehearses a deploy against the user's own server: a fleet
// of real WebSocket clients (storm.Run against a URL) holds on while the
// user's deploy command runs at a set time (or while the user deploys by
// hand), and the run passes or fails on SLO gates, so a CI pipeline can
// gate on it (exit status, JUnit XML, summary.json). docs/drill.md is the
// user's guide.
//
//	drill.Run ─ CheckTarget (loopback or --allow-remote; no socket yet)
//	          ─ Banner (target, clients, connect rate, duration, caps)
//	          ─ storm.Run ─┬─ loadgen agents against Config.Run.Fleet.URL
//	                       ├─ Deploy sidecar: `sh -c CMD` at At, once MinConnected
//	                       │    of the fleet is up (else the run stops: no deploy)
//	                       │    ─> "deploy" event, deploy.log, check "deploy"
//	                       ├─ OutageWatch (--wait-for-outage) ─> check "outage"
//	                       └─ Config.Sidecars (e.g. a load balancer's counters)
//	          ─ JUnit XML (one testcase per SLO and per check)
//
// Everything written or printed is redacted (package internal/redact), and
// the results folder is the user's alone (0700, files 0600).
package drill
