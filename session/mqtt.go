package session

import (
	"encoding/binary"
	"strconv"
	"time"

	"github.com/stampede-dev/stampede/connerr"
)

// MQTT 3.1.1 and 5 over WebSocket (subprotocol mqtt), binary frames:
//
//	client  CONNECT (keepalive, clean session or not, credentials)
//	server  CONNACK (session present, code)  -> back; a refusing code is a class
//	client  SUBSCRIBE (one per topic, packet IDs 1..n), unless the server
//	        kept the session (persistent, session present)
//	server  SUBACK per topic                  -> re-subscribed when all are in
//	client  PINGREQ every keepalive; server PINGRESP
//	server  PUBLISH (QoS 1: client PUBACK)
//
// The server drops a client silent for 1.5 keepalives; the client counts
// the server gone after two keepalives without a byte from it.

const defaultKeepAlive = 60 * time.Second

type mqtt struct {
	cfg       MQTTConfig
	version   byte
	keepalive int64 // ns
	subs      [][]byte
}

func newMQTT(cfg MQTTConfig) *mqtt {
	m := &mqtt{cfg: cfg, version: 4, keepalive: int64(defaultKeepAlive)}
	if cfg.Version == 5 {
		m.version = 5
	}
	if cfg.KeepAlive > 0 {
		m.keepalive = int64(cfg.KeepAlive)
	}
	if m.cfg.ClientIDPrefix == "" {
		m.cfg.ClientIDPrefix = "stampede-"
	}
	for i, t := range cfg.Topics {
		var body []byte
		body = binary.BigEndian.AppendUint16(body, uint16(i+1))
		if m.version == 5 {
			body = append(body, 0) // no properties
		}
		body = appendMQTTString(body, t)
		body = append(body, byte(cfg.QoS))
		m.subs = append(m.subs, mqttPacket(nil, 0x82, body))
	}
	return m
}

// mqttPacket appends a packet of type byte t and body to dst.
func mqttPacket(dst []byte, t byte, body []byte) []byte {
	dst = append(dst, t)
	n := len(body)
	for {
		b := byte(n & 0x7f)
		n >>= 7
		if n > 0 {
			dst = append(dst, b|0x80)
			continue
		}
		dst = append(dst, b)
		break
	}
	return append(dst, body...)
}

