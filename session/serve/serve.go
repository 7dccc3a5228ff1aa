// Package serve is the server side of three session protocols, served
// minimally by the bundled target (spec.Server.Session) so that run, bench
// and advise --verify can carry a session's cost:
//
//	socketio  Engine.IO 4's open packet at once; 40 answered with the
//	          namespace's ack 40{"sid"}; every 42 asking for an ack
//	          answered 43 with it; a ping 2 to every connection each
//	          PingInterval (the client's 3 is read and dropped).
//	mqtt      CONNECT answered with CONNACK (accepted, no session kept),
//	          SUBSCRIBE with SUBACK granting each QoS asked (at most 1),
//	          PINGREQ with PINGRESP, QoS 1 PUBLISH with PUBACK; MQTT 3.1.1
//	          and 5.
//	actioncable  {"type":"welcome"} at once; each subscribe command
//	          answered with confirm_subscription of its identifier; a
//	          {"type":"ping","message":SECONDS} to every connection each
//	          PingInterval (3 s, Rails' beat).
//
// Nothing is authenticated, no room or topic carries a message, and no
// heartbeat is enforced: a client is never dropped for a late pong. The
// pings of every connection come from one goroutine, not one per
// connection.
package serve

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/gobwas/ws"

	"github.com/stampede-dev/stampede/internal/clock"
	"github.com/stampede-dev/stampede/session"
)

// Conn is one WebSocket connection a session is served on (the target's
// *target.Conn). Write is safe from any goroutine.
type Conn interface {
	ID() uint64
	Write(op ws.OpCode, p []byte) error
}

// Options tune a Server; the zero value is each protocol's defaults.
type Options struct {
	// PingInterval and PingTimeout are what the Engine.IO open packet
	// announces; the server pings every PingInterval. Zero: 25 s and
	// 20 s, socket.io's defaults; 3 s (PingInterval) for actioncable.
	PingInterval, PingTimeout time.Duration
	// Clock paces the pings. Default: the wall clock.
	Clock clock.Clock
}

// Protocols are the protocols a Server serves.
func Protocols() []string {
	return []string{session.SocketIO, session.MQTT, session.ActionCable}
}

// Server serves one protocol on many connections.
type Server struct {
	proto string
	opt   Options

	mu    sync.Mutex
	conns map[uint64]*conn

	start sync.Once // the pings start with the first connection
	stop  chan struct{}
	done  chan struct{}
	once  sync.Once
}

// conn is one connection's state.
type conn struct {
	c  Conn
	v5 bool // mqtt: the client spoke MQTT 5
}

// New returns a Server of protocol, one of Protocols(). Its pings start
// with the first connection; Close stops them.
func New(protocol string, opt Options) (*Server, error) {
	switch protocol {
	case session.SocketIO, session.MQTT:
	case session.ActionCable:
		if opt.PingInterval <= 0 {
			opt.PingInterval = actionCableBeat
		}
	default:
		return nil, fmt.Errorf("the bundled target serves the session protocols %v, not %q", Protocols(), protocol)
	}
	if opt.PingInterval <= 0 {
		opt.PingInterval = 25 * time.Second
	}
	if opt.PingTimeout <= 0 {
		opt.PingTimeout = 20 * time.Second
	}
	if opt.Clock == nil {
		opt.Clock = clock.Real
	}
	return &Server{proto: protocol, opt: opt, conns: map[uint64]*conn{}, stop: make(chan struct{}), done: make(chan struct{})}, nil
}

// Close stops the pings. Connections are the target's to close.
func (s *Server) Close() {
	s.start.Do(func() { close(s.done) }) // never started: nothing to wait for
	s.once.Do(func() { close(s.stop) })
	<-s.done
}

// Open starts the session of a new connection.
func (s *Server) Open(c Conn) error {
	s.mu.Lock()
	s.conns[c.ID()] = &conn{c: c}
	s.mu.Unlock()
	switch s.proto {
	case session.MQTT:
		return nil
	case session.ActionCable:
		s.start.Do(func() { go s.pings() })
		return c.Write(ws.OpText, actionCableWelcome)
	}
	s.start.Do(func() { go s.pings() })
	b := append([]byte(`0{"sid":"`), strconv.FormatUint(c.ID(), 36)...)
	b = append(b, `","upgrades":[],"pingInterval":`...)
	b = strconv.AppendInt(b, s.opt.PingInterval.Milliseconds(), 10)
	b = append(b, `,"pingTimeout":`...)
	b = strconv.AppendInt(b, s.opt.PingTimeout.Milliseconds(), 10)
	b = append(b, `,"maxPayload":1000000}`...)
	return c.Write(ws.OpText, b)
}

// Closed forgets a connection that is gone.
func (s *Server) Closed(c Conn) {
	s.mu.Lock()
	delete(s.conns, c.ID())
	s.mu.Unlock()
}

