package session

import (
	"bytes"
	"strconv"
	"time"

	"github.com/stampede-dev/stampede/connerr"
)

// SignalR, JSON hub protocol over WebSocket, records ending in 0x1e. The
// client connects to the hub's URL directly (the WebSocket transport
// without negotiate, as skipNegotiation does):
//
//	client  {"protocol":"json","version":1}
//	server  {}                     -> back; {"error":...} -> refused
//	client  {"type":1,"invocationId":"1","target":T,"arguments":[...]} per join
//	server  {"type":3,"invocationId":"1",...}  -> re-subscribed when all are in
//	both    {"type":6} pings, the client's every 15 s; the server's silence
//	        for 30 s ends the session
//	server  {"type":7,"error":...,"allowReconnect":b}  a close

const (
	defaultSignalRPing    = 15 * time.Second
	defaultSignalRTimeout = 30 * time.Second
	recordSep             = 0x1e
)

type signalR struct {
	joins           [][]byte
	ping, timeout   int64
	handshake, pong []byte
}

func newSignalR(cfg SignalRConfig) *signalR {
	m := &signalR{ping: int64(defaultSignalRPing), timeout: int64(defaultSignalRTimeout),
		handshake: []byte("{\"protocol\":\"json\",\"version\":1}\x1e"), pong: []byte("{\"type\":6}\x1e")}
	if cfg.PingInterval > 0 {
		m.ping = int64(cfg.PingInterval)
	}
	if cfg.ServerTimeout > 0 {
		m.timeout = int64(cfg.ServerTimeout)
	}
	for i, inv := range cfg.Joins {
		args := bytes.TrimSpace(inv.Arguments)
		if len(args) == 0 {
			args = []byte("[]")
		}
		b := []byte(`{"type":1,"invocationId":"` + strconv.Itoa(i+1) + `","target":`)
		b = appendQuoted(b, inv.Target)
		b = append(b, `,"arguments":`...)
		b = append(b, args...)
		m.joins = append(m.joins, append(b, '}', recordSep))
	}
	return m
}

func (m *signalR) Subprotocol() string { return "" }

func (m *signalR) Open(s *State, _ uint32, now int64, o *Out) {
	*s = State{Heard: now, Sent: now}
	o.text(m.handshake)
	s.Deadline = heartbeat(s, m.ping, m.timeout)
}

func (m *signalR) Frame(s *State, _ uint32, p []byte, binary bool, now int64, o *Out) {
	if binary {
		return
	}
	s.Heard = now
	for len(p) > 0 {
		var rec []byte
		rec, p, _ = bytes.Cut(p, []byte{recordSep})
		if len(rec) > 0 && !m.record(s, rec, o) {
			return
		}
	}
	s.Deadline = heartbeat(s, m.ping, m.timeout)
}

// record handles one record; false when the session failed.
func (m *signalR) record(s *State, r []byte, o *Out) bool {
	if s.Phase == Opening {
		if e, ok := field(r, "error"); ok {
			o.fail(connerr.SessionRefused, "SignalR handshake refused: %q", e)
			return false
		}
		for _, j := range m.joins {
			o.text(j)
		}
		o.back(s, len(m.joins))
		return true
	}
	t, _ := field(r, "type")
	switch string(t) {
	case "3": // completion
		if e, ok := field(r, "error"); ok {
			o.fail(connerr.SessionRefused, "SignalR: invocation refused: %q", e)
			return false
		}
		o.acked(s, len(m.joins), 1)
	case "7": // close
		e, _ := field(r, "error")
		class := connerr.SessionRefused
		if v, _ := field(r, "allowReconnect"); string(v) == "true" {
			class = connerr.SessionError
		}
		o.fail(class, "SignalR close: %q", e)
		return false
	}
	return true
}

func (m *signalR) Timer(s *State, _ uint32, now int64, o *Out) {
	if now-s.Heard >= m.timeout {
		o.fail(connerr.HeartbeatTimeout, "SignalR: nothing from the server within %s", time.Duration(m.timeout))
		return
	}
	if now-s.Sent >= m.ping {
		o.text(m.pong)
		s.Sent = now
	}
	s.Deadline = heartbeat(s, m.ping, m.timeout)
}

func (m *signalR) Closed(s *State, _ int, _ string, now int64) connerr.Class {
	if s.Phase == Opening {
		return connerr.None
	}
	if now-s.Sent >= m.timeout {
		return connerr.HeartbeatTimeout
	}
	return connerr.None
}
