package realservers

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/connerr"
	"github.com/stampede-dev/stampede/session"
)

// sioSession is the session the Socket.IO tests speak: namespace /chat
// with its token, two rooms joined with acknowledgements.
func sioSession(token string) session.Config {
	return session.Config{Protocol: session.SocketIO, SocketIO: session.SocketIOConfig{
		Namespace: "/chat",
		Auth:      json.RawMessage(`{"token":"` + token + `"}`),
		Events:    []json.RawMessage{json.RawMessage(`["join","r1"]`), json.RawMessage(`["join","r2"]`)},
		Ack:       true,
	}}
}

const sioPath = "/socket.io/?EIO=4&transport=websocket"

// TestSocketIOKillRestart: npm socket.io 4.8 with pingInterval 300 ms,
// pingTimeout 200 ms and connectTimeout 1 s; 1.5 s is three heartbeats
// and the connect timeout.
func TestSocketIOKillRestart(t *testing.T) {
	t.Parallel()
	srv := startNode(t, "socketio.js", "300", "200", "1000")
	holdKillRestart(t, srv, srv.url("ws", sioPath), 40, sioSession("s3cret"), 1500*time.Millisecond)
}

// TestSocketIOAuthRejected: a wrong token is the server's connect_error,
// class session_auth, and stops every client as a 401 does.
func TestSocketIOAuthRejected(t *testing.T) {
	t.Parallel()
	srv := startNode(t, "socketio.js", "300", "200", "1000")
	stopsAs(t, srv.url("ws", sioPath), 5, sioSession("wrong"), connerr.SessionAuth)
}
