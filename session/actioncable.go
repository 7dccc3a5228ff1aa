package session

import (
	"bytes"
	"time"

	"github.com/stampede-dev/stampede/connerr"
)

// ActionCable (subprotocol actioncable-v1-json), text frames:
//
//	server  {"type":"welcome"}            -> back
//	client  {"command":"subscribe","identifier":"{\"channel\":...}"} per channel
//	server  {"identifier":...,"type":"confirm_subscription"}
//	                                      -> re-subscribed when all are in
//	        {"type":"reject_subscription"} -> refused
//	server  {"type":"ping","message":T} every 3 s; silence for 6 s ends
//	        the session (the JS client's stale rule)
//	server  {"type":"disconnect","reason":R,"reconnect":b}: reconnect false
//	        stops the client (unauthorized: session_auth)

const defaultStaleAfter = 6 * time.Second

type actionCable struct {
	subs  [][]byte
	stale int64
}

func newActionCable(cfg ActionCableConfig) *actionCable {
	m := &actionCable{stale: int64(defaultStaleAfter)}
	if cfg.StaleAfter > 0 {
		m.stale = int64(cfg.StaleAfter)
	}
	for _, ch := range cfg.Channels {
		var id bytes.Buffer
		_ = compactJSON(&id, ch) // Validate checked it
		b := appendQuoted([]byte(`{"command":"subscribe","identifier":`), id.String())
		m.subs = append(m.subs, append(b, '}'))
	}
	return m
}

func (m *actionCable) Subprotocol() string { return "actioncable-v1-json" }

func (m *actionCable) Open(s *State, _ uint32, now int64, _ *Out) {
	*s = State{Heard: now, Sent: now, Deadline: now + m.stale}
}

func (m *actionCable) Frame(s *State, _ uint32, p []byte, binary bool, now int64, o *Out) {
	if binary {
		return
	}
	s.Heard = now
	s.Deadline = now + m.stale
	t, _ := field(p, "type")
	switch string(t) {
	case "welcome":
		if s.Phase != Opening {
			return
		}
		for _, sub := range m.subs {
			o.text(sub)
		}
		o.back(s, len(m.subs))
	case "confirm_subscription":
		if s.Phase == Back {
			o.acked(s, len(m.subs), 1)
		}
	case "reject_subscription":
		id, _ := field(p, "identifier")
		o.fail(connerr.SessionRefused, "ActionCable: subscription %s rejected", id)
	case "disconnect":
		reason, _ := field(p, "reason")
		class := connerr.SessionError
		if v, _ := field(p, "reconnect"); string(v) == "false" {
			class = connerr.SessionRefused
			if string(reason) == "unauthorized" {
				class = connerr.SessionAuth
			}
		}
		o.fail(class, "ActionCable disconnect %q", reason)
	}
}

func (m *actionCable) Timer(s *State, _ uint32, now int64, o *Out) {
	if now-s.Heard >= m.stale {
		o.fail(connerr.HeartbeatTimeout, "ActionCable: no ping from the server within %s", time.Duration(m.stale))
		return
	}
	s.Deadline = s.Heard + m.stale
}

func (m *actionCable) Closed(*State, int, string, int64) connerr.Class { return connerr.None }
