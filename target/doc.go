// Package target is the WebSocket server a reconnect storm is aimed at: a
// gobwas/ws echo server whose capacity and failures are knobs, so a run can
// show what a herd of reconnecting clients does to a server that has limits.
//
// Data flows through four stages:
//
//	SYN ──► kernel accept queue (Backlog+1; full: SYNs dropped, clients time out;
//	          │   a connection enters it once its request's first bytes have come:
//	          │   TCP_DEFER_ACCEPT, Listener.DeferAccept)
//	          │
//	          ▼ accept loop: gate shut while Hold / Stall, paced by AcceptRate
//	          │   (ramped up from AdmitFloor over AdmitRamp; not paced with Shed)
//	upgrades (Upgraders at a time; all busy: nothing is accepted): a plain
//	          │   one whose request is there in the accept loop itself, raw
//	          │   calls on a bare fd (inline.go), one made before its request
//	          │   (a SYN cookie's) when the request comes (waiting.go), the
//	          │   rest in goroutines
//	          │ TLS handshake; a request for HTTPPath ──► HTTP endpoint (net/http,
//	          │   keep-alive; token bucket HTTPLimit → LimitStatus + Retry-After)
//	          │ HTTP upgrade, admission: Reject window / Shed (token bucket at
//	          │   the ramped AcceptRate; none: 503, Retry-After 1..Shed) / MaxConns
//	          │ → 4xx/5xx + Retry-After; HandshakeCost burned; HandshakeTimeout
//	          ▼
//	epoll set (one per server; fd registered EPOLLONESHOT, data = fd + conn id)
//	          │ readable
//	          ▼
//	workers (Workers goroutines): read the frames with a pooled buffer and
//	FrameTimeout, answer ping/close, give messages to the Handler, re-arm
//
// An idle ws:// connection holds no goroutine, no buffer, no timer and no
// net.Conn: only its *Conn (88 bytes, its socket a raw fd: sock.go), a slot
// in the fd-indexed connection table and its place in the epoll set;
// thousands of idle clients cost a few fixed goroutines. Measured
// (testdata/memprobe, 15,000 idle connections, each client in another
// process): 320-410 B of target RSS per connection, 150 B of live Go heap,
// against 1,815 B and 494 B when each kept its net.Conn (netFD, runtime
// pollDesc, a TCPAddr pair, a map entry). The kernel holds far more for the
// same connection (docs/sizing.md, "Memory per connection"). A read or
// write that must wait (a frame arriving in pieces, a client not reading)
// parks in Go's netpoller through a duplicate of the fd made for the wait,
// so a blocked writer holds no OS thread (TestBlockedWritesHoldNoThread).
// TestMeasureMemoryPerConn (5,000 connections that each echoed one
// message): 1.1 KB of RSS per ws:// connection, 14.2 KB per wss:// one.
//
// # TLS
//
// A *tls.Conn decrypts whole records and may keep plaintext, or a further
// record, in its own buffers after a read: bytes that epoll no longer sees on
// the socket. The worker therefore reads a TLS connection through the
// tls.Conn like a plain one, and before re-arming makes one non-blocking read
// (a deadline in the past: tls.Conn returns what it holds, or a timeout that
// it does not keep as an error). The cost: a TLS connection keeps its
// tls.Conn (and its net.Conn under it), whose record buffers stay
// allocated once used, so an idle wss:// client costs over ten times the
// memory of a ws:// one, though still no goroutine. A
// goroutine-per-connection design would cost a goroutine stack on top. One
// case is not covered: bytes a client sends right behind its upgrade request
// in the same TLS record (clients wait for 101, so none do).
//
// # Processes
//
// One process may hold at most 20,000 open files, so larger targets are
// several processes on one port with SO_REUSEPORT: package target/group
// starts them and serves the control API that drives each Server's
// runtime controls (Stall, SetBacklog, SetAcceptRate, Reject,
// ShutdownWith: a graceful stop's close frames spread over a window, 1013
// with a return hint). Their listening sockets are package
// target/listener's.
//
// The package uses epoll and is Linux-only.
package target
