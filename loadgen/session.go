package loadgen

import (
	"slices"
	"time"

	"github.com/gobwas/ws"

	"github.com/stampede-dev/stampede/connerr"
	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/session"
)

// sessionMode speaks a session protocol (package session): the reactor
// feeds the client's machine its data frames and its deadline, sends what
// the machine answers, and records the client up when its session is back
// and re-subscribed when every subscription is acknowledged. The client's
// one timer is the machine's State.Deadline while it is connected.
type sessionMode struct {
	m   session.Machine
	st  []session.State // by client of the shard
	out session.Out
}

func newSessionMode(cfg *Config, clients int) *sessionMode {
	return &sessionMode{m: session.New(cfg.Session), st: make([]session.State, clients)}
}

func (m *sessionMode) connected(r *reactor, j int32, now int64) {
	m.out.Reset()
	m.m.Open(&m.st[j], r.id(j), now, &m.out)
	m.apply(r, j, now)
}

func (m *sessionMode) timer(r *reactor, j int32, _, now int64) {
	m.out.Reset()
	m.m.Timer(&m.st[j], r.id(j), now, &m.out)
	m.apply(r, j, now)
}

func (m *sessionMode) data(r *reactor, j int32, h ws.Header, payload []byte, now int64) {
	if h.OpCode != ws.OpText && h.OpCode != ws.OpBinary {
		return // continuations: the servers spoken to send whole messages
	}
	m.out.Reset()
	m.m.Frame(&m.st[j], r.id(j), payload, h.OpCode == ws.OpBinary, now, &m.out)
	m.apply(r, j, now)
}

// apply sends the machine's frames, then records its events, then sets
// the client's deadline; it stops where the connection ended.
func (m *sessionMode) apply(r *reactor, j int32, now int64) {
	c := &r.clients[j]
	sock := c.sockets
	for i := 0; i < m.out.Frames(); i++ {
		p, binary := m.out.Frame(i)
		op := ws.OpText
		if binary {
			op = ws.OpBinary
		}
		c.seq++
		if !r.send(j, r.frameBytes(op, p, r.f.up.maskKey(r.id(j), c.sockets, c.seq))) {
			return
		}
	}
	for _, e := range m.out.Events() {
		switch e.Kind {
		case session.EvBack:
			r.up(j, now)
		case session.EvResubscribed:
			r.rec.resubscribed(r.id(j), now)
		case session.EvFail:
			r.drop(j, failure{class: e.Class, err: e.Err}, now)
			return
		}
	}
	if c.sockets != sock || c.state != stConnected {
		return
	}
	if d := m.st[j].Deadline; d > 0 {
		r.timers.schedule(j, d)
	} else {
		r.timers.cancel(j)
	}
}

// closeClass names a connection the server ended with close code (0:
// without a close frame) when its session explains it (a heartbeat
// unanswered, an auth close code), else connerr.None.
func (m *sessionMode) closeClass(j int32, code int, reason string, now int64) connerr.Class {
	return m.m.Closed(&m.st[j], code, reason, now)
}

// closed records a re-subscribed client's session lost with its
// connection.
func (m *sessionMode) closed(r *reactor, j int32, now int64) {
	if m.st[j].Phase == session.Subscribed {
		r.rec.unsubscribed(r.id(j), now)
	}
	m.st[j].Phase = session.Opening
}

func (m *sessionMode) upAtUpgrade() bool           { return false }
func (m *sessionMode) wantsPayload(ws.Header) bool { return true }
func (m *sessionMode) finish(*reactor)             {}

// closeClassifier is a mode that names the class of a connection its
// server ended (sessionMode, and noneMode when it recognised a protocol).
type closeClassifier interface {
	closeClass(j int32, code int, reason string, now int64) connerr.Class
}

// frameCode is a close frame's code for a session: 1005 for one without
// a code (RFC 6455 7.1.5), never 0, which means no close frame at all.
func frameCode(code ws.StatusCode) int {
	if code == 0 {
		return int(ws.StatusNoStatusRcvd)
	}
	return int(code)
}

// sessionClass returns the class the mode gives a connection of client j
// that the server ended with code and reason (0: without a close frame),
// or class when it names none.
func (r *reactor) sessionClass(j int32, code int, reason string, now int64, class connerr.Class) connerr.Class {
	if cc, ok := r.mode.(closeClassifier); ok {
		if c := cc.closeClass(j, code, reason, now); c != connerr.None {
			return c
		}
	}
	return class
}

// offered returns the subprotocols the upgrade offers: the Config's, and
// its session protocol's when it is not among them.
func offered(cfg Config) []string {
	m := session.New(cfg.Session)
	if m == nil || m.Subprotocol() == "" || slices.Contains(cfg.Protocols, m.Subprotocol()) {
		return cfg.Protocols
	}
	return append(slices.Clone(cfg.Protocols), m.Subprotocol())
}

// resubscribed records client id re-subscribed at offset at.
func (r *recorder) resubscribed(id uint32, at int64) {
	r.mu.Lock()
	r.res.add(results.Transition{Client: id, At: time.Duration(at), Up: true})
	r.mu.Unlock()
	r.cnt.subscribed.Add(1)
}

// unsubscribed records client id's re-subscribed session lost at offset
// at.
func (r *recorder) unsubscribed(id uint32, at int64) {
	r.mu.Lock()
	r.res.add(results.Transition{Client: id, At: time.Duration(at)})
	r.mu.Unlock()
	r.cnt.subscribed.Add(-1)
}
