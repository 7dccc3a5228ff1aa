package realservers

import (
	"testing"
	"time"

	"github.com/stampede-dev/stampede/connerr"
	"github.com/stampede-dev/stampede/session"
)

func mqttSession(password string) session.Config {
	return session.Config{Protocol: session.MQTT, MQTT: session.MQTTConfig{
		KeepAlive: time.Second, Username: "u", Password: password, Topics: []string{"t/a", "t/b"}, QoS: 1,
	}}
}

// TestAedesKillRestart: aedes 1.2 over websocket-stream; keepalive 1 s,
// which aedes enforces at 1.5 s: 2 s without a disconnect.
func TestAedesKillRestart(t *testing.T) {
	t.Parallel()
	srv := startNode(t, "aedes.mjs")
	holdKillRestart(t, srv, srv.url("ws", "/"), 40, mqttSession("pw"), 2*time.Second)
}

// TestAedesBadPassword: CONNACK return code 4, session_auth, stops every
// client.
func TestAedesBadPassword(t *testing.T) {
	t.Parallel()
	srv := startNode(t, "aedes.mjs")
	stopsAs(t, srv.url("ws", "/"), 5, mqttSession("nope"), connerr.SessionAuth)
}
