package session

import (
	"bytes"

	"github.com/stampede-dev/stampede/connerr"
)

// A client that speaks no session protocol still hears what its server
// says first: Engine.IO's open packet, ActionCable's welcome, or
// graphql-ws's close for a missing subprotocol. Sniff and SniffClose name
// the protocol from them, so that a run whose clients the server drops
// for not speaking it can say which protocol to speak.

// Sniff returns the protocol a server's first data frames show, "" when
// they show none.
func Sniff(p []byte) string {
	switch {
	case len(p) > 2 && p[0] == '0' && p[1] == '{' && bytes.Contains(p, []byte(`"pingInterval"`)) && bytes.Contains(p, []byte(`"sid"`)):
		return SocketIO // the Engine.IO open packet
	case len(p) > 0 && p[0] == '{' && is(p, "type", "welcome"):
		return ActionCable
	}
	return ""
}

// SniffClose returns the protocol a server's close frame shows, and the
// class that close has for a client that does not speak it; "" and
// connerr.None when it shows none.
func SniffClose(code int, reason string) (string, connerr.Class) {
	if code == 4406 && reason == "Subprotocol not acceptable" {
		return GraphQLWS, connerr.SessionRefused
	}
	return "", connerr.None
}

// Describe names a protocol as its users know it.
func Describe(name string) string {
	switch name {
	case SocketIO:
		return "Engine.IO (Socket.IO)"
	case GraphQLWS:
		return "graphql-ws (graphql-transport-ws)"
	case MQTT:
		return "MQTT"
	case STOMP:
		return "STOMP"
	case Phoenix:
		return "Phoenix channels"
	case SignalR:
		return "SignalR"
	case ActionCable:
		return "ActionCable"
	}
	return name
}
