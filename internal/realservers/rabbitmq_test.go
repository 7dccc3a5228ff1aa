package realservers

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/connerr"
	"github.com/stampede-dev/stampede/internal/testenv"
	"github.com/stampede-dev/stampede/session"
)

// RabbitMQ 3.10 speaks STOMP 1.2 (rabbitmq_web_stomp, ws://HOST:15674/ws)
// and MQTT 3.1.1 (rabbitmq_web_mqtt, ws://HOST:15675/ws) over WebSocket.
// The tests that only connect and subscribe use the machine's service,
// whose plugins .ci/run enables; the test that kills the broker runs a node
// of its own, on its own ports, from files in a temporary folder.

const rabbitBin = "/usr/lib/rabbitmq/bin"

// rabbitService returns the machine's RabbitMQ WebSocket URL on port, or
// skips the test when nothing listens there.
func rabbitService(t *testing.T, port int, plugin string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
	if err != nil {
		testenv.SkipUnlessRequired(t, "RabbitMQ's %s is not listening on 127.0.0.1:%d (.ci/run enables it: rabbitmq-plugins enable %s): %v", plugin, port, plugin, err)
	}
	c.Close()
	return fmt.Sprintf("ws://127.0.0.1:%d/ws", port)
}

var rabbitSeq atomic.Int32

// clientPrefix is an MQTT client ID prefix no other test process shares:
// a broker ends the older of two sessions with one client ID.
func clientPrefix(name string) string {
	return fmt.Sprintf("stampede-%s-%d-%d-", name, os.Getpid(), rabbitSeq.Add(1))
}

func stompSession(passcode string) session.Config {
	return session.Config{Protocol: session.STOMP, STOMP: session.STOMPConfig{
		Login: "guest", Passcode: passcode, HeartBeat: time.Second, Destinations: []string{"/topic/a", "/topic/b"},
	}}
}

func rabbitMQTTSession(password string) session.Config {
	return session.Config{Protocol: session.MQTT, MQTT: session.MQTTConfig{
		KeepAlive: time.Second, Username: "guest", Password: password, Topics: []string{"t/a", "t/b"}, QoS: 1,
		ClientIDPrefix: clientPrefix("rabbit"),
	}}
}

// holdService: n clients hold their sessions with the machine's broker
// for hold (two heartbeats) without a disconnect, each back and
// re-subscribed once.
func holdService(t *testing.T, url string, n int, sc session.Config, hold time.Duration) {
	t.Helper()
	fl := startFleet(t, url, n, sc, 30*time.Second)
	deadline := time.Now().Add(15 * time.Second)
	for fl.f.Stats().Subscribed < int64(n) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(hold)
	if s := fl.f.Stats(); s.DisconnectCount() != 0 || s.Subscribed != int64(n) {
		t.Fatalf("re-subscribed %d of %d, %d disconnects (want 0): %v", s.Subscribed, n, s.DisconnectCount(), s.Disconnects)
	}
	rep := fl.report()
	for name, trs := range map[string]int{"back": len(ups(rep.Transitions)), "re-subscribed": len(ups(rep.Resubscribed))} {
		if trs != n {
			t.Errorf("%s: %d clients, want %d", name, trs, n)
		}
	}
}

// TestRabbitServiceSTOMP: STOMP 1.2 with heart-beats of 1 s both ways
// against the machine's RabbitMQ, two destinations each with a receipt.
func TestRabbitServiceSTOMP(t *testing.T) {
	t.Parallel()
	holdService(t, rabbitService(t, 15674, "rabbitmq_web_stomp"), 20, stompSession("guest"), 2500*time.Millisecond)
}

// TestRabbitServiceSTOMPBadPasscode: RabbitMQ answers CONNECT with an
// ERROR frame: session_auth, which stops every client.
func TestRabbitServiceSTOMPBadPasscode(t *testing.T) {
	t.Parallel()
	stopsAs(t, rabbitService(t, 15674, "rabbitmq_web_stomp"), 5, stompSession("nope"), connerr.SessionAuth)
}

// TestRabbitServiceMQTT: MQTT 3.1.1 with keepalive 1 s (RabbitMQ drops
// at 1.5 s) against the machine's RabbitMQ.
func TestRabbitServiceMQTT(t *testing.T) {
	t.Parallel()
	holdService(t, rabbitService(t, 15675, "rabbitmq_web_mqtt"), 20, rabbitMQTTSession("guest"), 2500*time.Millisecond)
}

