// Package sim is stampede's discrete-event simulator: the same fleet, the
// same backoff package, seed and chaos schedule as a real run, against a
// model of the target's listen sockets and this kernel's TCP behaviour, in
// virtual time. It reaches fleet sizes one machine's sockets cannot (ten
// million clients in one process, about 0.7 GiB) and writes the same results
// folder as a real run, marked "simulated": true. docs/simulator.md
// describes the model, its assumptions and its calibration against real
// runs.
//
//	Run ─ plan (chaos.Schedule.Plan: events with their Start, End, Ready)
//	    └ loop: calendar queue of 1 ms buckets, each sorted once when reached
//	         ├ client events (one live event per client; a generation
//	         │  counter makes superseded ones no-ops)
//	         │    start ─> SYN ─> listener ─┬ refused (port closed)
//	         │                              ├ dropped (accept queue full:
//	         │                              │   retransmit on the kernel's schedule,
//	         │                              │   fired in bursts by its timer wheel)
//	         │                              └ final ACK after one RTT ─┬ accept queue
//	         │                                                          └ dropped: stalled,
//	         │                                  retried at the loss probe, data RTOs and
//	         │                                  SYN-ACK retransmits; at the client's
//	         │                                  deadline an orphan the target may accept
//	         ├ listener events: accept at the accept rate (ramped after
//	         │  each start with an admission ramp), upgrade at the
//	         │  process's capacity and handshake cost, answer 101 (or,
//	         │  shedding without a token, 503 with a Retry-After)
//	         ├ chaos events: restart (abrupt, graceful, kill; all, one,
//	         │    rolling; closed or stalled port; spread closes and a
//	         │    return hint), stall, backlog, accept-rate, reject
//	         └ with Config.Cores, loadgen events: a loadgen process starts
//	              a slice of its due attempts; it and the target's processes
//	              (their accepts and upgrades) take their slices from one
//	              pool of the machine's CPU (cpuModel), which every
//	              retransmit, close and ping is charged to
//	    ─> results.Stream (timeline, connect and TTR histograms), Flow,
//	       recovery partials computed online, kernel counters
//	    ─> summary.Summarize ─> summary.json, timeline.csv, *.hlog, report.html
//
// Every client's waits come from backoff.Policy.Wait with the run's seed and
// the client's ID, the call the loadgen makes, and the attempt counter
// follows the loadgen's rules (one more per failed attempt or ended
// connection, reset at a 101), so a client waits in a simulation exactly
// what it would wait in a real run after the same failures.
//
// Memory: a client is one 48-byte struct and a few 8-byte queue
// entries at a time; an orphan 24 bytes; no goroutine per client. The
// recovery of each event is kept in 2 bits per client. A large fleet's
// clients are mapped on huge pages, outside the Go heap (makeClients).
package sim
