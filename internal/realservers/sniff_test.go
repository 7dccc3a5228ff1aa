package realservers

import (
	"testing"
	"time"

	"github.com/stampede-dev/stampede/connerr"
	"github.com/stampede-dev/stampede/session"
)

// TestSocketIOUnspoken: clients that do not speak Socket.IO are dropped by
// its connect timeout (1 s here), classed session_timeout, never a bare
// protocol, and the report names the protocol the server showed.
func TestSocketIOUnspoken(t *testing.T) {
	t.Parallel()
	const n = 10
	srv := startNode(t, "socketio.js", "300", "200", "1000")
	fl := startFleet(t, srv.url("ws", sioPath), n, session.Config{}, 10*time.Second)
	deadline := time.Now().Add(8 * time.Second)
	for time.Now().Before(deadline) {
		if s := fl.f.Stats(); s.Disconnects[connerr.SessionTimeout] >= n {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	rep := fl.report()
	if rep.Speaks != session.SocketIO {
		t.Errorf("Speaks = %q, want %q", rep.Speaks, session.SocketIO)
	}
	var timeouts, other uint64
	for _, b := range rep.Timeline {
		timeouts += uint64(b.Disconnects[connerr.SessionTimeout])
		other += uint64(b.Disconnects[connerr.Protocol])
	}
	if timeouts < n || other != 0 {
		t.Errorf("disconnects: session_timeout %d (want at least %d), protocol %d (want 0)", timeouts, n, other)
	}
}

// TestGraphQLWSUnspoken: without the subprotocol graphql-ws closes 4406;
// the clients stop as session_refused and the report names graphql-ws.
func TestGraphQLWSUnspoken(t *testing.T) {
	t.Parallel()
	srv := startNode(t, "graphqlws.js", "300")
	if rep := stopsAs(t, srv.url("ws", "/"), 5, session.Config{}, connerr.SessionRefused); rep.Speaks != session.GraphQLWS {
		t.Errorf("Speaks = %q, want %q", rep.Speaks, session.GraphQLWS)
	}
}