// TestRabbitServiceMQTTBadPassword: CONNACK's bad user name or password,
// session_auth, stops every client.
func TestRabbitServiceMQTTBadPassword(t *testing.T) {
	t.Parallel()
	stopsAs(t, rabbitService(t, 15675, "rabbitmq_web_mqtt"), 5, rabbitMQTTSession("nope"), connerr.SessionAuth)
}

// rabbitNode is a RabbitMQ node of a test's own: every file it writes
// (database, logs, feature flags, enabled plugins, cookie) in a temporary
// folder, every port its own, so that killing it disturbs nobody.
type rabbitNode struct {
	t       *testing.T
	dir     string
	env     []string
	node    string
	stomp   int // web_stomp's port
	mqtt    int // web_mqtt's port
	perConn int // subscriptions per connection, for the counts
	cmd     *exec.Cmd
	exited  chan struct{}
}

// startRabbit starts a node with rabbitmq_web_stomp and rabbitmq_web_mqtt
// and waits until both listen.
func startRabbit(t *testing.T) *rabbitNode {
	t.Helper()
	if _, err := os.Stat(filepath.Join(rabbitBin, "rabbitmq-server")); err != nil {
		testenv.SkipUnlessRequired(t, "RabbitMQ is not installed (apt-get install rabbitmq-server): %v", err)
	}
	dir := t.TempDir()
	r := &rabbitNode{t: t, dir: dir, stomp: freePort(t), mqtt: freePort(t), perConn: 2,
		node: fmt.Sprintf("stampede-%d-%d@localhost", os.Getpid(), rabbitSeq.Add(1))}
	amqp, mqttTCP, stompTCP, dist := freePort(t), freePort(t), freePort(t), freePort(t)
	conf := fmt.Sprintf(`listeners.tcp.default = 127.0.0.1:%d
mqtt.listeners.tcp.default = 127.0.0.1:%d
stomp.listeners.tcp.default = 127.0.0.1:%d
web_stomp.tcp.ip = 127.0.0.1
web_stomp.tcp.port = %d
web_mqtt.tcp.ip = 127.0.0.1
web_mqtt.tcp.port = %d
`, amqp, mqttTCP, stompTCP, r.stomp, r.mqtt)
	files := map[string]string{
		"rabbitmq.conf":     conf,
		"enabled_plugins":   "[rabbitmq_web_stomp,rabbitmq_web_mqtt].\n",
		"rabbitmq-env.conf": "", // not the machine's, which names its node
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	r.env = append(os.Environ(),
		"HOME="+dir, // the Erlang cookie
		"RABBITMQ_MNESIA_BASE="+filepath.Join(dir, "mnesia"),
		"RABBITMQ_LOG_BASE="+filepath.Join(dir, "log"),
		"RABBITMQ_FEATURE_FLAGS_FILE="+filepath.Join(dir, "feature_flags"),
		"RABBITMQ_ENABLED_PLUGINS_FILE="+filepath.Join(dir, "enabled_plugins"),
		"RABBITMQ_CONFIG_FILE="+filepath.Join(dir, "rabbitmq.conf"),
		"RABBITMQ_CONF_ENV_FILE="+filepath.Join(dir, "rabbitmq-env.conf"),
		"RABBITMQ_PID_FILE="+filepath.Join(dir, "pid"),
		"RABBITMQ_NODENAME="+r.node,
		fmt.Sprintf("RABBITMQ_NODE_PORT=%d", amqp),
		fmt.Sprintf("RABBITMQ_DIST_PORT=%d", dist),
		"ERL_EPMD_ADDRESS=127.0.0.1",
		"RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS=-kernel inet_dist_use_interface {127,0,0,1}",
	)
	r.start()
	t.Cleanup(r.kill)
	return r
}

func (r *rabbitNode) start() {
	r.t.Helper()
	out, err := os.OpenFile(filepath.Join(r.dir, "server.out"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		r.t.Fatal(err)
	}
	defer out.Close()
	cmd := exec.Command(filepath.Join(rabbitBin, "rabbitmq-server"))
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = r.dir, r.env, out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	r.cmd, r.exited = cmd, make(chan struct{})
	go func(done chan struct{}) { _ = cmd.Wait(); close(done) }(r.exited)
	deadline := time.Now().Add(120 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-r.exited:
			r.t.Fatalf("the RabbitMQ node exited before it listened:\n%s", r.log())
		default:
		}
		if listening(r.stomp) && listening(r.mqtt) {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	r.t.Fatalf("the RabbitMQ node did not listen on %d and %d within 120s:\n%s", r.stomp, r.mqtt, r.log())
}

func listening(port int) bool {
	c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 200*time.Millisecond)
	if err == nil {
		c.Close()
	}
	return err == nil
}

// log is the end of what the node printed.
func (r *rabbitNode) log() string {
	b, _ := os.ReadFile(filepath.Join(r.dir, "server.out"))
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// kill ends the node with SIGKILL: no close frames, no clean shutdown.
func (r *rabbitNode) kill() {
	if r.cmd == nil {
		return
	}
	_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
	<-r.exited
	r.cmd = nil
}

func (r *rabbitNode) restart() {
	r.t.Helper()
	r.kill()
	r.start()
}

// stats asks the node itself: joined is its client connections (Web
// STOMP's and Web MQTT's are direct connections), subscribed the
// bindings on amq.topic (where both plugins bind their subscriptions)
// divided by the subscriptions per connection.
func (r *rabbitNode) stats() (map[string]int, error) {
	cmd := exec.Command(filepath.Join(rabbitBin, "rabbitmqctl"), "-n", r.node, "-q", "eval",
		`{length(rabbit_direct:list()), length(rabbit_binding:list_for_source(rabbit_misc:r(<<"/">>, exchange, <<"amq.topic">>)))}.`)
	cmd.Env = r.env
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("rabbitmqctl eval: %v", err)
	}
	var conns, binds int
	if _, err := fmt.Sscanf(strings.TrimSpace(string(out)), "{%d,%d}", &conns, &binds); err != nil {
		return nil, fmt.Errorf("rabbitmqctl eval printed %q: %v", out, err)
	}
	return map[string]int{"joined": conns, "subscribed": binds / r.perConn}, nil
}

func (r *rabbitNode) waitStats(ctx context.Context, d time.Duration, what string, ok func(map[string]int) bool) map[string]int {
	r.t.Helper()
	deadline := time.Now().Add(d)
	var last map[string]int
	var lastErr error
	for time.Now().Before(deadline) && ctx.Err() == nil {
		m, err := r.stats()
		if err == nil && ok(m) {
			return m
		}
		last, lastErr = m, err
		time.Sleep(300 * time.Millisecond)
	}
	r.t.Fatalf("RabbitMQ: the node's counts %v (%v) never showed %s within %s", last, lastErr, what, d)
	return nil
}

// TestRabbitKillRestart: STOMP and MQTT clients at once against a node of
// the test's own, 2.5 s (two heartbeats) without a disconnect, then a
// SIGKILL and a start anew: the node counts every session and its
// subscriptions before and after, and every client is back and
// re-subscribed twice.
func TestRabbitKillRestart(t *testing.T) {
	t.Parallel()
	r := startRabbit(t)
	const n = 20
	fs := startFleet(t, fmt.Sprintf("ws://127.0.0.1:%d/ws", r.stomp), n, stompSession("guest"), 3*time.Minute)
	fm := startFleet(t, fmt.Sprintf("ws://127.0.0.1:%d/ws", r.mqtt), n, rabbitMQTTSession("guest"), 3*time.Minute)
	ctx := context.Background()
	all := func(m map[string]int) bool { return m["joined"] == 2*n && m["subscribed"] == 2*n }
	r.waitStats(ctx, 30*time.Second, "every client joined and subscribed", all)
	time.Sleep(2500 * time.Millisecond)
	for name, fl := range map[string]*fleet{"stomp": fs, "mqtt": fm} {
		if s := fl.f.Stats(); s.DisconnectCount() != 0 {
			t.Fatalf("%s: %d disconnects before the kill, want 0: %v", name, s.DisconnectCount(), s.Disconnects)
		}
	}
	r.restart()
	r.waitStats(ctx, 60*time.Second, "every client joined and subscribed after the restart", all)
	for name, fl := range map[string]*fleet{"stomp": fs, "mqtt": fm} {
		deadline := time.Now().Add(10 * time.Second)
		for fl.f.Stats().Subscribed < n && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		t.Logf("%s: checking every client back and re-subscribed twice", name)
		checkBackTwice(t, fl.report(), n)
	}
}
