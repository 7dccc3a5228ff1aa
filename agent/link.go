package agent

import (
	"encoding/json"
	"fmt"
	"time"
)

// Link is a channel of JSON messages between an agent on another host and
// its coordinator, such as a channel of the NATS hub (hub.Channel). It is
// an alias of an interface literal, as hub.Channel is, so functions over
// either are one type.
type Link = interface {
	// Send sends one message.
	Send(msg []byte) error
	// Recv returns the next message; io.EOF when the peer closed the
	// channel.
	Recv() ([]byte, error)
	// Close tells the peer this side is over.
	Close() error
	// Offset is how far this side's clock is behind its coordinator's (0
	// on the coordinator's side).
	Offset() time.Duration
	// MaxReceived is the longest message received, in bytes.
	MaxReceived() int
}

// OverLink is the Transport of the protocol's messages over l: each
// message one JSON text, every instant it carries moved onto the
// coordinator's clock (ShiftTimes by l's Offset) on the way out and back
// on the way in.
func OverLink(l Link) Transport { return linkTransport{l} }

// linkTransport is a Transport over a Link.
type linkTransport struct{ l Link }

// Send encodes m, on the coordinator's clock, and sends it.
func (t linkTransport) Send(m Message) error {
	if d := t.l.Offset(); d != 0 {
		ShiftTimes(&m, d)
	}
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("agent: sending %s: %w", m.Kind, err)
	}
	if len(b) > MaxMessageBytes {
		return fmt.Errorf("agent: a %s message of %d bytes, over the %d a message may have", m.Kind, len(b), MaxMessageBytes)
	}
	if err := t.l.Send(b); err != nil {
		return fmt.Errorf("agent: sending %s: %w", m.Kind, err)
	}
	return nil
}

// Recv receives and decodes the next message, on this side's clock.
func (t linkTransport) Recv() (Message, error) {
	var m Message
	b, err := t.l.Recv()
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("agent: malformed message: %w", err)
	}
	if d := t.l.Offset(); d != 0 {
		ShiftTimes(&m, -d)
	}
	return m, nil
}

// Close closes the link.
func (t linkTransport) Close() error { return t.l.Close() }

// MaxReceived is the longest message received, in bytes.
func (t linkTransport) MaxReceived() int { return t.l.MaxReceived() }
