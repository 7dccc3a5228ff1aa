package session

import (
	"bytes"
	"strconv"

	"github.com/stampede-dev/stampede/connerr"
)

// Socket.IO over Engine.IO 4, WebSocket transport only
// (/socket.io/?EIO=4&transport=websocket):
//
//	server  0{"sid","pingInterval","pingTimeout",...}   Engine.IO open
//	client  40[/ns,]{auth[,"pid","offset"]}             namespace connect
//	server  40[/ns,]{"sid"[,"pid"]}  -> back            or 44{"message"}: refused
//	client  42[/ns,][ack]["join","room"]  (per event)    re-subscribed when sent,
//	server  43[/ns,]ack[...]                             or when every ack is in
//	server  2  client 3                                  heartbeat
//
// The server pings every pingInterval and drops a client whose pong is
// pingTimeout late; the client counts the server gone after pingInterval
// plus pingTimeout without a ping (socket.io-client's rule).

// Persist bits of a Socket.IO session.
const sioOpened = 1 // the Engine.IO open packet arrived on this connection

type socketIO struct {
	cfg    SocketIOConfig
	nsp    []byte   // "/chat," or empty for "/"
	events [][]byte // the event packets, built once
}

func newSocketIO(cfg SocketIOConfig) *socketIO {
	m := &socketIO{cfg: cfg}
	if cfg.Namespace != "" && cfg.Namespace != "/" {
		m.nsp = []byte(cfg.Namespace + ",")
	}
	for i, ev := range cfg.Events {
		p := append([]byte("42"), m.nsp...)
		if cfg.Ack {
			p = strconv.AppendInt(p, int64(i+1), 10)
		}
		m.events = append(m.events, append(p, bytes.TrimSpace(ev)...))
	}
	return m
}

func (m *socketIO) Subprotocol() string { return "" }

func (m *socketIO) Open(s *State, _ uint32, now int64, _ *Out) {
	*s = State{Heard: now, Sent: now, Resume: s.Resume}
}

func (m *socketIO) Frame(s *State, _ uint32, p []byte, binary bool, now int64, o *Out) {
	if binary || len(p) == 0 {
		return
	}
	s.Heard = now
	switch p[0] {
	case '0': // open
		m.opened(s, p[1:], now, o)
	case '1': // close
		o.fail(connerr.Closed1001, "Engine.IO close packet")
	case '2': // ping
		o.text([]byte("3"))
		s.Sent = now
	case '4':
		if len(p) > 1 {
			m.packet(s, p[1], m.strip(p[2:]), o)
		}
	}
	if s.Window > 0 {
		s.Deadline = s.Heard + int64(s.Window)*1e6
	}
}

// opened answers the Engine.IO open packet with the namespace connect.
func (m *socketIO) opened(s *State, p []byte, now int64, o *Out) {
	s.Persist |= sioOpened
	iv, _ := field(p, "pingInterval")
	to, _ := field(p, "pingTimeout")
	a, _ := strconv.ParseUint(string(iv), 10, 32)
	b, _ := strconv.ParseUint(string(to), 10, 32)
	if w := a + b; w > 0 && w < 1<<32 {
		s.Window = uint32(w)
	}
	o.buf = append(o.buf, "40"...)
	o.buf = append(o.buf, m.nsp...)
	auth := bytes.TrimSpace(m.cfg.Auth)
	if r := s.Resume; r != nil {
		o.buf = append(o.buf, `{"pid":`...)
		o.buf = appendQuoted(o.buf, r.ID)
		o.buf = append(o.buf, `,"offset":`...)
		o.buf = appendQuoted(o.buf, r.Offset)
		if len(auth) > 2 {
			o.buf = append(o.buf, ',')
			o.buf = append(o.buf, auth[1:]...)
		} else {
			o.buf = append(o.buf, '}')
		}
	} else {
		o.buf = append(o.buf, auth...)
	}
	o.end(false)
	s.Sent = now
}

// strip removes the namespace prefix of a packet's body.
func (m *socketIO) strip(p []byte) []byte {
	if len(p) > 0 && p[0] == '/' {
		if i := bytes.IndexByte(p, ','); i >= 0 {
			return p[i+1:]
		}
		return nil
	}
	return p
}

// packet handles a Socket.IO packet of type t.
func (m *socketIO) packet(s *State, t byte, p []byte, o *Out) {
	switch t {
	case '0': // connect ack
		if pid, ok := field(p, "pid"); ok {
			if s.Resume == nil || s.Resume.ID != string(pid) {
				s.Resume = &Resume{ID: string(pid)}
			}
		}
		if s.Phase != Opening {
			return
		}
		for _, ev := range m.events {
			o.text(ev)
		}
		subs := 0
		if m.cfg.Ack {
			subs = len(m.events)
		}
		o.back(s, subs)
	case '1': // the server disconnected the namespace
		o.fail(connerr.SessionRefused, "Socket.IO: the server disconnected the namespace (packet 41)")
	case '2': // event: keep the offset of a recoverable session
		if s.Resume != nil {
			i := 0
			for i < len(p) && p[i] >= '0' && p[i] <= '9' {
				i++
			}
			if off, ok := lastString(p[i:]); ok {
				s.Resume.Offset = string(off)
			}
		}
	case '3': // ack of one of our events
		if m.cfg.Ack && s.Phase == Back {
			o.acked(s, len(m.events), 1)
		}
	case '4': // connect error
		msg, _ := field(p, "message")
		class := connerr.SessionAuth
		if bytes.Equal(msg, []byte("Invalid namespace")) {
			class = connerr.SessionRefused
		}
		o.fail(class, "Socket.IO connect_error %q", msg)
	}
}

func (m *socketIO) Timer(s *State, _ uint32, now int64, o *Out) {
	if s.Window > 0 && now-s.Heard >= int64(s.Window)*1e6 {
		o.fail(connerr.HeartbeatTimeout, "Socket.IO: no ping from the server within %d ms", s.Window)
	}
}

func (m *socketIO) Closed(s *State, _ int, _ string, now int64) connerr.Class {
	return closedByTimer(s, now)
}

// closedByTimer names a drop the server's own timers explain: a session
// never opened (its connect timeout) or a heartbeat window that passed
// in silence.
func closedByTimer(s *State, now int64) connerr.Class {
	switch {
	case s.Phase == Opening && s.Persist&sioOpened != 0:
		return connerr.SessionTimeout
	case s.Window > 0 && now-s.Heard >= int64(s.Window)*1e6:
		return connerr.HeartbeatTimeout
	}
	return connerr.None
}
