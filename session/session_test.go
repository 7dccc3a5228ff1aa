package session

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/stampede-dev/stampede/connerr"
)

// step is one thing that happens to a client in a script: its connection
// opens, a frame arrives, or its deadline fires, at a time; want is what
// the machine must answer, frames as text (binary ones in hex) then events.
type step struct {
	at   time.Duration
	do   string // "open", "timer", or a frame received ("bin:" + hex for binary)
	want string // frames and events, " | "-separated
}

// run plays a script against m, one client, and returns the first
// mismatch.
func run(m Machine, steps []step) error {
	var s State
	var o Out
	for i, st := range steps {
		o.Reset()
		now := int64(st.at)
		switch {
		case st.do == "open":
			m.Open(&s, 42, now, &o)
		case st.do == "timer":
			m.Timer(&s, 42, now, &o)
		case strings.HasPrefix(st.do, "bin:"):
			var p []byte
			if _, err := fmt.Sscanf(st.do[4:], "%x", &p); err != nil {
				return err
			}
			m.Frame(&s, 42, p, true, now, &o)
		default:
			m.Frame(&s, 42, []byte(st.do), false, now, &o)
		}
		if got := render(&o); got != st.want {
			return fmt.Errorf("step %d (%q at %s):\n got %q\nwant %q", i, st.do, st.at, got, st.want)
		}
	}
	return nil
}

// render writes o as a script's want.
func render(o *Out) string {
	var parts []string
	for i := 0; i < o.Frames(); i++ {
		p, bin := o.Frame(i)
		if bin {
			parts = append(parts, fmt.Sprintf("bin:%x", p))
		} else {
			parts = append(parts, string(p))
		}
	}
	for _, e := range o.Events() {
		switch e.Kind {
		case EvBack:
			parts = append(parts, "BACK")
		case EvResubscribed:
			parts = append(parts, "RESUBSCRIBED")
		case EvFail:
			parts = append(parts, "FAIL "+e.Class.String())
		}
	}
	return strings.Join(parts, " | ")
}

func raw(s string) json.RawMessage { return json.RawMessage(s) }

const ms = time.Millisecond

