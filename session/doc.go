// Package session speaks the session protocols that real WebSocket servers
// run on top of the socket (Socket.IO, graphql-ws, MQTT, STOMP, Phoenix,
// SignalR, ActionCable, Centrifuge), as state machines a reactor drives: no goroutine
// and no buffer per client, only a State of a few words.
//
// A Machine is one protocol for a whole fleet. The reactor owns the socket,
// the WebSocket framing and the timers; it feeds the machine what happened
// to one client and sends what the machine answers:
//
//	reactor ── Open(state, now) ───────────> Machine ──> Out: frames to send,
//	        ── Frame(state, data frame) ───>             events (Back,
//	        ── Timer(state, now) at Deadline>            Resubscribed, Fail)
//	        ── Closed(state, code, reason) ─> a class that names the drop
//
// A client is back when its session is (Socket.IO's namespace joined,
// graphql-ws's connection_ack, STOMP's CONNECTED, MQTT's CONNACK, the first
// Phoenix phx_reply ok, SignalR's handshake response, ActionCable's
// welcome, Centrifuge's connect reply), and re-subscribed when every
// subscription it asked for is acknowledged (docs/protocols.md says what
// that is per protocol). A failure the protocol names is a class of its
// own (connerr.SessionAuth, connerr.SessionRefused, ...): the fatal ones
// stop the client, as a 401 does.
//
// The machines answer the server's heartbeats, send their own on the
// client's one deadline (State.Deadline), and check that the server's still
// arrive: a session whose server went silent ends as
// connerr.HeartbeatTimeout.
package session
