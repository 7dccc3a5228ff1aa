// Package target is the WebSocket server a reconnect storm is aimed at: a
// gobwas/ws echo server whose capacity and failures are knobs, so a run can
// show what a herd of reconnecting clients does to a server that has limits.
//
// Data flows through four stages:
//
//	SYN ──► kernel accept queue (Backlog+1; full: SYNs dropped, clients time out)
//	          │
//	          ▼ accept loop: gate shut while Hold / Stall, paced by AcceptRate
//	upgrade pool (Upgraders goroutines; all busy: nothing is accepted)
//	          │ TLS handshake; a request for HTTPPath ──► HTTP endpoint (net/http,
//	          │   keep-alive; token bucket HTTPLimit → LimitStatus + Retry-After)
//	          │ HTTP upgrade, admission: Reject window / MaxConns
//	          │ → 4xx/5xx + Retry-After; HandshakeCost burned; HandshakeTimeout
//	          ▼
//	epoll set (one per server; fd registered EPOLLONESHOT, data = conn id)
//	          │ readable
//	          ▼
//	workers (Workers goroutines): read the frames with a pooled buffer and
//	FrameTimeout, answer ping/close, give messages to the Handler, re-arm
//
// An idle connection holds no goroutine and no buffer, only its *Conn, its
// net.Conn and its place in the epoll set; thousands of idle clients cost a
// few fixed goroutines. Measured (TestMeasureMemoryPerConn, 5000 idle
// connections that each echoed one message): 2.1 KB of target RSS per ws://
// connection, 13.4 KB per wss:// connection, 9 threads either way.
//
// # TLS
//
// A *tls.Conn decrypts whole records and may keep plaintext, or a further
// record, in its own buffers after a read: bytes that epoll no longer sees on
// the socket. The worker therefore reads a TLS connection through the
// tls.Conn like a plain one, and before re-arming makes one non-blocking read
// (a deadline in the past: tls.Conn returns what it holds, or a timeout that
// it does not keep as an error). The cost: a TLS connection keeps its
// tls.Conn, whose record buffers stay allocated once used, so an idle wss://
// client costs about six times the memory of a ws:// one, though still no
// goroutine. A
// goroutine-per-connection design would cost a goroutine stack on top. One
// case is not covered: bytes a client sends right behind its upgrade request
// in the same TLS record (clients wait for 101, so none do).
//
// # Processes
//
// One process may hold at most 20,000 open files, so larger targets are a
// Group of processes listening on one port with SO_REUSEPORT; `stampede
// target` runs one (Run), prints a ready line (ReadyLine) and serves an HTTP
// control API (ControlHandler) through which a chaos supervisor stalls it,
// changes its backlog or accept rate, makes it reject upgrades, or shuts it
// down.
//
// The package uses epoll and is Linux-only.
package target
