package session

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/stampede-dev/stampede/internal/redact"
)

// Config is the session a fleet speaks: the protocol and its own messages,
// one section per protocol (the --config file's section of the same name).
// The zero value speaks no session protocol. Errors name the field as
// "Client.Session.MQTT.QoS".
type Config struct {
	// Protocol is one of Protocols(), empty for none.
	Protocol string `json:"protocol,omitempty"`
	// SocketIO is the socketio section.
	SocketIO SocketIOConfig `json:"socketio,omitzero"`
	// GraphQLWS is the graphql-ws section.
	GraphQLWS GraphQLWSConfig `json:"graphql-ws,omitzero"`
	// MQTT is the mqtt section.
	MQTT MQTTConfig `json:"mqtt,omitzero"`
	// STOMP is the stomp section.
	STOMP STOMPConfig `json:"stomp,omitzero"`
	// Phoenix is the phoenix section.
	Phoenix PhoenixConfig `json:"phoenix,omitzero"`
	// SignalR is the signalr section.
	SignalR SignalRConfig `json:"signalr,omitzero"`
	// ActionCable is the actioncable section.
	ActionCable ActionCableConfig `json:"actioncable,omitzero"`
	// Centrifuge is the centrifuge section.
	Centrifuge CentrifugeConfig `json:"centrifuge,omitzero"`
}

// SocketIOConfig is a Socket.IO session (Engine.IO 4, Socket.IO 5).
type SocketIOConfig struct {
	// Namespace is the namespace joined with each connect, "/" when empty.
	Namespace string `json:"namespace,omitempty"`
	// Auth is the JSON object sent with the namespace connect (socket.io
	// client's auth option), none when empty.
	Auth json.RawMessage `json:"auth,omitempty"`
	// Events are emitted after every namespace connect, each a JSON array
	// of the event name and its arguments: ["join", "room-1"].
	Events []json.RawMessage `json:"events,omitempty"`
	// Ack makes each event ask for an acknowledgement; the client is
	// re-subscribed when every one is answered. Without it the client is
	// re-subscribed once its events are sent.
	Ack bool `json:"ack,omitempty"`
}

// GraphQLWSConfig is a graphql-ws session (subprotocol
// graphql-transport-ws).
type GraphQLWSConfig struct {
	// Payload is connection_init's payload, a JSON object, none when
	// empty.
	Payload json.RawMessage `json:"payload,omitempty"`
	// Operations are subscribed after each connection_ack, each a
	// subscribe payload: {"query": "subscription { greetings }"}.
	Operations []json.RawMessage `json:"operations,omitempty"`
	// PingInterval sends a protocol ping this often; zero sends none (the
	// server's WebSocket pings are answered all the same).
	PingInterval time.Duration `json:"ping_interval,omitempty"`
}

// MQTTConfig is an MQTT session over WebSocket (subprotocol mqtt).
type MQTTConfig struct {
	// Version is 4 (MQTT 3.1.1, the default when zero) or 5.
	Version int `json:"version,omitempty"`
	// KeepAlive is CONNECT's keepalive; the client sends PINGREQ this
	// often. Zero means 60 s, whole seconds up to 65535 s.
	KeepAlive time.Duration `json:"keepalive,omitempty"`
	// Persistent asks for a persistent session (clean session 0): a
	// CONNACK with session present set means the server kept the
	// subscriptions, and the client does not subscribe again.
	Persistent bool `json:"persistent,omitempty"`
	// ClientIDPrefix prefixes the client's ID in its client identifier;
	// "stampede-" when empty.
	ClientIDPrefix string `json:"client_id_prefix,omitempty"`
	// Username and Password are CONNECT's credentials, none when empty.
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"`
	// Topics are subscribed after each CONNACK (unless the session was
	// kept), one SUBSCRIBE each.
	Topics []string `json:"topics,omitempty"`
	// QoS is the subscriptions' maximum QoS, 0 or 1.
	QoS int `json:"qos,omitempty"`
}

// STOMPConfig is a STOMP 1.2 session.
type STOMPConfig struct {
	// Host is CONNECT's host header (the virtual host), "/" when empty.
	Host string `json:"host,omitempty"`
	// Login and Passcode are CONNECT's credentials, none when empty.
	Login    string `json:"login,omitempty"`
	Passcode string `json:"passcode,omitempty"`
	// HeartBeat is what the client offers both ways in CONNECT's
	// heart-beat header; zero means 10 s, negative none.
	HeartBeat time.Duration `json:"heart_beat,omitempty"`
	// Destinations are subscribed after each CONNECTED, each with a
	// receipt: re-subscribed when every RECEIPT is in.
	Destinations []string `json:"destinations,omitempty"`
}

