package session

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want string // the error's start, "" for none
	}{
		{"zero: no session", Config{}, ""},
		{"an unknown protocol", Config{Protocol: "xmpp"}, "Protocol: must be one of"},
		{"socketio auth not an object", Config{Protocol: SocketIO, SocketIO: SocketIOConfig{Auth: raw(`["a"]`)}}, "SocketIO.Auth: must be a JSON object"},
		{"socketio event not an array", Config{Protocol: SocketIO, SocketIO: SocketIOConfig{Events: []json.RawMessage{raw(`"join"`)}}}, "SocketIO.Events[0]: must be a JSON array"},
		{"graphql-ws operation not JSON", Config{GraphQLWS: GraphQLWSConfig{Operations: []json.RawMessage{raw(`{query`)}}}, "GraphQLWS.Operations[0]: must be a JSON object"},
		{"mqtt version 3", Config{MQTT: MQTTConfig{Version: 3}}, "MQTT.Version"},
		{"mqtt qos 2", Config{MQTT: MQTTConfig{QoS: 2}}, "MQTT.QoS"},
		{"mqtt keepalive in ms", Config{MQTT: MQTTConfig{KeepAlive: 1500 * time.Millisecond}}, "MQTT.KeepAlive"},
		{"mqtt empty topic", Config{MQTT: MQTTConfig{Topics: []string{""}}}, "MQTT.Topics[0]"},
		{"signalr join without a target", Config{SignalR: SignalRConfig{Joins: []Invocation{{}}}}, "SignalR.Joins[0].Target"},
		{"negative heartbeat", Config{Phoenix: PhoenixConfig{Heartbeat: -time.Second}}, "Phoenix.Heartbeat"},
		{"a full mqtt section", Config{Protocol: MQTT, MQTT: MQTTConfig{Version: 5, KeepAlive: 30 * time.Second, Topics: []string{"a/#"}, QoS: 1}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)):
				t.Errorf("error %v, want %q...", err, tc.want)
			}
		})
	}
}

func TestConfigRedacted(t *testing.T) {
	c := Config{
		SocketIO:   SocketIOConfig{Auth: raw(`{"token":"tok-1","user":"ann"}`)},
		GraphQLWS:  GraphQLWSConfig{Payload: raw(`{"authToken":"tok-2"}`)},
		MQTT:       MQTTConfig{Username: "u", Password: "pw-3"},
		STOMP:      STOMPConfig{Login: "guest-4", Passcode: "pc-5"},
		Phoenix:    PhoenixConfig{Payload: raw(`{"passcode":"pc-6"}`)},
		SignalR:    SignalRConfig{Joins: []Invocation{{Target: "Join", Arguments: raw(`[{"login":"l-7"}]`)}}},
		Centrifuge: CentrifugeConfig{Token: "jwt-8", Data: raw(`{"apiKey":"k-9"}`)},
	}
	b, err := json.Marshal(c.Redacted())
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"tok-1", "tok-2", "pw-3", "guest-4", "pc-5", "pc-6", "l-7", "jwt-8", "k-9"} {
		if strings.Contains(string(b), secret) {
			t.Errorf("%s survives redaction: %s", secret, b)
		}
	}
	if !strings.Contains(string(b), `"user":"ann"`) {
		t.Errorf("a name that is no secret was hidden: %s", b)
	}
	if c.MQTT.Password != "pw-3" || !strings.Contains(string(c.SignalR.Joins[0].Arguments), "l-7") {
		t.Error("Redacted changed the original")
	}
}
