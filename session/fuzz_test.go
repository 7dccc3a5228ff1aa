package session

import (
	"encoding/json"
	"testing"
	"time"
)

// FuzzFrames feeds each protocol's machine arbitrary server frames after
// it opened: whatever a server sends, a machine must not panic, and an
// event it reports is one of the three kinds.
func FuzzFrames(f *testing.F) {
	for _, seed := range []string{
		`0{"sid":"x","pingInterval":300,"pingTimeout":200}`, `40/chat,{"sid":"y","pid":"P"}`, `42/chat,["a","off"]`, `43/chat,1[]`, `44{"message":"x"}`,
		`{"type":"connection_ack"}`, `{"id":"1","type":"error"}`, "\x20\x02\x00\x00", "\x90\x03\x00\x01\x01", "\x32\x06\x00\x01c\x00\x07x", "\xe0\x01\x8d",
		"CONNECTED\nheart-beat:1,1\n\n\x00", "RECEIPT\nreceipt-id:1\n\n\x00", "ERROR\nmessage:x\n\n\x00",
		`["1","1","room:a","phx_reply",{"status":"ok"}]`, "{}\x1e{\"type\":3,\"invocationId\":\"1\"}\x1e", `{"type":"welcome"}`, `{"type":"disconnect","reconnect":false}`,
		"\x20\xff\xff\xff\xff", "\x90\x80", `[`, `"`, `0{`,
	} {
		f.Add([]byte(seed), false)
	}
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	cfg := Config{
		SocketIO:    SocketIOConfig{Namespace: "/chat", Auth: raw(`{"t":1}`), Events: []json.RawMessage{raw(`["join","a"]`)}, Ack: true},
		GraphQLWS:   GraphQLWSConfig{Operations: []json.RawMessage{raw(`{"query":"x"}`)}},
		MQTT:        MQTTConfig{Version: 5, Persistent: true, Topics: []string{"a", "b"}, QoS: 1},
		STOMP:       STOMPConfig{Destinations: []string{"/a"}},
		Phoenix:     PhoenixConfig{Topics: []string{"room:a"}},
		SignalR:     SignalRConfig{Joins: []Invocation{{Target: "J"}}},
		ActionCable: ActionCableConfig{Channels: []json.RawMessage{raw(`{"channel":"C"}`)}},
	}
	f.Fuzz(func(t *testing.T, p []byte, binary bool) {
		for _, name := range Protocols() {
			c := cfg
			c.Protocol = name
			m := New(c)
			var s State
			var o Out
			m.Open(&s, 7, 0, &o)
			for i := 0; i < 2; i++ {
				o.Reset()
				m.Frame(&s, 7, p, binary, int64(i)*int64(time.Millisecond), &o)
				for _, e := range o.Events() {
					if e.Kind < EvBack || e.Kind > EvFail {
						t.Fatalf("%s: event kind %d", name, e.Kind)
					}
				}
			}
			o.Reset()
			m.Timer(&s, 7, int64(time.Minute), &o)
			_ = m.Closed(&s, 1005, "", int64(time.Minute))
			_ = Sniff(p)
		}
	})
}
