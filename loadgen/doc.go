// Package loadgen is stampede's client fleet: N WebSocket clients that share
// one backoff policy, run as state machines on a few epoll reactors (not one
// goroutine per client), and record every attempt, connect and disconnect
// into a results.Report.
//
//	Fleet.Run ──┬─ reactor 0: epoll + timer heap + shard of clients ─ Report 0 ─┐
//	            ├─ reactor 1: ...                                   ─ Report 1 ─┼─ merged Report
//	            └─ reactor R-1                                      ─ Report R-1┘
//	Fleet.Stats <─ per-reactor atomic counters (no locks on the hot path)
//	Fleet.Drain <─ per-reactor results.Stream (what is new since the last
//	               drain, under the recorder's mutex) ─> bounded results.Pieces
//
// Each reactor records through a results.Stream into its Report: the
// timeline per 100 ms, the latencies into the totals and into intervals of
// Config.HistInterval (1 s) on the run's time axis. Fleet.Drain, safe from
// any goroutine while the fleet runs, hands out what is complete, so a
// worker streams its results in messages of at most 1 MiB
// (docs/results.md "Streamed results").
//
// A client's life:
//
//	idle ─(ramp slot)─> connecting ─(SO_ERROR 0)─> handshaking ─(101)─> connected
//	  ^                    │ refused, timeout         │ 4xx/5xx, timeout     │ EOF, reset,
//	  │                    v                          v                      v close frame, ping_timeout
//	  └──────────────── waiting (backoff.Policy.Delay or a Retry-After hint) <┘
//	                       └─ non-retryable class or attempts exhausted ─> stopped
//
// Every client runs on a reactor: raw non-blocking sockets, one shared
// read buffer per reactor, about 200 bytes of process memory per connected
// ws:// client (measured with testdata/memprobe: the whole process's RSS
// between 2,000 and 10,000 connections). A wss:// client (tlsclient.go)
// adds a state between connecting and handshaking (stTLS): in a herd it
// first waits for the server to take its connection (tlsfirst.go); its
// handshake runs on a goroutine of a bounded set (crypto/tls blocks), which owns
// the socket meanwhile; then the reactor drives its tls.Conn over the raw
// socket (fdConn): Read when epoll says readable, a partial record kept
// for the next edge, Write queueing what the socket does not take. Once
// the server's session ticket came, a TLS 1.3 connection leaves crypto/tls
// for the reactor's own record layer (tlsswap.go, tlsrecord.go): the
// client keeps its two traffic secrets and sequence numbers and its
// cached session, no cipher state, about 1.2 KB of heap a connection.
// TLS 1.2 connections stay on crypto/tls.
//
// Recording: per attempt, Attempts in the timeline bucket of its start and
// Successes or Failures[class] in the bucket of its end; Disconnects[class]
// when an established connection ends; connect latency (attempt start to
// 101) into Report.Connect; a Transition up when the client is up and down
// when a connection it was up on ends; time to recover (disconnect
// detected to up again) into Report.TTR; echo round trips into Report.RTT.
// Attempts still in flight when the run ends have no outcome.
//
// Success and up are one instant in modes none and echo: the 101. In mode
// stampede they split (docs/metrics.md "Client TTR": connected again and resumed):
// the attempt succeeds at its 101 (Successes, Connect, Disconnects when
// that connection ends), but the client is up only once it caught up, at
// its room's joined (first connect, or NoResume) or resumed frame. A
// connection that ends between its 101 and then was never up: it records
// a Disconnect but no Down transition, so each client's transitions still
// alternate, and its time to recover runs on from the earlier disconnect
// until a later connection catches up.
//
// Session protocols (session.go, package session; docs/protocols.md): with
// Config.Session.Protocol set, the mode is the protocol's state machine,
// fed each data frame and the client's one timer (its heartbeats and
// session deadlines); the client is up when its session is back, and
// re-subscribed (Report.Resubscribed) when every subscription is
// acknowledged. Without one, mode none still listens for a protocol its
// server shows (sniff.go, Report.Speaks).
//
// Keepalive (keepalive.go; docs/metrics.md "Keepalive"):
// a connected client that hears nothing for Config.PingInterval pings, and
// closes a connection that answers nothing within Config.PongTimeout as
// ping_timeout, so a connection that died silently (a blackhole) is not
// held as up.
//
// Limits: one process holds RLIMIT_NOFILE minus FDMargin connections (New
// raises the soft limit to the hard one and refuses a fleet that does not
// fit), and one source address has one ephemeral port range per
// destination; see CheckLimits.
package loadgen
