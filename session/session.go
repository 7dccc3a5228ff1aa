package session

import (
	"fmt"

	"github.com/stampede-dev/stampede/connerr"
)

// Protocol names (Config.Protocol, the --protocol flag).
const (
	SocketIO    = "socketio"
	GraphQLWS   = "graphql-ws"
	MQTT        = "mqtt"
	STOMP       = "stomp"
	Phoenix     = "phoenix"
	SignalR     = "signalr"
	ActionCable = "actioncable"
	Centrifuge  = "centrifuge"
)

// Protocols lists every protocol name, in the order docs/protocols.md
// describes them.
func Protocols() []string {
	return []string{SocketIO, GraphQLWS, MQTT, STOMP, Phoenix, SignalR, ActionCable, Centrifuge}
}

// Phase is where a client's session is on its current connection.
type Phase uint8

// The phases, in the order a session goes through them.
const (
	Opening    Phase = iota // connected; the session's handshake is under way
	Back                    // the session is open (Event Back was given)
	Subscribed              // every subscription is acknowledged (Event Resubscribed was given)
)

// State is one client's session: what a reactor keeps per client, 48
// bytes. Times are the reactor's, in ns. Open resets what belongs to one
// connection; Persist and Resume survive reconnects.
type State struct {
	// Deadline is when the machine wants Timer called, 0 for never. The
	// reactor reschedules the client's timer whenever it changes.
	Deadline int64
	// Heard is when the server last sent a frame.
	Heard int64
	// Sent is when the client last sent its heartbeat or an answer to one.
	Sent int64
	// Resume is what a server that offers to resume a session gave
	// (Socket.IO's connection state recovery), nil until it offers.
	Resume *Resume
	// Seq numbers the client's requests on this connection (refs, packet
	// IDs, invocation IDs).
	Seq uint32
	// Window is the server's heartbeat window on this connection in ms,
	// where the server announces it (Engine.IO's pingInterval plus
	// pingTimeout); 0 when it does not.
	Window uint32
	// Acked counts the subscriptions acknowledged on this connection.
	Acked uint16
	// Phase is where the session is.
	Phase Phase
	// Persist holds what outlives a connection: bits a protocol defines
	// (MQTT's session present, a Socket.IO recovery offered).
	Persist uint8
}

// Resume is a session the server offered to resume after a reconnect.
type Resume struct {
	// ID is the server's session ID (Socket.IO's pid).
	ID string
	// Offset is the last position received (Socket.IO's offset).
	Offset string
}

// Kind is what an Event says happened.
type Kind uint8

// The event kinds.
const (
	// EvBack: the session is open again (the client is back).
	EvBack Kind = iota + 1
	// EvResubscribed: every subscription is acknowledged.
	EvResubscribed
	// EvFail: the session ended; the reactor closes the connection with
	// Event.Class and retries, or stops the client when the class is not
	// retryable.
	EvFail
)

// Event is something a machine reports about a client.
type Event struct {
	Kind  Kind
	Class connerr.Class // EvFail's class
	Err   error         // EvFail's cause, for a stopped client's last error
}

// Out collects what a machine answers to one call: the frames to send, in
// order, and the events. A reactor keeps one and calls Reset before each
// call; its buffer is reused.
type Out struct {
	buf    []byte
	frames []outFrame
	events []Event
}

type outFrame struct {
	end    int // of the payload in buf
	binary bool
}

// Reset empties o, keeping its buffers.
func (o *Out) Reset() { o.buf, o.frames, o.events = o.buf[:0], o.frames[:0], o.events[:0] }

// Frames returns the number of frames to send.
func (o *Out) Frames() int { return len(o.frames) }

// Frame returns the i-th frame's payload and whether it is binary (else
// text). The payload aliases o's buffer until the next Reset.
func (o *Out) Frame(i int) (payload []byte, binary bool) {
	start := 0
	if i > 0 {
		start = o.frames[i-1].end
	}
	return o.buf[start:o.frames[i].end], o.frames[i].binary
}

// Events returns the events, in the order they happened.
func (o *Out) Events() []Event { return o.events }

// text appends a text frame.
func (o *Out) text(p ...[]byte) {
	for _, b := range p {
		o.buf = append(o.buf, b...)
	}
	o.frames = append(o.frames, outFrame{end: len(o.buf)})
}

// end closes a frame written with appends to o.buf since the last one.
func (o *Out) end(binary bool) {
	o.frames = append(o.frames, outFrame{end: len(o.buf), binary: binary})
}

func (o *Out) event(e Event) { o.events = append(o.events, e) }

// back moves s to Back and reports it; with no subscription to wait for it
// is re-subscribed at once.
func (o *Out) back(s *State, subs int) {
	if s.Phase != Opening {
		return
	}
	s.Phase = Back
	o.event(Event{Kind: EvBack})
	o.acked(s, subs, 0)
}

// acked counts n more acknowledgements of subs subscriptions, and reports
// the client re-subscribed when they are all in.
func (o *Out) acked(s *State, subs, n int) {
	s.Acked += uint16(n)
	if s.Phase == Back && int(s.Acked) >= subs {
		s.Phase = Subscribed
		o.event(Event{Kind: EvResubscribed})
	}
}

// fail reports the session ended with class.
func (o *Out) fail(class connerr.Class, format string, a ...any) {
	o.event(Event{Kind: EvFail, Class: class, Err: fmt.Errorf(format, a...)})
}

// Machine is one protocol, shared by every client of a fleet. Its methods
// read and change one client's State; id is the client's ID (it names the
// client where a protocol wants a name, such as MQTT's client identifier),
// now the reactor's clock in ns. Implementations hold no per-client state.
type Machine interface {
	// Subprotocol is what the upgrade must offer (Sec-WebSocket-Protocol),
	// empty for none.
	Subprotocol() string
	// Open starts the session on a new connection, just after its 101.
	Open(s *State, id uint32, now int64, o *Out)
	// Frame handles one whole text or binary frame from the server.
	Frame(s *State, id uint32, p []byte, binary bool, now int64, o *Out)
	// Timer handles s.Deadline being due.
	Timer(s *State, id uint32, now int64, o *Out)
	// Closed returns the class of a connection the server closed with
	// code (0: without a close frame) and reason, when the protocol names
	// it (graphql-ws's 4401, a heartbeat the server found unanswered), else
	// connerr.None.
	Closed(s *State, code int, reason string, now int64) connerr.Class
}

// New returns the machine of cfg.Protocol, or nil when it is empty. cfg
// must be valid (Config.Validate).
func New(cfg Config) Machine {
	switch cfg.Protocol {
	case SocketIO:
		return newSocketIO(cfg.SocketIO)
	case GraphQLWS:
		return newGraphQLWS(cfg.GraphQLWS)
	case MQTT:
		return newMQTT(cfg.MQTT)
	case STOMP:
		return newSTOMP(cfg.STOMP)
	case Phoenix:
		return newPhoenix(cfg.Phoenix)
	case SignalR:
		return newSignalR(cfg.SignalR)
	case ActionCable:
		return newActionCable(cfg.ActionCable)
	case Centrifuge:
		return newCentrifuge(cfg.Centrifuge)
	}
	return nil
}

// heartbeat returns the next deadline of a client that sends every
// interval and expects the server to be heard within timeout (either 0
// for none): the earlier of its next send and the silence limit.
func heartbeat(s *State, interval, timeout int64) int64 {
	var d int64
	if interval > 0 {
		d = s.Sent + interval
	}
	if timeout > 0 && (d == 0 || s.Heard+timeout < d) {
		d = s.Heard + timeout
	}
	return d
}
