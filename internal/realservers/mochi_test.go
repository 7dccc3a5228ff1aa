package realservers

import (
	"fmt"
	"os"
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
	mochiOnce sync.Once
	mochiExe  string
	mochiErr  error
)

// startMochi builds mochi/ (mochi-mqtt, MQTT 5, a module of its own, from
// the Go module proxy) once per test process and runs it on its own
// ports.
func startMochi(t *testing.T) *nodeServer {
	t.Helper()
	mochiOnce.Do(func() {
		dir, err := os.MkdirTemp("", "stampede-mochi-")
		if err != nil {
			mochiErr = err
			return
		}
		mochiExe = filepath.Join(dir, "mochi")
		cmd := exec.Command("go", "build", "-o", mochiExe, ".")
		cmd.Dir = "mochi"
		if out, err := cmd.CombinedOutput(); err != nil {
			mochiErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if mochiErr != nil {
		testenv.SkipUnlessRequired(t, "mochi-mqtt did not build (the Go module proxy may be out of reach): %v", mochiErr)
	}
	s := &nodeServer{t: t, script: "mochi", exe: mochiExe, port: freePort(t), statsPort: freePort(t)}
	s.args = []string{fmt.Sprint(s.statsPort)}
	s.start()
	t.Cleanup(s.kill)
	return s
}

// mqtt5Session is MQTT 5 with keepalive 2 s: mochi's read deadline is
// keepalive + keepalive/2 in whole seconds, so a keepalive of 1 s gives
// it 1 s, no margin for a PINGREQ sent after 1 s.
func mqtt5Session(password string) session.Config {
	sc := mqttSession(password)
	sc.MQTT.Version = 5
	sc.MQTT.KeepAlive = 2 * time.Second
	return sc
}

// TestMochiMQTT5KillRestart: MQTT 5 against mochi-mqtt 2.7.9: 3.5 s (a
// keepalive and more than mochi's 3 s deadline) without a disconnect,
// then a kill.
func TestMochiMQTT5KillRestart(t *testing.T) {
	t.Parallel()
	srv := startMochi(t)
	holdKillRestart(t, srv, srv.url("ws", "/"), 40, mqtt5Session("pw"), 3500*time.Millisecond)
}

// TestMochiMQTT5BadPassword: CONNACK reason 0x86, session_auth, stops
// every client.
func TestMochiMQTT5BadPassword(t *testing.T) {
	t.Parallel()
	srv := startMochi(t)
	stopsAs(t, srv.url("ws", "/"), 5, mqtt5Session("nope"), connerr.SessionAuth)
}
