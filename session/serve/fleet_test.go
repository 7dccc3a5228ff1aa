package serve_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/loadgen"
	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/session"
	"github.com/stampede-dev/stampede/spec"
	"github.com/stampede-dev/stampede/target"
)

// TestFleetOnTarget: a fleet speaking each protocol against the bundled
// target serving it, on real sockets: every client back and re-subscribed,
// then the target ends abruptly and starts again on its port, and every
// client is back and re-subscribed once more.
func TestFleetOnTarget(t *testing.T) {
	for _, sc := range []session.Config{socketIOSession, mqttSession,
		{Protocol: session.MQTT, MQTT: session.MQTTConfig{Version: 5, KeepAlive: time.Second, Topics: []string{"t/a"}, QoS: 1}},
		{Protocol: session.ActionCable, ActionCable: session.ActionCableConfig{
			Channels:   []json.RawMessage{json.RawMessage(`{"channel":"ChatChannel","room":"1"}`), json.RawMessage(`{"channel":"Presence"}`)},
			StaleAfter: 4 * time.Second, // past the server's first 3 s beat
		}},
	} {
		t.Run(sc.Protocol, func(t *testing.T) { fleetOnTarget(t, sc, false) })
	}
}

// TestFleetOnTargetWSS: the same over wss:// against the target's --tls,
// where each client is a goroutine (loadgen's TLS path), not a reactor's.
func TestFleetOnTargetWSS(t *testing.T) {
	for _, sc := range []session.Config{socketIOSession, mqttSession} {
		t.Run(sc.Protocol, func(t *testing.T) { fleetOnTarget(t, sc, true) })
	}
}

var (
	socketIOSession = session.Config{Protocol: session.SocketIO, SocketIO: session.SocketIOConfig{
		Namespace: "/chat", Auth: json.RawMessage(`{"token":"t"}`), Ack: true,
		Events: []json.RawMessage{json.RawMessage(`["join","r1"]`), json.RawMessage(`["join","r2"]`)},
	}}
	mqttSession = session.Config{Protocol: session.MQTT, MQTT: session.MQTTConfig{KeepAlive: time.Second, Topics: []string{"t/a", "t/b"}, QoS: 1}}
)

func fleetOnTarget(t *testing.T, sc session.Config, tls bool) {
	srv := startTarget(t, "127.0.0.1:0", sc.Protocol, tls)
	addr := srv.Addr().String()
	const n = 30
	pol, err := backoff.Parse("exp:initial=50ms,max=200ms,jitter=0.5")
	if err != nil {
		t.Fatal(err)
	}
	scheme := "ws://"
	if tls {
		scheme = "wss://"
	}
	f, err := loadgen.New(loadgen.Config{Client: spec.Client{
		URL: scheme + addr + "/socket.io/?EIO=4&transport=websocket", Clients: n, Policy: pol, Seed: 3, TLSInsecure: tls,
		Session: sc, Reactors: 2, ConnectTimeout: 2 * time.Second, HandshakeTimeout: 2 * time.Second, PingInterval: -1,
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := make(chan *results.Report, 1)
	go func() {
		rep, err := f.Run(ctx)
		if err != nil {
			t.Error(err)
		}
		done <- rep
	}()
	waitSubscribed(t, f, n)
	// Past MQTT's keepalive (PINGRESP keeps it) and ActionCable's stale
	// rule (the server's pings keep it).
	time.Sleep(max(1500*time.Millisecond, sc.ActionCable.StaleAfter+500*time.Millisecond))
	if s := f.Stats(); s.DisconnectCount() != 0 {
		t.Fatalf("%d disconnects before the restart: %v", s.DisconnectCount(), s.Disconnects)
	}
	if err := srv.Shutdown(target.Abrupt); err != nil {
		t.Fatal(err)
	}
	startTarget(t, addr, sc.Protocol, tls)
	waitFor(t, func() bool { s := f.Stats(); return s.DisconnectCount() == n && s.Subscribed == n })
	cancel()
	rep := <-done
	for name, trs := range map[string][]results.Transition{"back": rep.Transitions, "re-subscribed": rep.Resubscribed} {
		ups := map[uint32]int{}
		for _, tr := range trs {
			if tr.Up {
				ups[tr.Client]++
			}
		}
		if len(ups) != n {
			t.Errorf("%s: %d clients, want %d", name, len(ups), n)
		}
		for c, k := range ups {
			if k != 2 {
				t.Errorf("%s: client %d %d times, want 2", name, c, k)
				break
			}
		}
	}
}

func startTarget(t *testing.T, addr, proto string, tls bool) *target.Server {
	t.Helper()
	srv, err := target.Start(target.Config{Server: spec.Server{Addr: addr, Session: proto, TLS: tls}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Shutdown(target.Abrupt) })
	<-srv.Ready()
	return srv
}

func waitSubscribed(t *testing.T, f *loadgen.Fleet, n int) {
	t.Helper()
	waitFor(t, func() bool { return f.Stats().Subscribed == int64(n) })
}

func waitFor(t *testing.T, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatal("not within 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
