package session

import (
	"bytes"
	"strconv"

	"github.com/stampede-dev/stampede/connerr"
)

// graphql-ws (subprotocol graphql-transport-ws):
//
//	client  {"type":"connection_init","payload":{...}}
//	server  {"type":"connection_ack"}  -> back (4408 close if init is late)
//	client  {"id":"1","type":"subscribe","payload":{...}}  (per operation)
//	                                   -> re-subscribed once all are sent:
//	                                      the protocol acknowledges none
//	server  {"type":"ping"}  client {"type":"pong"}
//	server  {"id":"1","type":"error",...}  -> the operation refused
//
// Close codes: 4400 bad request, 4406 subprotocol, 4409 subscriber
// exists (refused); 4401, 4403 (auth); 4408 init timeout (session
// timeout); 4429 (its own class); 4500 (session error).

type graphQLWS struct {
	cfg  GraphQLWSConfig
	init []byte
	subs [][]byte
}

func newGraphQLWS(cfg GraphQLWSConfig) *graphQLWS {
	m := &graphQLWS{cfg: cfg, init: []byte(`{"type":"connection_init"}`)}
	if p := bytes.TrimSpace(cfg.Payload); len(p) > 0 {
		m.init = append([]byte(`{"type":"connection_init","payload":`), p...)
		m.init = append(m.init, '}')
	}
	for i, op := range cfg.Operations {
		b := []byte(`{"id":"`)
		b = strconv.AppendInt(b, int64(i+1), 10)
		b = append(b, `","type":"subscribe","payload":`...)
		b = append(b, bytes.TrimSpace(op)...)
		m.subs = append(m.subs, append(b, '}'))
	}
	return m
}

func (m *graphQLWS) Subprotocol() string { return "graphql-transport-ws" }

func (m *graphQLWS) Open(s *State, _ uint32, now int64, o *Out) {
	*s = State{Heard: now, Sent: now}
	o.text(m.init)
	m.schedule(s)
}

func (m *graphQLWS) schedule(s *State) {
	s.Deadline = heartbeat(s, int64(m.cfg.PingInterval), 0)
}

func (m *graphQLWS) Frame(s *State, _ uint32, p []byte, binary bool, now int64, o *Out) {
	if binary {
		return
	}
	s.Heard = now
	t, _ := field(p, "type")
	switch string(t) {
	case "connection_ack":
		if s.Phase != Opening {
			return
		}
		for _, sub := range m.subs {
			o.text(sub)
		}
		o.back(s, 0)
	case "ping":
		o.text([]byte(`{"type":"pong"}`))
	case "error":
		id, _ := field(p, "id")
		o.fail(connerr.SessionRefused, "graphql-ws: operation %s refused: %.200s", id, p)
	}
}

func (m *graphQLWS) Timer(s *State, _ uint32, now int64, o *Out) {
	if m.cfg.PingInterval > 0 && now-s.Sent >= int64(m.cfg.PingInterval) {
		o.text([]byte(`{"type":"ping"}`))
		s.Sent = now
	}
	m.schedule(s)
}

func (m *graphQLWS) Closed(_ *State, code int, _ string, _ int64) connerr.Class {
	return graphQLWSClose(code)
}

// graphQLWSClose classifies graphql-ws's close codes.
func graphQLWSClose(code int) connerr.Class {
	switch code {
	case 4400, 4406, 4409:
		return connerr.SessionRefused
	case 4401, 4403:
		return connerr.SessionAuth
	case 4408:
		return connerr.SessionTimeout
	case 4429:
		return connerr.Session4429
	case 4500:
		return connerr.SessionError
	}
	return connerr.None
}
