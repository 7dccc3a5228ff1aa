package session

import (
	"bytes"
	"strconv"
	"time"

	"github.com/stampede-dev/stampede/connerr"
)

// STOMP 1.2 over WebSocket (subprotocol v12.stomp), text frames:
//
//	client  CONNECT accept-version:1.2 host login passcode heart-beat:cx,cy
//	server  CONNECTED heart-beat:sx,sy   -> back; ERROR before it: auth
//	client  SUBSCRIBE id destination receipt  (per destination)
//	server  RECEIPT receipt-id           -> re-subscribed when all are in
//	both    EOL heart-beats: the client sends every max(cx,sy), and counts
//	        the server gone after twice max(sx,cy) without a byte
//	server  ERROR after CONNECTED        -> session_error
//
// Of State, Seq holds the negotiated send interval in ms and Window the
// receive window in ms.

const defaultHeartBeat = 10 * time.Second

type stomp struct {
	connect []byte
	subs    [][]byte
	hb      int64 // ms offered both ways, 0 for none
}

func newSTOMP(cfg STOMPConfig) *stomp {
	m := &stomp{hb: int64(defaultHeartBeat / time.Millisecond)}
	switch {
	case cfg.HeartBeat < 0:
		m.hb = 0
	case cfg.HeartBeat > 0:
		m.hb = int64(cfg.HeartBeat / time.Millisecond)
	}
	host := cfg.Host
	if host == "" {
		host = "/"
	}
	b := []byte("CONNECT\naccept-version:1.2\nhost:" + stompEscape(host) + "\n")
	if cfg.Login != "" {
		b = append(b, "login:"+stompEscape(cfg.Login)+"\n"...)
	}
	if cfg.Passcode != "" {
		b = append(b, "passcode:"+stompEscape(cfg.Passcode)+"\n"...)
	}
	hb := strconv.FormatInt(m.hb, 10)
	b = append(b, "heart-beat:"+hb+","+hb+"\n\n\x00"...)
	m.connect = b
	for i, d := range cfg.Destinations {
		id := strconv.Itoa(i + 1)
		m.subs = append(m.subs, []byte("SUBSCRIBE\nid:"+id+"\ndestination:"+stompEscape(d)+"\nack:auto\nreceipt:"+id+"\n\n\x00"))
	}
	return m
}

// stompEscape escapes a header value (STOMP 1.2 "Value Encoding").
func stompEscape(s string) string {
	var b bytes.Buffer
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case ':':
			b.WriteString(`\c`)
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

func (m *stomp) Subprotocol() string { return "v12.stomp" }

func (m *stomp) Open(s *State, _ uint32, now int64, o *Out) {
	*s = State{Heard: now, Sent: now}
	o.text(m.connect)
}

func (m *stomp) schedule(s *State) {
	s.Deadline = heartbeat(s, int64(s.Seq)*1e6, 2*int64(s.Window)*1e6)
}

func (m *stomp) Frame(s *State, _ uint32, p []byte, _ bool, now int64, o *Out) {
	s.Heard = now
	for len(p) > 0 {
		p = bytes.TrimLeft(p, "\r\n") // heart-beats and the EOLs after a frame
		if len(p) == 0 {
			break
		}
		end := bytes.IndexByte(p, 0)
		if end < 0 {
			end = len(p)
		}
		if !m.frame(s, p[:end], o) {
			return
		}
		p = p[min(end+1, len(p)):]
	}
	if s.Phase != Opening {
		m.schedule(s)
	}
}

// frame handles one STOMP frame; false when the session failed.
func (m *stomp) frame(s *State, f []byte, o *Out) bool {
	cmd, rest, _ := bytes.Cut(f, []byte("\n"))
	cmd = bytes.TrimSuffix(cmd, []byte("\r"))
	switch string(cmd) {
	case "CONNECTED":
		if s.Phase != Opening {
			return true
		}
		if v, ok := stompHeader(rest, "heart-beat"); ok && m.hb > 0 {
			sx, sy, _ := bytes.Cut(v, []byte(","))
			x, _ := strconv.ParseInt(string(bytes.TrimSpace(sx)), 10, 64)
			y, _ := strconv.ParseInt(string(bytes.TrimSpace(sy)), 10, 64)
			if y > 0 {
				s.Seq = uint32(min(max(m.hb, y), 1<<31))
			}
			if x > 0 {
				s.Window = uint32(min(max(m.hb, x), 1<<31))
			}
		}
		for _, sub := range m.subs {
			o.text(sub)
		}
		o.back(s, len(m.subs))
	case "RECEIPT":
		if s.Phase == Back {
			o.acked(s, len(m.subs), 1)
		}
	case "ERROR":
		msg, _ := stompHeader(rest, "message")
		class := connerr.SessionError
		if s.Phase == Opening {
			class = connerr.SessionAuth
		}
		o.fail(class, "STOMP ERROR %q", msg)
		return false
	}
	return true
}

// stompHeader returns a header's value from a frame's headers.
func stompHeader(h []byte, name string) ([]byte, bool) {
	for len(h) > 0 {
		var line []byte
		line, h, _ = bytes.Cut(h, []byte("\n"))
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(line) == 0 {
			return nil, false
		}
		if k, v, ok := bytes.Cut(line, []byte(":")); ok && string(k) == name {
			return v, true
		}
	}
	return nil, false
}

func (m *stomp) Timer(s *State, _ uint32, now int64, o *Out) {
	if s.Window > 0 && now-s.Heard >= 2*int64(s.Window)*1e6 {
		o.fail(connerr.HeartbeatTimeout, "STOMP: no heart-beat from the server within %d ms", 2*s.Window)
		return
	}
	if s.Seq > 0 && now-s.Sent >= int64(s.Seq)*1e6 {
		o.text([]byte("\n"))
		s.Sent = now
	}
	m.schedule(s)
}

func (m *stomp) Closed(s *State, _ int, _ string, now int64) connerr.Class {
	if s.Seq > 0 && now-s.Sent >= 2*int64(s.Seq)*1e6 {
		return connerr.HeartbeatTimeout
	}
	return connerr.None
}