func TestSocketIO(t *testing.T) {
	cfg := SocketIOConfig{Namespace: "/chat", Auth: raw(`{"token":"t"}`), Events: []json.RawMessage{raw(`["join","a"]`), raw(`["join","b"]`)}, Ack: true}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"connect, join two rooms, both acknowledged, a ping answered", []step{
			{0, "open", ""},
			{ms, `0{"sid":"x","upgrades":[],"pingInterval":300,"pingTimeout":200,"maxPayload":1000000}`, `40/chat,{"token":"t"}`},
			{2 * ms, `40/chat,{"sid":"y"}`, `42/chat,1["join","a"] | 42/chat,2["join","b"] | BACK`},
			{3 * ms, `43/chat,1["ok"]`, ""},
			{4 * ms, `43/chat,2["ok"]`, "RESUBSCRIBED"},
			{300 * ms, "2", "3"},
		}},
		{"the server's pings stop: heartbeat_timeout after pingInterval+pingTimeout", []step{
			{0, "open", ""},
			{0, `0{"sid":"x","pingInterval":300,"pingTimeout":200}`, `40/chat,{"token":"t"}`},
			{500 * ms, "timer", "FAIL heartbeat_timeout"},
		}},
		{"an auth middleware's error is session_auth", []step{
			{0, "open", ""},
			{0, `0{"sid":"x","pingInterval":300,"pingTimeout":200}`, `40/chat,{"token":"t"}`},
			{ms, `44/chat,{"message":"unauthorized"}`, "FAIL session_auth"},
		}},
		{"an unknown namespace is session_refused", []step{
			{0, "open", ""},
			{ms, `44/chat,{"message":"Invalid namespace"}`, "FAIL session_refused"},
		}},
		{"connection state recovery: pid and the last offset sent with the next connect", []step{
			{0, "open", ""},
			{ms, `0{"sid":"x","pingInterval":300,"pingTimeout":200}`, `40/chat,{"token":"t"}`},
			{2 * ms, `40/chat,{"sid":"y","pid":"P1"}`, `42/chat,1["join","a"] | 42/chat,2["join","b"] | BACK`},
			{3 * ms, `42/chat,["news",1,"off-7"]`, ""},
			{4 * ms, "open", ""},
			{5 * ms, `0{"sid":"z","pingInterval":300,"pingTimeout":200}`, `40/chat,{"pid":"P1","offset":"off-7","token":"t"}`},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := run(newSocketIO(cfg), tc.steps); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestSocketIOClosedByItsTimers(t *testing.T) {
	m := newSocketIO(SocketIOConfig{})
	var s State
	var o Out
	m.Open(&s, 1, 0, &o)
	m.Frame(&s, 1, []byte(`0{"sid":"x","pingInterval":300,"pingTimeout":200}`), false, 0, &o)
	if c := m.Closed(&s, 1005, "", int64(45*time.Second)); c != connerr.SessionTimeout {
		t.Errorf("closed before the namespace ack: %s, want session_timeout", c)
	}
	m.Frame(&s, 1, []byte(`40{"sid":"y"}`), false, 0, &o)
	if c := m.Closed(&s, 0, "", int64(10*ms)); c != connerr.None {
		t.Errorf("closed at once after the ack (a restart): %s, want none", c)
	}
	if c := m.Closed(&s, 1005, "", int64(600*ms)); c != connerr.HeartbeatTimeout {
		t.Errorf("closed after the heartbeat window: %s, want heartbeat_timeout", c)
	}
}

func TestGraphQLWS(t *testing.T) {
	cfg := GraphQLWSConfig{Payload: raw(`{"token":"t"}`), Operations: []json.RawMessage{raw(`{"query":"subscription { greetings }"}`)}}
	steps := []step{
		{0, "open", `{"type":"connection_init","payload":{"token":"t"}}`},
		{ms, `{"type":"connection_ack"}`, `{"id":"1","type":"subscribe","payload":{"query":"subscription { greetings }"}} | BACK | RESUBSCRIBED`},
		{2 * ms, `{"type":"ping"}`, `{"type":"pong"}`},
		{3 * ms, `{"id":"1","type":"error","payload":[{"message":"no"}]}`, "FAIL session_refused"},
	}
	if err := run(newGraphQLWS(cfg), steps); err != nil {
		t.Error(err)
	}
	for code, want := range map[int]connerr.Class{4400: connerr.SessionRefused, 4401: connerr.SessionAuth, 4403: connerr.SessionAuth,
		4406: connerr.SessionRefused, 4408: connerr.SessionTimeout, 4409: connerr.SessionRefused, 4429: connerr.Session4429,
		4500: connerr.SessionError, 1000: connerr.None} {
		if got := graphQLWSClose(code); got != want {
			t.Errorf("close %d: %s, want %s", code, got, want)
		}
	}
}

func TestMQTT(t *testing.T) {
	cfg := MQTTConfig{KeepAlive: time.Second, Topics: []string{"a/b", "c"}, QoS: 1, Username: "u", Password: "p"}
	m := newMQTT(cfg)
	steps := []step{
		// CONNECT 3.1.1: clean session, user name and password, keepalive 1 s, client "stampede-42".
		{0, "open", "bin:101d00044d51545404c20001000b7374616d706564652d3432000175000170"},
		{ms, "bin:20020000", "bin:820800010003612f6201 | bin:82060002000163" + "01 | BACK"},
		{2 * ms, "bin:9003000101", ""},
		{3 * ms, "bin:9003000201", "RESUBSCRIBED"},
		// A QoS 1 PUBLISH on topic "c", packet ID 7: PUBACK.
		{4 * ms, "bin:3206000163000778", "bin:40020007"},
		{time.Second, "timer", "bin:c000"},
		{3 * time.Second, "timer", "FAIL heartbeat_timeout"},
	}
	if err := run(m, steps); err != nil {
		t.Error(err)
	}
	for _, tc := range []struct {
		name  string
		cfg   MQTTConfig
		steps []step
	}{
		{"bad credentials are session_auth", MQTTConfig{}, []step{
			{0, "open", "bin:101700044d5154540402003c000b7374616d706564652d3432"},
			{ms, "bin:20020004", "FAIL session_auth"},
		}},
		{"server unavailable is session_error", MQTTConfig{}, []step{
			{0, "open", "bin:101700044d5154540402003c000b7374616d706564652d3432"},
			{ms, "bin:20020003", "FAIL session_error"},
		}},
		{"a kept persistent session is re-subscribed without subscribing", MQTTConfig{Persistent: true, Topics: []string{"a"}}, []step{
			{0, "open", "bin:101700044d5154540400003c000b7374616d706564652d3432"},
			{ms, "bin:20020100", "BACK | RESUBSCRIBED"},
		}},
		{"MQTT 5: CONNACK with properties, SUBACK refused", MQTTConfig{Version: 5, Topics: []string{"a"}}, []step{
			{0, "open", "bin:101800044d5154540502003c00000b7374616d706564652d3432"},
			{ms, "bin:2003000000", "bin:82070001000001" + "6100 | BACK"},
			{2 * ms, "bin:9004000100" + "87", "FAIL session_refused"},
		}},
		{"MQTT 5: not authorized is session_auth", MQTTConfig{Version: 5}, []step{
			{0, "open", "bin:101800044d5154540502003c00000b7374616d706564652d3432"},
			{ms, "bin:2003008700", "FAIL session_auth"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := run(newMQTT(tc.cfg), tc.steps); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestSTOMP(t *testing.T) {
	cfg := STOMPConfig{Login: "guest", Passcode: "pw", HeartBeat: time.Second, Destinations: []string{"/topic/a"}}
	steps := []step{
		{0, "open", "CONNECT\naccept-version:1.2\nhost:/\nlogin:guest\npasscode:pw\nheart-beat:1000,1000\n\n\x00"},
		{ms, "CONNECTED\nversion:1.2\nheart-beat:2000,500\n\n\x00", "SUBSCRIBE\nid:1\ndestination:/topic/a\nack:auto\nreceipt:1\n\n\x00 | BACK"},
		{2 * ms, "RECEIPT\nreceipt-id:1\n\n\x00", "RESUBSCRIBED"},
		{time.Second, "timer", "\n"},
		{2 * time.Second, "\n", ""},
		{3 * time.Second, "timer", "\n"},
		{6 * time.Second, "timer", "FAIL heartbeat_timeout"},
	}
	if err := run(newSTOMP(cfg), steps); err != nil {
		t.Error(err)
	}
	bad := []step{
		{0, "open", "CONNECT\naccept-version:1.2\nhost:/\nlogin:guest\npasscode:pw\nheart-beat:1000,1000\n\n\x00"},
		{ms, "ERROR\nmessage:Bad CONNECT\n\nAccess refused\x00", "FAIL session_auth"},
	}
	if err := run(newSTOMP(cfg), bad); err != nil {
		t.Error(err)
	}
}

func TestPhoenix(t *testing.T) {
	cfg := PhoenixConfig{Topics: []string{"room:a", "room:b"}, Heartbeat: time.Second}
	steps := []step{
		{0, "open", `["1","1","room:a","phx_join",{}] | ["2","2","room:b","phx_join",{}]`},
		{ms, `["1","1","room:a","phx_reply",{"status":"ok","response":{}}]`, "BACK"},
		{2 * ms, `["2","2","room:b","phx_reply",{"status":"ok","response":{}}]`, "RESUBSCRIBED"},
		{time.Second, "timer", `[null,"h","phoenix","heartbeat",{}]`},
		{time.Second + ms, `[null,"h","phoenix","phx_reply",{"status":"ok","response":{}}]`, ""},
		{2 * time.Second, "timer", `[null,"h","phoenix","heartbeat",{}]`},
		{3 * time.Second, "timer", "FAIL heartbeat_timeout"},
	}
	if err := run(newPhoenix(cfg), steps); err != nil {
		t.Error(err)
	}
	refused := []step{
		{0, "open", `["1","1","room:a","phx_join",{}] | ["2","2","room:b","phx_join",{}]`},
		{ms, `["1","1","room:a","phx_reply",{"status":"error","response":{"reason":"unauthorized"}}]`, "FAIL session_refused"},
	}
	if err := run(newPhoenix(cfg), refused); err != nil {
		t.Error(err)
	}
}

func TestSignalR(t *testing.T) {
	cfg := SignalRConfig{Joins: []Invocation{{Target: "JoinGroup", Arguments: raw(`["g1"]`)}}, PingInterval: time.Second, ServerTimeout: 2 * time.Second}
	steps := []step{
		{0, "open", "{\"protocol\":\"json\",\"version\":1}\x1e"},
		{ms, "{}\x1e", "{\"type\":1,\"invocationId\":\"1\",\"target\":\"JoinGroup\",\"arguments\":[\"g1\"]}\x1e | BACK"},
		{2 * ms, "{\"type\":3,\"invocationId\":\"1\",\"result\":null}\x1e{\"type\":6}\x1e", "RESUBSCRIBED"},
		{time.Second, "timer", "{\"type\":6}\x1e"},
		{2*time.Second + 2*ms, "timer", "FAIL heartbeat_timeout"},
	}
	if err := run(newSignalR(cfg), steps); err != nil {
		t.Error(err)
	}
	closed := []step{
		{0, "open", "{\"protocol\":\"json\",\"version\":1}\x1e"},
		{ms, "{\"error\":\"unknown protocol\"}\x1e", "FAIL session_refused"},
	}
	if err := run(newSignalR(cfg), closed); err != nil {
		t.Error(err)
	}
}

func TestActionCable(t *testing.T) {
	cfg := ActionCableConfig{Channels: []json.RawMessage{raw(`{"channel": "ChatChannel", "room": "1"}`)}}
	steps := []step{
		{0, "open", ""},
		{ms, `{"type":"welcome"}`, `{"command":"subscribe","identifier":"{\"channel\":\"ChatChannel\",\"room\":\"1\"}"} | BACK`},
		{2 * ms, `{"identifier":"{\"channel\":\"ChatChannel\",\"room\":\"1\"}","type":"confirm_subscription"}`, "RESUBSCRIBED"},
		{3 * time.Second, `{"type":"ping","message":1}`, ""},
		{9 * time.Second, "timer", "FAIL heartbeat_timeout"},
	}
	if err := run(newActionCable(cfg), steps); err != nil {
		t.Error(err)
	}
	for msg, want := range map[string]string{
		`{"type":"disconnect","reason":"unauthorized","reconnect":false}`:  "FAIL session_auth",
		`{"type":"disconnect","reason":"server_restart","reconnect":true}`: "FAIL session_error",
		`{"type":"reject_subscription","identifier":"x"}`:                  "FAIL session_refused",
	} {
		if err := run(newActionCable(cfg), []step{{0, "open", ""}, {ms, msg, want}}); err != nil {
			t.Error(err)
		}
	}
}

func TestSniff(t *testing.T) {
	for p, want := range map[string]string{
		`0{"sid":"x","upgrades":[],"pingInterval":25000,"pingTimeout":20000,"maxPayload":1000000}`: SocketIO,
		`{"type":"welcome"}`:          ActionCable,
		`{"type":"ping","message":1}`: "",
		`0{"not":"engine.io"}`:        "",
		`hello`:                       "",
	} {
		if got := Sniff([]byte(p)); got != want {
			t.Errorf("Sniff(%q) = %q, want %q", p, got, want)
		}
	}
	if p, c := SniffClose(4406, "Subprotocol not acceptable"); p != GraphQLWS || c != connerr.SessionRefused {
		t.Errorf("graphql-ws's 4406: %q %s", p, c)
	}
	if p, _ := SniffClose(1000, ""); p != "" {
		t.Errorf("a normal close: %q", p)
	}
}

// TestStateSize: a client's session costs the reactor 48 bytes; a field
// added must be weighed against every client of a fleet.
func TestStateSize(t *testing.T) {
	if n := unsafe.Sizeof(State{}); n != 48 {
		t.Errorf("State is %d bytes, want 48", n)
	}
}

// TestMQTTRefusedWithoutCONNACK: RabbitMQ's Web MQTT closes a CONNECT
// with bad credentials with 1002 "unauthenticated" and no CONNACK.
func TestMQTTRefusedWithoutCONNACK(t *testing.T) {
	m := newMQTT(MQTTConfig{KeepAlive: time.Second})
	var s State
	var o Out
	m.Open(&s, 1, 0, &o)
	if c := m.Closed(&s, 1002, "unauthenticated", int64(ms)); c != connerr.SessionAuth {
		t.Errorf("1002 unauthenticated before CONNACK: %s, want session_auth", c)
	}
	if c := m.Closed(&s, 1002, "frame error", int64(ms)); c != connerr.None {
		t.Errorf("1002 otherwise: %s, want none", c)
	}
	m.Frame(&s, 1, []byte{0x20, 2, 0, 0}, true, int64(ms), &o)
	if c := m.Closed(&s, 1002, "unauthenticated", int64(2*ms)); c != connerr.None {
		t.Errorf("1002 unauthenticated after CONNACK: %s, want none", c)
	}
}

func TestCentrifuge(t *testing.T) {
	cfg := CentrifugeConfig{Token: `s3"cret`, Data: raw(`{"v": 1}`), Channels: []string{"room:a", "room:b"}}
	steps := []step{
		{0, "open", `{"id":1,"connect":{"token":"s3\"cret","data":{"v": 1},"name":"stampede"}}`},
		{ms, `{"id":1,"connect":{"client":"c1","version":"0.40.1","ping":25,"pong":true}}`,
			`{"id":2,"subscribe":{"channel":"room:a"}} | {"id":3,"subscribe":{"channel":"room:b"}} | BACK`},
		{2 * ms, "{\"id\":2,\"subscribe\":{}}\n{\"id\":3,\"subscribe\":{\"data\":{\"error\":1}}}", "RESUBSCRIBED"},
		{25 * time.Second, `{}`, `{}`},
		{30 * time.Second, `{"push":{"channel":"room:a","pub":{"data":{"id":1}}}}`, ""},
		{64 * time.Second, "timer", ""},
		{66 * time.Second, "timer", "FAIL heartbeat_timeout"},
	}
	if err := run(newCentrifuge(cfg), steps); err != nil {
		t.Error(err)
	}
	// no pong asked: the server's pings go unanswered (an unasked pong
	// is a bad request to centrifuge-go)
	noPong := []step{
		{0, "open", `{"id":1,"connect":{"name":"stampede"}}`},
		{ms, `{"id":1,"connect":{"client":"c1","ping":25}}`, "BACK | RESUBSCRIBED"},
		{25 * time.Second, `{}`, ""},
	}
	if err := run(newCentrifuge(CentrifugeConfig{}), noPong); err != nil {
		t.Error(err)
	}
	if err := run(newCentrifuge(cfg), []step{{0, "open", `{"id":1,"connect":{"token":"s3\"cret","data":{"v": 1},"name":"stampede"}}`}, {5 * time.Second, "timer", "FAIL session_timeout"}}); err != nil {
		t.Error(err)
	}
	for msg, want := range map[string]string{
		`{"id":1,"error":{"code":101,"message":"unauthorized"}}`:                 "FAIL session_auth",
		`{"id":1,"error":{"code":100,"message":"internal server error"}}`:        "FAIL session_error",
		`{"id":1,"error":{"code":107,"message":"bad request","temporary":true}}`: "FAIL session_error",
		`{"id":1,"error":{"code":104,"message":"method not found"}}`:             "FAIL session_refused",
	} {
		if err := run(newCentrifuge(cfg), []step{{0, "open", `{"id":1,"connect":{"token":"s3\"cret","data":{"v": 1},"name":"stampede"}}`}, {ms, msg, want}}); err != nil {
			t.Error(err)
		}
	}
	m := newCentrifuge(cfg)
	for code, want := range map[int]connerr.Class{
		0: connerr.None, 1006: connerr.None, 3500: connerr.SessionAuth, 3507: connerr.SessionAuth,
		3502: connerr.SessionTimeout, 3012: connerr.HeartbeatTimeout, 3503: connerr.SessionRefused,
		4501: connerr.SessionRefused, 3001: connerr.SessionError, 4000: connerr.SessionError, 5000: connerr.SessionError,
	} {
		if got := m.Closed(nil, code, "", 0); got != want {
			t.Errorf("close %d: %s, want %s", code, got, want)
		}
	}
}
