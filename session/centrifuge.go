package session

import (
	"bytes"
	"strconv"
	"time"

	"github.com/stampede-dev/stampede/connerr"
)

// Centrifuge (centrifuge-go's and Centrifugo's bidirectional WebSocket
// transport, JSON protocol: no subprotocol, text frames, one or more
// replies per frame separated by newlines):
//
//	client  {"id":1,"connect":{"token":T,"data":{...},"name":"stampede"}}
//	server  {"id":1,"connect":{"client":...,"ping":25,"pong":true}} -> back
//	client  {"id":2,"subscribe":{"channel":C}} per channel
//	server  {"id":2,"subscribe":{...}}  -> re-subscribed when all are in
//	server  {"id":N,"error":{"code":E,"message":M,"temporary":b}}
//	server  {} (a ping every "ping" seconds)  client {} when "pong" is set
//
// A connect reply not in within Timeout is session_timeout; no ping for
// ping + MaxPingDelay is heartbeat_timeout (centrifuge-js's rules). Error
// codes 101 and 109 are session_auth; 100, 108, 111 or a temporary error
// session_error; the rest session_refused. Close codes: 3500 invalid
// token and 3507 permission denied session_auth, 3502 stale
// session_timeout, 3012 no pong heartbeat_timeout, the other terminal
// ones (3500-3999, 4500-4999) session_refused, and 3000-3499, 4000-4499
// and 5000 up, which ask for a reconnect, session_error.

const (
	defaultCentrifugeTimeout   = 5 * time.Second
	defaultCentrifugePingDelay = 10 * time.Second
	centrifugePong             = 1 // State.Persist: answer the server's pings
)

type centrifuge struct {
	connect   []byte
	subs      [][]byte
	timeout   int64
	pingDelay int64
}

func newCentrifuge(cfg CentrifugeConfig) *centrifuge {
	m := &centrifuge{timeout: int64(defaultCentrifugeTimeout), pingDelay: int64(defaultCentrifugePingDelay)}
	if cfg.Timeout > 0 {
		m.timeout = int64(cfg.Timeout)
	}
	if cfg.MaxPingDelay > 0 {
		m.pingDelay = int64(cfg.MaxPingDelay)
	}
	b := []byte(`{"id":1,"connect":{`)
	if cfg.Token != "" {
		b = appendQuoted(append(b, `"token":`...), cfg.Token)
		b = append(b, ',')
	}
	if d := bytes.TrimSpace(cfg.Data); len(d) > 0 {
		b = append(append(b, `"data":`...), d...)
		b = append(b, ',')
	}
	m.connect = append(b, `"name":"stampede"}}`...)
	for i, ch := range cfg.Channels {
		b := strconv.AppendInt([]byte(`{"id":`), int64(i+2), 10)
		b = appendQuoted(append(b, `,"subscribe":{"channel":`...), ch)
		m.subs = append(m.subs, append(b, '}', '}'))
	}
	return m
}

func (m *centrifuge) Subprotocol() string { return "" }

func (m *centrifuge) Open(s *State, _ uint32, now int64, o *Out) {
	*s = State{Heard: now, Sent: now, Seq: 1, Deadline: now + m.timeout}
	o.text(m.connect)
}

func (m *centrifuge) Frame(s *State, _ uint32, p []byte, binary bool, now int64, o *Out) {
	if binary {
		return
	}
	s.Heard = now
	for len(p) > 0 {
		line := p
		if i := bytes.IndexByte(p, '\n'); i >= 0 {
			line, p = p[:i], p[i+1:]
		} else {
			p = nil
		}
		if line = bytes.TrimSpace(line); len(line) > 0 && !m.reply(s, line, now, o) {
			return
		}
	}
	m.schedule(s)
}