// PhoenixConfig is a Phoenix channels session (serializer v2, JSON).
type PhoenixConfig struct {
	// Topics are joined after each connect (phx_join).
	Topics []string `json:"topics,omitempty"`
	// Payload is each phx_join's payload, a JSON object; {} when empty.
	Payload json.RawMessage `json:"payload,omitempty"`
	// Heartbeat is how often the client sends its heartbeat; zero means
	// 30 s, phoenix.js's. An unanswered heartbeat ends the session.
	Heartbeat time.Duration `json:"heartbeat,omitempty"`
}

// SignalRConfig is a SignalR session (JSON hub protocol, WebSocket
// transport without negotiate: the URL is the hub's).
type SignalRConfig struct {
	// Joins are invoked after each handshake, and acknowledged by their
	// completions.
	Joins []Invocation `json:"joins,omitempty"`
	// PingInterval is how often the client pings (type 6); zero means
	// 15 s.
	PingInterval time.Duration `json:"ping_interval,omitempty"`
	// ServerTimeout ends a session that heard nothing from the server
	// this long; zero means 30 s.
	ServerTimeout time.Duration `json:"server_timeout,omitempty"`
}

// Invocation is one hub method call.
type Invocation struct {
	// Target is the hub method's name.
	Target string `json:"target"`
	// Arguments is a JSON array of its arguments; [] when empty.
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// ActionCableConfig is an ActionCable session (subprotocol
// actioncable-v1-json).
type ActionCableConfig struct {
	// Channels are subscribed after each welcome, each an identifier
	// object: {"channel": "ChatChannel", "room": "1"}.
	Channels []json.RawMessage `json:"channels,omitempty"`
	// StaleAfter ends a session whose server has not pinged for this
	// long; zero means 6 s, twice the server's 3 s pings.
	StaleAfter time.Duration `json:"stale_after,omitempty"`
}

// CentrifugeConfig is a Centrifuge session (centrifuge-go, Centrifugo;
// JSON protocol over WebSocket).
type CentrifugeConfig struct {
	// Token is the connect command's token (a JWT for Centrifugo), none
	// when empty.
	Token string `json:"token,omitempty"`
	// Data is the connect command's data, a JSON object, none when empty.
	Data json.RawMessage `json:"data,omitempty"`
	// Channels are subscribed after each connect reply, one subscribe
	// command each: re-subscribed when every reply is in.
	Channels []string `json:"channels,omitempty"`
	// Timeout ends a session whose connect reply is not in this long
	// after the upgrade; zero means 5 s, centrifuge-js's.
	Timeout time.Duration `json:"timeout,omitempty"`
	// MaxPingDelay is how long past the server's ping interval (its
	// connect reply's "ping") a silent server is waited for; zero means
	// 10 s, centrifuge-js's maxServerPingDelay.
	MaxPingDelay time.Duration `json:"max_ping_delay,omitempty"`
}

// FieldError is a Config field that is not usable. spec wraps it into its
// own field errors.
type FieldError struct {
	Field string // "Protocol", "MQTT.QoS"
	Msg   string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

func bad(field, format string, a ...any) error {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, a...)}
}

// Validate reports the first field that is not usable.
func (c Config) Validate() error {
	if c.Protocol != "" && !slices.Contains(Protocols(), c.Protocol) {
		return bad("Protocol", "must be one of %v, got %q", Protocols(), c.Protocol)
	}
	if err := checkJSON("SocketIO.Auth", c.SocketIO.Auth, '{'); err != nil {
		return err
	}
	for i, e := range c.SocketIO.Events {
		if err := checkJSON(fmt.Sprintf("SocketIO.Events[%d]", i), e, '['); err != nil {
			return err
		}
	}
	if err := checkJSON("GraphQLWS.Payload", c.GraphQLWS.Payload, '{'); err != nil {
		return err
	}
	for i, op := range c.GraphQLWS.Operations {
		if err := checkJSON(fmt.Sprintf("GraphQLWS.Operations[%d]", i), op, '{'); err != nil {
			return err
		}
	}
	if err := c.MQTT.validate(); err != nil {
		return err
	}
	if err := checkJSON("Phoenix.Payload", c.Phoenix.Payload, '{'); err != nil {
		return err
	}
	for i, inv := range c.SignalR.Joins {
		if inv.Target == "" {
			return bad(fmt.Sprintf("SignalR.Joins[%d].Target", i), "must be set")
		}
		if err := checkJSON(fmt.Sprintf("SignalR.Joins[%d].Arguments", i), inv.Arguments, '['); err != nil {
			return err
		}
	}
	for i, ch := range c.ActionCable.Channels {
		if err := checkJSON(fmt.Sprintf("ActionCable.Channels[%d]", i), ch, '{'); err != nil {
			return err
		}
	}
	if err := c.Centrifuge.validate(); err != nil {
		return err
	}
	for _, d := range []struct {
		field string
		d     time.Duration
	}{
		{"GraphQLWS.PingInterval", c.GraphQLWS.PingInterval}, {"Phoenix.Heartbeat", c.Phoenix.Heartbeat},
		{"SignalR.PingInterval", c.SignalR.PingInterval}, {"SignalR.ServerTimeout", c.SignalR.ServerTimeout},
		{"ActionCable.StaleAfter", c.ActionCable.StaleAfter}, {"Centrifuge.Timeout", c.Centrifuge.Timeout},
		{"Centrifuge.MaxPingDelay", c.Centrifuge.MaxPingDelay},
	} {
		if d.d < 0 {
			return bad(d.field, "must be >= 0, got %s", d.d)
		}
	}
	return nil
}