func appendMQTTString(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

func (m *mqtt) Subprotocol() string { return "mqtt" }

func (m *mqtt) Open(s *State, id uint32, now int64, o *Out) {
	*s = State{Heard: now, Sent: now}
	var body [256]byte
	b := append(body[:0], 0, 4, 'M', 'Q', 'T', 'T', m.version)
	var flags byte
	if !m.cfg.Persistent {
		flags |= 0x02
	}
	if m.cfg.Username != "" {
		flags |= 0x80
	}
	if m.cfg.Password != "" {
		flags |= 0x40
	}
	b = append(b, flags)
	b = binary.BigEndian.AppendUint16(b, uint16(m.keepalive/int64(time.Second)))
	if m.version == 5 {
		b = append(b, 0) // no properties
	}
	at := len(b)
	b = append(b, 0, 0)
	b = append(b, m.cfg.ClientIDPrefix...)
	b = strconv.AppendUint(b, uint64(id), 10)
	binary.BigEndian.PutUint16(b[at:], uint16(len(b)-at-2))
	if m.cfg.Username != "" {
		b = appendMQTTString(b, m.cfg.Username)
	}
	if m.cfg.Password != "" {
		b = appendMQTTString(b, m.cfg.Password)
	}
	o.buf = mqttPacket(o.buf, 0x10, b)
	o.end(true)
	m.schedule(s)
}

func (m *mqtt) schedule(s *State) { s.Deadline = heartbeat(s, m.keepalive, 2*m.keepalive) }

func (m *mqtt) Frame(s *State, _ uint32, p []byte, _ bool, now int64, o *Out) {
	s.Heard = now
	for len(p) > 0 {
		t, body, rest, ok := MQTTNext(p)
		if !ok {
			return // a partial packet: servers send whole ones per frame
		}
		p = rest
		if !m.packet(s, t, body, o) {
			return
		}
	}
}

// MQTTNext splits the first MQTT packet off p: its first byte (type and
// flags), its body and what follows it; ok is false for a partial packet.
// The bundled target's MQTT server (session/serve) reads with it too.
func MQTTNext(p []byte) (t byte, body, rest []byte, ok bool) {
	n, shift := 0, 0
	for i := 1; i < len(p) && i <= 4; i++ {
		n |= int(p[i]&0x7f) << shift
		shift += 7
		if p[i]&0x80 == 0 {
			if len(p) < i+1+n {
				return 0, nil, nil, false
			}
			return p[0], p[i+1 : i+1+n], p[i+1+n:], true
		}
	}
	return 0, nil, nil, false
}

// packet handles one packet; false ends the frame (the session failed).
func (m *mqtt) packet(s *State, t byte, body []byte, o *Out) bool {
	switch t >> 4 {
	case 2: // CONNACK
		if len(body) < 2 {
			o.fail(connerr.Protocol, "MQTT: short CONNACK")
			return false
		}
		if class := m.connackClass(body[1]); class != connerr.None {
			o.fail(class, "MQTT CONNACK code %#x", body[1])
			return false
		}
		if s.Phase != Opening {
			return true
		}
		if m.cfg.Persistent && body[0]&1 != 0 {
			o.back(s, 0) // the server kept the session and its subscriptions
			return true
		}
		for _, sub := range m.subs {
			o.buf = append(o.buf, sub...)
			o.end(true)
		}
		o.back(s, len(m.subs))
	case 9: // SUBACK
		return m.suback(s, body, o)
	case 3: // PUBLISH: acknowledge QoS 1
		if q := (t >> 1) & 3; q == 1 && len(body) >= 2 {
			tl := int(binary.BigEndian.Uint16(body))
			if len(body) >= 2+tl+2 {
				o.buf = append(o.buf, 0x40, 2, body[2+tl], body[3+tl])
				o.end(true)
			}
		}
	case 14: // DISCONNECT (MQTT 5)
		code := byte(0)
		if len(body) > 0 {
			code = body[0]
		}
		class := connerr.SessionError
		if code == 0x8D {
			class = connerr.HeartbeatTimeout
		}
		o.fail(class, "MQTT DISCONNECT reason %#x", code)
		return false
	}
	return true
}

// suback counts a SUBACK's granted subscriptions; a refused one ends the
// session as refused.
func (m *mqtt) suback(s *State, body []byte, o *Out) bool {
	if len(body) < 3 {
		return true
	}
	codes := body[2:]
	if m.version == 5 {
		n, k := 0, 0
		for k < len(codes) && k < 4 {
			n |= int(codes[k]&0x7f) << (7 * k)
			k++
			if codes[k-1]&0x80 == 0 {
				break
			}
		}
		if k+n > len(codes) {
			return true
		}
		codes = codes[k+n:]
	}
	for _, c := range codes {
		if c >= 0x80 {
			o.fail(connerr.SessionRefused, "MQTT SUBACK refused a subscription (code %#x)", c)
			return false
		}
	}
	o.acked(s, len(m.subs), 1)
	return true
}

// connackClass classifies a CONNACK code; None is accepted.
func (m *mqtt) connackClass(code byte) connerr.Class {
	if m.version == 5 {
		switch {
		case code < 0x80:
			return connerr.None
		case code == 0x86 || code == 0x87 || code == 0x8C:
			return connerr.SessionAuth // bad credentials, not authorized, bad auth method
		case code == 0x88 || code == 0x89 || code == 0x9F || code == 0x97:
			return connerr.SessionError // unavailable, busy, connection rate exceeded, quota
		}
		return connerr.SessionRefused
	}
	switch code {
	case 0:
		return connerr.None
	case 4, 5:
		return connerr.SessionAuth
	case 3:
		return connerr.SessionError
	}
	return connerr.SessionRefused // 1 protocol version, 2 identifier rejected
}

func (m *mqtt) Timer(s *State, _ uint32, now int64, o *Out) {
	if now-s.Heard >= 2*m.keepalive {
		o.fail(connerr.HeartbeatTimeout, "MQTT: nothing from the server within two keepalives (%s)", time.Duration(2*m.keepalive))
		return
	}
	if now-s.Sent >= m.keepalive {
		o.buf = append(o.buf, 0xC0, 0)
		o.end(true)
		s.Sent = now
	}
	m.schedule(s)
}

func (m *mqtt) Closed(s *State, code int, reason string, now int64) connerr.Class {
	// RabbitMQ's Web MQTT (3.10) sends no CONNACK to a CONNECT it refuses:
	// it closes with 1002 and the reason.
	if s.Phase == Opening && code == 1002 && (reason == "unauthenticated" || reason == "not_authorized") {
		return connerr.SessionAuth
	}
	if now-s.Sent >= m.keepalive*3/2 {
		return connerr.HeartbeatTimeout
	}
	return connerr.None
}
