// Package connerr names why a connection attempt or a connection failed: one
// small enum, decided once where the failure happens, so the hot path counts
// integers and the results can say "83 timeouts, 12 refusals" instead of
// passing error strings around.
package connerr

import "fmt"

// Class is the reason one connection attempt failed, or one connection ended.
type Class uint8

// The classes of docs/metrics.md "Connect-error classes". None is a
// success. Local is stampede's own addition to the usual list: a loadgen that runs out of its own
// ephemeral ports or file descriptors must not be counted as the server
// refusing or timing out. PingTimeout is the other: a connection the
// client's keepalive found dead, which no read or write error reported.
// Closed1012/Closed1013 and HTTP502/HTTP503/HTTP504 name what a server
// restarting behind a load balancer says (docs/drill.md): the codes and
// statuses a drill must tell apart; Handshake5xx keeps every other 5xx.
const (
	None             Class = iota
	DNS                    // the host name did not resolve
	Refused                // RST to the SYN: nothing listens on the port
	Timeout                // the SYN went unanswered (backlog full) or the connect deadline passed
	Reset                  // the connection was reset during connect or handshake
	TLS                    // TLS failed (certificate rejected); not retryable
	Handshake4xx           // the upgrade was answered 4xx; only 429 is retryable
	Handshake5xx           // the upgrade was answered 5xx; retryable
	HandshakeTimeout       // TCP connected but no 101 in time (final ACK dropped on a full accept queue)
	Closed1006             // an established connection ended without a close frame
	Closed1001             // the server closed with 1001 going away
	Protocol               // the peer broke the WebSocket protocol, or closed with another code
	Local                  // this host failed the attempt before reaching the peer: out of ports, file descriptors or memory, or a malformed address
	PingTimeout            // an established connection answered no keepalive ping in time: the path died silently (a blackhole, a peer gone without FIN or RST)
	Closed1012             // the server closed with 1012 service restart (RFC 6455 registry): a deploy
	Closed1013             // the server closed with 1013 try again later: overloaded, come back later
	HTTP502                // the upgrade was answered 502 Bad Gateway: a load balancer found no backend answering
	HTTP503                // the upgrade was answered 503 Service Unavailable: a load balancer with no backend up, or a server shedding load
	HTTP504                // the upgrade was answered 504 Gateway Timeout: a load balancer's backend (or its queue) took too long
	SessionAuth            // the session protocol rejected the client's credentials (Socket.IO connect_error, graphql-ws 4401/4403, MQTT CONNACK bad credentials or not authorized, STOMP ERROR to CONNECT, ActionCable unauthorized); not retryable
	SessionRefused         // the session protocol refused what the client asked for (a Socket.IO namespace, a Phoenix topic, an ActionCable channel, graphql-ws 4400/4406/4409, MQTT CONNACK bad protocol or client ID); not retryable
	Session4429            // graphql-ws closed 4429, too many initialisation requests; not retryable, as graphql-ws's own client treats it
	SessionError           // the session protocol ended the session otherwise (a STOMP ERROR frame, MQTT CONNACK server unavailable or busy, a SignalR close with an error); retryable
	HeartbeatTimeout       // the session's heartbeat lapsed: the server dropped a client that did not answer its pings in time, or its own heartbeats stopped reaching the client
	SessionTimeout         // the server dropped a client whose session was not opened in time (Engine.IO's connect timeout, graphql-ws 4408)
	numClasses
)

// NumClasses is the number of classes including None: the size of an array
// indexed by Class.
const NumClasses = int(numClasses)

var classNames = [numClasses]string{
	None:             "none",
	DNS:              "dns",
	Refused:          "refused",
	Timeout:          "timeout",
	Reset:            "reset",
	TLS:              "tls",
	Handshake4xx:     "handshake_4xx",
	Handshake5xx:     "handshake_5xx",
	HandshakeTimeout: "handshake_timeout",
	Closed1006:       "closed_1006",
	Closed1001:       "closed_1001",
	Protocol:         "protocol",
	Local:            "local",
	PingTimeout:      "ping_timeout",
	Closed1012:       "closed_1012",
	Closed1013:       "closed_1013",
	HTTP502:          "http_502",
	HTTP503:          "http_503",
	HTTP504:          "http_504",
	SessionAuth:      "session_auth",
	SessionRefused:   "session_refused",
	Session4429:      "session_4429",
	SessionError:     "session_error",
	HeartbeatTimeout: "heartbeat_timeout",
	SessionTimeout:   "session_timeout",
}

// String returns the class's name as it appears in summary.json and on the
// terminal.
func (c Class) String() string {
	if c < numClasses {
		return classNames[c]
	}
	return fmt.Sprintf("class(%d)", uint8(c))
}

// Classes returns every failure class (None excluded) in a stable order.
func Classes() []Class {
	out := make([]Class, 0, NumClasses-1)
	for c := DNS; c < numClasses; c++ {
		out = append(out, c)
	}
	return out
}

// Retryable reports whether a client should try again after a failure of
// this class. TLS failures and 4xx answers other than 429 are not: retrying
// cannot fix a rejected certificate or credentials. status is the HTTP status
// of a handshake answer (used for Handshake4xx), zero otherwise.
func (c Class) Retryable(status int) bool {
	switch c {
	case None, TLS, SessionAuth, SessionRefused, Session4429:
		return false
	case Handshake4xx:
		return status == 429
	}
	return true
}
