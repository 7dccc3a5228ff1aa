// Package realclients proves the backoff presets against the client
// libraries they reproduce: its test runs fleets of the real libraries
// (pinned in package.json, run in Node) and of stampede's clients with the
// matching preset against the same server, kills the server's
// connections, and compares when each retry arrives. See docs/clients.md.
package realclients