// Message handles one whole data message; an error closes the
// connection.
func (s *Server) Message(c Conn, op ws.OpCode, p []byte) error {
	switch s.proto {
	case session.SocketIO:
		if op != ws.OpText {
			return nil
		}
		return socketIO(c, p)
	case session.ActionCable:
		if op != ws.OpText {
			return errors.New("actioncable: a binary frame")
		}
		return actionCable(c, p)
	}
	if op != ws.OpBinary {
		return errors.New("mqtt: a text frame")
	}
	s.mu.Lock()
	st := s.conns[c.ID()]
	s.mu.Unlock()
	if st == nil {
		return nil
	}
	return mqtt(st, p)
}

// pings sends the protocol's ping (Engine.IO's 2, ActionCable's ping) to
// every connection each PingInterval.
func (s *Server) pings() {
	defer close(s.done)
	var batch []Conn
	for {
		select {
		case <-s.stop:
			return
		case <-s.opt.Clock.After(s.opt.PingInterval):
		}
		ping := []byte("2")
		if s.proto == session.ActionCable {
			ping = actionCablePing(s.opt.Clock.Now())
		}
		batch = batch[:0]
		s.mu.Lock()
		for _, st := range s.conns {
			batch = append(batch, st.c)
		}
		s.mu.Unlock()
		for _, c := range batch {
			_ = c.Write(ws.OpText, ping) // a failed write is the target's to close
		}
	}
}

// socketIO answers one Engine.IO packet.
func socketIO(c Conn, p []byte) error {
	if len(p) < 2 || p[0] != '4' {
		return nil // 3 (pong), 1 (close): nothing to answer
	}
	t, rest := p[1], p[2:]
	var nsp []byte
	if len(rest) > 0 && rest[0] == '/' {
		i := 0
		for i < len(rest) && rest[i] != ',' {
			i++
		}
		nsp = append(rest[:i:i], ',')
		rest = rest[min(i+1, len(rest)):]
	}
	switch t {
	case '0': // namespace connect
		b := append(append([]byte("40"), nsp...), `{"sid":"`...)
		b = strconv.AppendUint(b, c.ID(), 36)
		return c.Write(ws.OpText, append(b, `"}`...))
	case '2': // event: answer its ack id, if any
		i := 0
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			i++
		}
		if i == 0 {
			return nil
		}
		b := append(append([]byte("43"), nsp...), rest[:i]...)
		return c.Write(ws.OpText, append(b, "[]"...))
	}
	return nil
}

// mqtt answers the MQTT packets of one binary frame.
func mqtt(st *conn, p []byte) error {
	var out []byte
	for len(p) > 0 {
		t, body, rest, ok := session.MQTTNext(p)
		if !ok {
			return errors.New("mqtt: a partial packet")
		}
		p = rest
		switch t >> 4 {
		case 1: // CONNECT: 0 4 "MQTT" level
			if len(body) < 7 {
				return errors.New("mqtt: short CONNECT")
			}
			st.v5 = body[6] == 5
			if st.v5 {
				out = append(out, 0x20, 3, 0, 0, 0)
			} else {
				out = append(out, 0x20, 2, 0, 0)
			}
		case 8: // SUBSCRIBE
			ack, err := suback(body, st.v5)
			if err != nil {
				return err
			}
			out = append(out, ack...)
		case 12: // PINGREQ
			out = append(out, 0xD0, 0)
		case 3: // PUBLISH: acknowledge QoS 1
			if q := (t >> 1) & 3; q == 1 && len(body) >= 2 {
				tl := int(binary.BigEndian.Uint16(body))
				if len(body) >= 2+tl+2 {
					out = append(out, 0x40, 2, body[2+tl], body[3+tl])
				}
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return st.c.Write(ws.OpBinary, out)
}

// suback is the SUBACK of a SUBSCRIBE's body, granting each filter the QoS
// it asked, at most 1.
func suback(body []byte, v5 bool) ([]byte, error) {
	if len(body) < 2 {
		return nil, errors.New("mqtt: short SUBSCRIBE")
	}
	ack := []byte{body[0], body[1]}
	p := body[2:]
	if v5 {
		ack = append(ack, 0)
		n, shift, i := 0, 0, 0
		for ; i < len(p) && i < 4; i++ {
			n |= int(p[i]&0x7f) << shift
			shift += 7
			if p[i]&0x80 == 0 {
				break
			}
		}
		if i+1+n > len(p) {
			return nil, errors.New("mqtt: SUBSCRIBE properties")
		}
		p = p[i+1+n:]
	}
	for len(p) >= 3 {
		l := int(binary.BigEndian.Uint16(p))
		if len(p) < 2+l+1 {
			return nil, errors.New("mqtt: SUBSCRIBE filter")
		}
		ack = append(ack, min(p[2+l]&3, 1))
		p = p[2+l+1:]
	}
	if len(ack) > 127 {
		return nil, errors.New("mqtt: SUBSCRIBE of too many filters")
	}
	return append([]byte{0x90, byte(len(ack))}, ack...), nil
}
