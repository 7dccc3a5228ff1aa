package target

import (
	"github.com/gobwas/ws"

	"github.com/stampede-dev/stampede/session/serve"
)

// sessionHandler is the Handler of Config.Session: package serve's
// minimal server of that session protocol.
type sessionHandler struct{ s *serve.Server }

func (h sessionHandler) OnOpen(c *Conn) error { return h.s.Open(c) }
func (h sessionHandler) OnMessage(c *Conn, op ws.OpCode, p []byte) error {
	return h.s.Message(c, op, p)
}
func (h sessionHandler) OnClose(c *Conn, _ error) { h.s.Closed(c) }

// startSession makes cfg.Session's server the Handler, when cfg names one
// and no Handler. The Server closes it at the end of its Shutdown.
func startSession(cfg *Config) (*serve.Server, error) {
	if cfg.Session == "" || cfg.Handler != nil {
		return nil, nil
	}
	s, err := serve.New(cfg.Session, serve.Options{Clock: cfg.Clock})
	if err != nil {
		return nil, err
	}
	cfg.Handler = sessionHandler{s}
	return s, nil
}
