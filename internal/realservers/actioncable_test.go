package realservers

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/connerr"
	"github.com/stampede-dev/stampede/internal/testenv"
	"github.com/stampede-dev/stampede/session"
)

var (
	rubyOnce sync.Once
	rubyErr  error
)

// startCable runs ruby/cable.rb: ActionCable 6.1 from Debian's
// ruby-actioncable, served by puma, its pings every beat.
func startCable(t *testing.T, beat string) *nodeServer {
	t.Helper()
	rubyOnce.Do(func() {
		out, err := exec.Command("ruby", "-e", `require "action_cable"; require "puma"`).CombinedOutput()
		if err != nil {
			rubyErr = fmt.Errorf("%v: %s", err, out)
		}
	})
	if rubyErr != nil {
		testenv.SkipUnlessRequired(t, "ruby with ActionCable and puma is not installed (apt-get install ruby-actioncable puma): %v", rubyErr)
	}
	script, err := filepath.Abs(filepath.Join("ruby", "cable.rb"))
	if err != nil {
		t.Fatal(err)
	}
	s := &nodeServer{t: t, script: "cable.rb", exe: "ruby", lead: []string{script}, args: []string{beat}, port: freePort(t)}
	s.start()
	t.Cleanup(s.kill)
	return s
}

func cableSession(rooms ...string) session.Config {
	sc := session.Config{Protocol: session.ActionCable, ActionCable: session.ActionCableConfig{StaleAfter: 2 * time.Second}}
	for _, r := range rooms {
		sc.ActionCable.Channels = append(sc.ActionCable.Channels, json.RawMessage(`{"channel":"RoomChannel","room":"`+r+`"}`))
	}
	return sc
}

// TestActionCableKillRestart: the server pings every 300 ms, the client
// finds it stale after 2 s; 2.5 s is eight pings.
func TestActionCableKillRestart(t *testing.T) {
	t.Parallel()
	srv := startCable(t, "0.3")
	holdKillRestart(t, srv, srv.url("ws", "/cable?token=s3cret"), 40, cableSession("a", "b"), 2500*time.Millisecond)
}

// TestActionCableServerRestart: ActionCable's own restart sends every
// client a disconnect with reconnect true: session_error, retried, and
// every client back and re-subscribed twice.
func TestActionCableServerRestart(t *testing.T) {
	t.Parallel()
	srv := startCable(t, "0.3")
	const n = 20
	fl := startFleet(t, srv.url("ws", "/cable?token=s3cret"), n, cableSession("a", "b"), 30*time.Second)
	all := func(m map[string]int) bool { return m["joined"] == n && m["subscribed"] == n }
	srv.waitStats(context.Background(), 10*time.Second, "every client subscribed", all)
	if s := fl.f.Stats(); s.DisconnectCount() != 0 {
		t.Fatalf("%d disconnects before the restart, want 0: %v", s.DisconnectCount(), s.Disconnects)
	}
	resp, err := http.Post(srv.url("http", "/restart"), "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if s := fl.f.Stats(); s.Disconnects[connerr.SessionError] == n && s.Subscribed == n {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	srv.waitStats(context.Background(), 10*time.Second, "every client subscribed again", all)
	s := fl.f.Stats()
	if got := s.Disconnects[connerr.SessionError]; got != n || s.DisconnectCount() != n {
		t.Errorf("disconnects as session_error %d of %d in all, want %d: %v", got, s.DisconnectCount(), n, s.Disconnects)
	}
	checkBackTwice(t, fl.report(), n)
}

// TestActionCableUnauthorized: a rejected connection is the server's
// disconnect "unauthorized" with reconnect false: session_auth, which
// stops every client.
func TestActionCableUnauthorized(t *testing.T) {
	t.Parallel()
	srv := startCable(t, "0.3")
	stopsAs(t, srv.url("ws", "/cable?token=wrong"), 5, cableSession("a"), connerr.SessionAuth)
}

// TestActionCableRejected: a subscription the channel rejects stops every
// client as session_refused.
func TestActionCableRejected(t *testing.T) {
	t.Parallel()
	srv := startCable(t, "0.3")
	stopsAs(t, srv.url("ws", "/cable?token=s3cret"), 5, cableSession("a", "forbidden"), connerr.SessionRefused)
}