func (c MQTTConfig) validate() error {
	switch {
	case c.Version != 0 && c.Version != 4 && c.Version != 5:
		return bad("MQTT.Version", "must be 4 (3.1.1) or 5, got %d", c.Version)
	case c.KeepAlive < 0 || c.KeepAlive > 65535*time.Second || c.KeepAlive%time.Second != 0:
		return bad("MQTT.KeepAlive", "must be whole seconds within 0..65535s, got %s", c.KeepAlive)
	case c.QoS < 0 || c.QoS > 1:
		return bad("MQTT.QoS", "must be 0 or 1, got %d", c.QoS)
	case len(c.Topics) > 65535:
		return bad("MQTT.Topics", "at most 65535 topics, got %d", len(c.Topics))
	}
	for i, t := range c.Topics {
		if t == "" || len(t) > 65535 {
			return bad(fmt.Sprintf("MQTT.Topics[%d]", i), "must be 1..65535 bytes, got %d", len(t))
		}
	}
	return nil
}

func (c CentrifugeConfig) validate() error {
	if err := checkJSON("Centrifuge.Data", c.Data, '{'); err != nil {
		return err
	}
	for i, ch := range c.Channels {
		if ch == "" {
			return bad(fmt.Sprintf("Centrifuge.Channels[%d]", i), "must not be empty")
		}
	}
	return nil
}

// checkJSON checks that raw, when given, is a JSON value opening with
// open ('{' an object, '[' an array).
func checkJSON(field string, raw json.RawMessage, open byte) error {
	if len(raw) == 0 {
		return nil
	}
	kind := map[byte]string{'{': "object", '[': "array"}[open]
	if !json.Valid(raw) {
		return bad(field, "must be a JSON %s, got %.40q", kind, raw)
	}
	for _, b := range raw {
		if b == ' ' || b == '\t' || b == '\n' || b == '\r' {
			continue
		}
		if b != open {
			return bad(field, "must be a JSON %s, got %.40q", kind, raw)
		}
		break
	}
	return nil
}

// Redacted returns c with its secrets hidden, for anything written or
// printed: the credentials of MQTT and STOMP, Centrifuge's token, and every JSON string under
// a key that names a secret (redact.Policy.JSON: "token", "password",
// "passcode", "login", ...) in the auth and join payloads.
func (c Config) Redacted() Config {
	hide := func(s string) string {
		if s == "" {
			return s
		}
		return redact.Mark
	}
	c.MQTT.Password = hide(c.MQTT.Password)
	c.STOMP.Login, c.STOMP.Passcode = hide(c.STOMP.Login), hide(c.STOMP.Passcode)
	c.Centrifuge.Token = hide(c.Centrifuge.Token)
	c.Centrifuge.Data = redactAll(c.Centrifuge.Data)
	c.SocketIO.Auth = redactAll(c.SocketIO.Auth)
	c.SocketIO.Events = redactList(c.SocketIO.Events)
	c.GraphQLWS.Payload = redactAll(c.GraphQLWS.Payload)
	c.GraphQLWS.Operations = redactList(c.GraphQLWS.Operations)
	c.Phoenix.Payload = redactAll(c.Phoenix.Payload)
	c.ActionCable.Channels = redactList(c.ActionCable.Channels)
	if len(c.SignalR.Joins) > 0 {
		joins := slices.Clone(c.SignalR.Joins)
		for i := range joins {
			joins[i].Arguments = redactAll(joins[i].Arguments)
		}
		c.SignalR.Joins = joins
	}
	return c
}

// redactAll hides the secrets of a JSON value; one that does not parse is
// hidden whole.
func redactAll(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return raw
	}
	out, err := redact.Policy{}.JSON(raw)
	if err != nil {
		return json.RawMessage(`"` + redact.Mark + `"`)
	}
	return out
}

func redactList(l []json.RawMessage) []json.RawMessage {
	if len(l) == 0 {
		return l
	}
	out := make([]json.RawMessage, len(l))
	for i, raw := range l {
		out[i] = redactAll(raw)
	}
	return out
}
