package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/session"
)

// TestSessionSections: a protocol's section of a YAML or TOML config file
// fills the fleet's session, durations written as 10s.
func TestSessionSections(t *testing.T) {
	for _, tc := range []struct{ name, text string }{
		{"a.yaml", "protocol: mqtt\nmqtt:\n  version: 5\n  keepalive: 30s\n  topics: [a/b, c]\n  qos: 1\n  password: pw\n"},
		{"a.toml", "protocol = \"mqtt\"\n[mqtt]\nversion = 5\nkeepalive = \"30s\"\ntopics = [\"a/b\", \"c\"]\nqos = 1\npassword = \"pw\"\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			secs, err := configSections(writeFile(t, tc.name, tc.text))
			if err != nil {
				t.Fatal(err)
			}
			var sc session.Config
			if err := decodeSection(secs["mqtt"], &sc, "mqtt"); err != nil {
				t.Fatal(err)
			}
			m := sc.MQTT
			if m.Version != 5 || m.KeepAlive != 30*time.Second || len(m.Topics) != 2 || m.Topics[1] != "c" || m.QoS != 1 || m.Password != "pw" {
				t.Errorf("section decoded as %+v", m)
			}
		})
	}
}

// TestSessionErrors: one line naming the flag or the section's key.
func TestSessionErrors(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		args       []string
		want       string
	}{
		{"protocol with echo", "", []string{"--protocol", "socketio", "--mode", "echo"}, `--protocol: socketio speaks its own messages: it cannot run with mode "echo"`},
		{"unknown protocol", "", []string{"--protocol", "xmpp"}, "--protocol: must be one of"},
		{"section of another protocol", "protocol: mqtt\nstomp:\n  login: x\n", nil, "section stomp: only for --protocol stomp"},
		{"bad key value", "protocol: mqtt\nmqtt:\n  qos: 2\n", nil, "--config section mqtt: qos: must be 0 or 1, got 2"},
		{"unknown key", "protocol: stomp\nstomp:\n  passcod: x\n", nil, `section stomp: json: unknown field "passcod"`},
		{"bad duration", "protocol: stomp\nstomp:\n  heart_beat: soon\n", nil, "section stomp: heart_beat: time: invalid duration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"stampede", "loadgen", "--url", "ws://127.0.0.1:1/", "--duration", "1s"}
			if tc.text != "" {
				args = append(args, "--config", writeFile(t, "a.yaml", tc.text))
			}
			var stderr bytes.Buffer
			code := runApp(append(args, tc.args...), &bytes.Buffer{}, &stderr)
			if code != 2 || !strings.Contains(stderr.String(), tc.want) || strings.Count(stderr.String(), "\n") != 1 {
				t.Errorf("exit %d, stderr %q, want exit 2 and one line with %q", code, stderr.String(), tc.want)
			}
		})
	}
}

// TestSessionSectionElsewhere: a command without a fleet takes no
// section, as it takes no unknown key.
func TestSessionSectionElsewhere(t *testing.T) {
	var stderr bytes.Buffer
	code := runApp([]string{"stampede", "simulate", "--config", writeFile(t, "a.yaml", "socketio:\n  namespace: /x\n")}, &bytes.Buffer{}, &stderr)
	if code != 2 || !strings.Contains(stderr.String(), `unknown key "socketio"`) {
		t.Errorf("exit %d, stderr %q", code, stderr.String())
	}
}

// TestSessionOnBundledTarget: run, bench and advise take --protocol for
// what the bundled target serves, and refuse the rest in one line before
// anything starts.
func TestSessionOnBundledTarget(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--protocol", "stomp", "--duration", "1s"}, `--protocol: the bundled target serves the session protocols socketio, mqtt and actioncable, not "stomp"`},
		{[]string{"bench", "--protocol", "graphql-ws", "--duration", "20s"}, `--protocol: the bundled target serves the session protocols socketio, mqtt and actioncable, not "graphql-ws"`},
		{[]string{"run", "--protocol", "socketio", "--store", "file:///nonexistent", "--duration", "1s"}, "--protocol: socketio cannot run with --store"},
		{[]string{"advise", "--protocol", "mqtt", "--chaos", "at 1s restart abrupt", "--duration", "5s"}, "--protocol mqtt: only with --verify"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stderr bytes.Buffer
			code := runApp(append(append([]string{"stampede"}, tc.args...), "--clients", "10", "--out", t.TempDir()+"/o"), &bytes.Buffer{}, &stderr)
			if code != 2 || !strings.Contains(stderr.String(), tc.want) || strings.Count(stderr.String(), "\n") != 1 {
				t.Errorf("exit %d, stderr %q, want exit 2 and one line with %q", code, stderr.String(), tc.want)
			}
		})
	}
}
