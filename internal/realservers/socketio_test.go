package realservers

import (
	"context"
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

// TestSocketIOKillRestart: clients hold their Socket.IO sessions through
// several of the server's short heartbeats without a disconnect, the
// server counts every one joined and in its rooms before it is killed and
// again after it starts anew, and every client is back and re-subscribed.
func TestSocketIOKillRestart(t *testing.T) {
	t.Parallel()
	const n = 40
	srv := startNode(t, "socketio.js", "300", "200", "1000")
	fl := startFleet(t, srv.url("ws", "/socket.io/?EIO=4&transport=websocket"), n, sioSession("s3cret"), 30*time.Second)
	ctx := context.Background()
	all := func(m map[string]int) bool { return m["joined"] == n && m["subscribed"] == n }
	srv.waitStats(ctx, 10*time.Second, "every client joined and in both rooms", all)
	time.Sleep(1500 * time.Millisecond) // three heartbeats and the connect timeout
	if s := fl.f.Stats(); s.DisconnectCount() != 0 {
		t.Fatalf("%d disconnects before the kill, want 0: %v", s.DisconnectCount(), s.Disconnects)
	}
	srv.restart()
	srv.waitStats(ctx, 15*time.Second, "every client joined and in both rooms after the restart", all)
	deadline := time.Now().Add(5 * time.Second)
	for fl.f.Stats().Subscribed < n && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	rep := fl.report()
	checkBackTwice(t, rep, n)
	if got := rep.Timeline; len(got) == 0 {
		t.Fatal("no timeline")
	}
	var hb uint64
	for _, b := range rep.Timeline {
		hb += uint64(b.Disconnects[connerr.HeartbeatTimeout]) + uint64(b.Disconnects[connerr.SessionTimeout])
	}
	if hb != 0 {
		t.Errorf("%d clients dropped by the server's heartbeat or connect timeout, want 0", hb)
	}
}

// TestSocketIOAuthRejected: a wrong token is the server's connect_error,
// class session_auth, and stops every client as a 401 does.
func TestSocketIOAuthRejected(t *testing.T) {
	t.Parallel()
	const n = 5
	srv := startNode(t, "socketio.js", "300", "200", "1000")
	fl := startFleet(t, srv.url("ws", "/socket.io/?EIO=4&transport=websocket"), n, sioSession("wrong"), 10*time.Second)
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if s := fl.f.Stats(); s.StoppedCount() >= n {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	s := fl.f.Stats()
	if got := s.Stopped[connerr.SessionAuth]; got != n {
		t.Fatalf("stopped as session_auth: %d, want %d (stopped %v)", got, n, s.Stopped)
	}
	rep := fl.report()
	if st := rep.Stopped["session_auth"]; st.Count != n || st.LastError == "" {
		t.Errorf("report's stopped session_auth = %+v", st)
	}
}
