package session

import (
	"bytes"
	"strconv"
	"time"

	"github.com/stampede-dev/stampede/connerr"
)

// Phoenix channels, serializer v2 (/socket/websocket?vsn=2.0.0), text
// frames of [join_ref, ref, topic, event, payload]:
//
//	client  ["1","1","room:a","phx_join",{payload}]   (per topic)
//	server  ["1","1","room:a","phx_reply",{"status":"ok",...}]
//	          the first ok -> back; all ok -> re-subscribed; error -> refused
//	client  [null,"h","phoenix","heartbeat",{}] every 30 s
//	server  [null,"h","phoenix","phx_reply",{"status":"ok"}]
//
// A heartbeat still unanswered when the next is due ends the session
// (phoenix.js's rule). With no topics the client is back at its 101.

const defaultPhoenixHeartbeat = 30 * time.Second

// phxPending marks a heartbeat sent and not answered yet (State.Persist).
const phxPending = 1

type phoenix struct {
	joins     [][]byte
	heartbeat int64
}

func newPhoenix(cfg PhoenixConfig) *phoenix {
	m := &phoenix{heartbeat: int64(defaultPhoenixHeartbeat)}
	if cfg.Heartbeat > 0 {
		m.heartbeat = int64(cfg.Heartbeat)
	}
	payload := bytes.TrimSpace(cfg.Payload)
	if len(payload) == 0 {
		payload = []byte("{}")
	}
	for i, t := range cfg.Topics {
		ref := strconv.Quote(strconv.Itoa(i + 1))
		b := []byte("[" + ref + "," + ref + ",")
		b = appendQuoted(b, t)
		b = append(b, `,"phx_join",`...)
		b = append(b, payload...)
		m.joins = append(m.joins, append(b, ']'))
	}
	return m
}

func (m *phoenix) Subprotocol() string { return "" }

func (m *phoenix) Open(s *State, _ uint32, now int64, o *Out) {
	*s = State{Heard: now, Sent: now}
	for _, j := range m.joins {
		o.text(j)
	}
	if len(m.joins) == 0 {
		o.back(s, 0)
	}
	s.Deadline = now + m.heartbeat
}

func (m *phoenix) Frame(s *State, _ uint32, p []byte, binary bool, now int64, o *Out) {
	if binary {
		return
	}
	s.Heard = now
	el := elements(p, 5)
	if len(el) < 5 || string(el[3]) != `"phx_reply"` {
		return
	}
	if string(el[2]) == `"phoenix"` {
		s.Persist &^= phxPending
		return
	}
	if !is(el[4], "status", "ok") {
		reason, _ := field(el[4], "reason")
		o.fail(connerr.SessionRefused, "Phoenix: join of %s refused: %q", el[2], reason)
		return
	}
	if s.Phase == Opening {
		o.back(s, len(m.joins))
	}
	o.acked(s, len(m.joins), 1)
}

// elements returns the first n raw elements of the JSON array p.
func elements(p []byte, n int) [][]byte {
	i := skipSpace(p, 0)
	if i >= len(p) || p[i] != '[' {
		return nil
	}
	out := make([][]byte, 0, n)
	i = skipSpace(p, i+1)
	for len(out) < n && i < len(p) {
		v, ok := value(p, i)
		if !ok {
			return out
		}
		if p[i] == '"' {
			v = p[i : i+len(v)+2] // keep a string's quotes
		}
		out = append(out, v)
		i = skipSpace(p, i+len(v))
		if i < len(p) && p[i] == ',' {
			i = skipSpace(p, i+1)
		}
	}
	return out
}

func (m *phoenix) Timer(s *State, _ uint32, now int64, o *Out) {
	if s.Persist&phxPending != 0 {
		o.fail(connerr.HeartbeatTimeout, "Phoenix: heartbeat unanswered within %s", time.Duration(m.heartbeat))
		return
	}
	o.text([]byte(`[null,"h","phoenix","heartbeat",{}]`))
	s.Persist |= phxPending
	s.Sent = now
	s.Deadline = now + m.heartbeat
}

func (m *phoenix) Closed(s *State, _ int, _ string, now int64) connerr.Class {
	if now-s.Sent >= 2*m.heartbeat {
		return connerr.HeartbeatTimeout // the server drops after 60 s of silence
	}
	return connerr.None
}
