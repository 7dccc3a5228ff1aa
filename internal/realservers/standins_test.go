package realservers

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/connerr"
	"github.com/stampede-dev/stampede/session"
)

// Phoenix and SignalR have no server installable here: their tests run
// against stand-ins written from the protocols' documents (node/phoenix.js,
// node/signalr.js), with the servers' own timeouts made short.

func phoenixSession(token string) session.Config {
	return session.Config{Protocol: session.Phoenix, Phoenix: session.PhoenixConfig{
		Topics: []string{"room:a", "room:b"}, Payload: json.RawMessage(`{"token":"` + token + `"}`), Heartbeat: 300 * time.Millisecond,
	}}
}

// TestPhoenixKillRestart: heartbeats every 300 ms against a server that
// drops a socket silent for 1 s.
func TestPhoenixKillRestart(t *testing.T) {
	t.Parallel()
	srv := startNode(t, "phoenix.js", "1000")
	holdKillRestart(t, srv, srv.url("ws", "/socket/websocket?vsn=2.0.0"), 40, phoenixSession("s3cret"), 2*time.Second)
}

// TestPhoenixJoinRefused: a join answered with an error stops every
// client as session_refused.
func TestPhoenixJoinRefused(t *testing.T) {
	t.Parallel()
	srv := startNode(t, "phoenix.js", "1000")
	stopsAs(t, srv.url("ws", "/socket/websocket?vsn=2.0.0"), 5, phoenixSession("wrong"), connerr.SessionRefused)
}

// TestSignalRKillRestart: the client's pings every 300 ms, the server's
// every 200 ms, each side dropping the other after 1 s of silence.
func TestSignalRKillRestart(t *testing.T) {
	t.Parallel()
	srv := startNode(t, "signalr.js", "200", "1000")
	sc := session.Config{Protocol: session.SignalR, SignalR: session.SignalRConfig{
		Joins: []session.Invocation{
			{Target: "JoinGroup", Arguments: json.RawMessage(`["g1"]`)},
			{Target: "JoinGroup", Arguments: json.RawMessage(`["g2"]`)},
		},
		PingInterval: 300 * time.Millisecond, ServerTimeout: time.Second,
	}}
	holdKillRestart(t, srv, srv.url("ws", "/hub"), 40, sc, 2*time.Second)
}
