package loadgen

import (
	"github.com/gobwas/ws"

	"github.com/stampede-dev/stampede/connerr"
	"github.com/stampede-dev/stampede/session"
)

// sniffMode is mode none with an ear for session protocols: a fleet that
// speaks none still hears what its server says first (Engine.IO's open
// packet, ActionCable's welcome, graphql-ws's close for a missing
// subprotocol). Once a reactor heard one, it records the protocol in its
// report (Report.Speaks), and a connection its server then closes with a
// code of no other class is the server's session timeout
// (connerr.SessionTimeout): a client that does not speak the protocol is
// dropped by its connect or heartbeat timeout, not by a protocol error.
type sniffMode struct {
	noneMode
	heard string // the protocol this reactor's server showed, "" until one
	rec   *recorder
}

func (m *sniffMode) data(_ *reactor, _ int32, h ws.Header, payload []byte, _ int64) {
	if m.heard != "" || (h.OpCode != ws.OpText && h.OpCode != ws.OpBinary) {
		return
	}
	if p := session.Sniff(payload); p != "" {
		m.hear(p)
	}
}

func (m *sniffMode) hear(p string) {
	m.heard = p
	m.rec.speaks(p)
}

// closeClass names a close frame a server that showed its protocol sent.
func (m *sniffMode) closeClass(_ int32, code int, reason string, _ int64) connerr.Class {
	if code == 0 {
		return connerr.None // no close frame: a kill or a crash
	}
	if p, c := session.SniffClose(code, reason); p != "" {
		m.hear(p)
		return c
	}
	if m.heard != "" && connerr.ClassifyClose(ws.StatusCode(code)) == connerr.Protocol {
		return connerr.SessionTimeout
	}
	return connerr.None
}

// speaks records the session protocol the server showed.
func (r *recorder) speaks(p string) {
	r.mu.Lock()
	if r.rep.Speaks == "" {
		r.rep.Speaks = p
	}
	r.mu.Unlock()
}