// reply handles one reply; false when the session ended.
func (m *centrifuge) reply(s *State, line []byte, now int64, o *Out) bool {
	if string(line) == "{}" { // the server's ping
		if s.Persist&centrifugePong != 0 {
			o.text([]byte("{}"))
			s.Sent = now
		}
		return true
	}
	id, key, val, ok := replyOf(line)
	if !ok || id == 0 {
		return true // a push
	}
	switch {
	case key == "error":
		code, _ := field(val, "code")
		msg, _ := field(val, "message")
		temp, _ := field(val, "temporary")
		what := "subscribe"
		if id == 1 {
			what = "connect"
		}
		o.fail(centrifugeErrorClass(string(code), string(temp) == "true"), "Centrifuge: %s error %s %q", what, code, msg)
		return false
	case key == "connect" && id == 1 && s.Phase == Opening:
		if v, _ := field(val, "pong"); string(v) == "true" {
			s.Persist |= centrifugePong
		}
		if v, _ := field(val, "ping"); len(v) > 0 {
			if sec, err := strconv.Atoi(string(v)); err == nil && sec > 0 {
				s.Window = uint32(int64(sec)*1000 + m.pingDelay/int64(time.Millisecond))
			}
		}
		for _, sub := range m.subs {
			o.text(sub)
		}
		o.back(s, len(m.subs))
	case key == "subscribe" && s.Phase == Back:
		o.acked(s, len(m.subs), 1)
	}
	return true
}

// replyOf splits a command's reply {"id":N,"KEY":VALUE...}: its ID, the
// key after it and that key's value. A push (no ID first) gives id 0.
func replyOf(line []byte) (id uint32, key string, val []byte, ok bool) {
	const head = `{"id":`
	if !bytes.HasPrefix(line, []byte(head)) {
		return 0, "", nil, true
	}
	i := len(head)
	j := i
	for j < len(line) && line[j] >= '0' && line[j] <= '9' {
		j++
	}
	n, err := strconv.ParseUint(string(line[i:j]), 10, 32)
	if err != nil || j+1 >= len(line) || line[j] != ',' || line[j+1] != '"' {
		return 0, "", nil, false
	}
	k := bytes.IndexByte(line[j+2:], '"')
	if k < 0 {
		return 0, "", nil, false
	}
	key = string(line[j+2 : j+2+k])
	v := skipSpace(line, j+3+k)
	if v >= len(line) || line[v] != ':' {
		return 0, "", nil, false
	}
	val, ok = value(line, skipSpace(line, v+1))
	return uint32(n), key, val, ok
}

// centrifugeErrorClass classes a reply's error code.
func centrifugeErrorClass(code string, temporary bool) connerr.Class {
	switch {
	case code == "101" || code == "109": // unauthorized, token expired
		return connerr.SessionAuth
	case temporary || code == "100" || code == "108" || code == "111":
		return connerr.SessionError // internal, not available, too many requests
	}
	return connerr.SessionRefused
}

func (m *centrifuge) schedule(s *State) {
	switch {
	case s.Phase == Opening:
		// the connect reply's deadline stands
	case s.Window > 0:
		s.Deadline = s.Heard + int64(s.Window)*int64(time.Millisecond)
	default:
		s.Deadline = 0
	}
}

func (m *centrifuge) Timer(s *State, _ uint32, now int64, o *Out) {
	if s.Phase == Opening {
		o.fail(connerr.SessionTimeout, "Centrifuge: no connect reply within %s", time.Duration(m.timeout))
		return
	}
	if s.Window > 0 && now-s.Heard >= int64(s.Window)*int64(time.Millisecond) {
		o.fail(connerr.HeartbeatTimeout, "Centrifuge: no ping from the server within %s", time.Duration(s.Window)*time.Millisecond)
		return
	}
	m.schedule(s)
}

// Closed classes Centrifuge's disconnect codes.
func (m *centrifuge) Closed(_ *State, code int, _ string, _ int64) connerr.Class {
	switch {
	case code == 3500 || code == 3507: // invalid token, permission denied
		return connerr.SessionAuth
	case code == 3502: // stale: no connect in time
		return connerr.SessionTimeout
	case code == 3012: // no pong
		return connerr.HeartbeatTimeout
	case code >= 3500 && code < 4000, code >= 4500 && code < 5000:
		return connerr.SessionRefused
	case code >= 3000:
		return connerr.SessionError
	}
	return connerr.None
}
