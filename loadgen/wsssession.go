package loadgen

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"

	"github.com/stampede-dev/stampede/connerr"
	"github.com/stampede-dev/stampede/session"
	"github.com/stampede-dev/stampede/wsdial"
)

// wssSession speaks the fleet's session protocol on one wss:// connection:
// the connection's reader feeds the machine the server's messages, a
// timer its deadline, one mutex between them, as a reactor feeds a
// client's (loadgen/session.go). The client is up when its session is
// back, re-subscribed when the machine says so.
type wssSession struct {
	w      *wssFleet
	conn   *wsdial.Conn
	id     uint32
	downAt int64 // the client's last drop, noTime for none

	mu    sync.Mutex
	st    session.State
	out   session.Out
	timer *time.Timer
	fail  *failure // the machine ended the session
	up    bool     // recorded up on this connection
	done  bool     // the connection ended: no more timers
}

// holdSession keeps an established connection of client id speaking the
// fleet's session protocol until it ends (ended true, with why) or ctx is
// done (ended false); up says whether the client was recorded up on it.
func (w *wssFleet) holdSession(ctx context.Context, conn *wsdial.Conn, id uint32, downAt int64) (f failure, ended, up bool) {
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	cfg := &w.f.cfg
	s := &wssSession{w: w, conn: conn, id: id, downAt: downAt}
	s.mu.Lock()
	w.m.Open(&s.st, id, w.now(), &s.out)
	s.apply()
	s.mu.Unlock()
	ka := startWSSKeepalive(cfg, conn)
	var ce *connerr.Error
	for {
		p, op, err := conn.ReadMessage()
		if err != nil {
			if !errors.As(err, &ce) {
				ce = nil // closed by us: the run ended, or the machine ended the session
			}
			break
		}
		if op != ws.OpText && op != ws.OpBinary {
			continue
		}
		s.mu.Lock()
		s.out.Reset()
		w.m.Frame(&s.st, id, p, op == ws.OpBinary, w.now(), &s.out)
		s.apply()
		s.mu.Unlock()
	}
	noPong := ka.stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.done = true
	if s.timer != nil {
		s.timer.Stop()
	}
	now := w.now()
	if s.st.Phase == session.Subscribed {
		w.record(func(r *recorder) { r.unsubscribed(id, now) })
	}
	switch {
	case ctx.Err() != nil:
		return failure{}, false, s.up
	case s.fail != nil:
		return *s.fail, true, s.up
	case noPong:
		return failure{class: connerr.PingTimeout, err: errNoPong(cfg.PongTimeout)}, true, s.up
	case ce == nil:
		return failure{}, false, s.up
	}
	return s.closed(ce, now), true, s.up
}

// closed is the failure of a connection the server ended: the machine's
// class when its protocol names the close, else the close's own.
func (s *wssSession) closed(ce *connerr.Error, now int64) failure {
	f := failure{class: ce.Class, err: ce.Err}
	code, reason := 0, ""
	var cl wsutil.ClosedError
	if errors.As(ce.Err, &cl) {
		code, reason = frameCode(cl.Code), cl.Reason
		f.hint = connerr.CloseHint(f.class, cl.Reason, s.w.f.cfg.RetryAfterCap)
		f.conn.Close = int(cl.Code)
	}
	if c := s.w.m.Closed(&s.st, code, reason, now); c != connerr.None {
		f.class = c
	}
	return f
}

// apply sends the machine's frames, records its events and sets its
// timer; s.mu is held. A failure closes the connection, which ends the
// reader.
func (s *wssSession) apply() {
	for i := 0; i < s.out.Frames(); i++ {
		p, binary := s.out.Frame(i)
		op := ws.OpText
		if binary {
			op = ws.OpBinary
		}
		if s.conn.WriteMessage(op, p) != nil {
			return // the reader sees the connection end
		}
	}
	now := s.w.now()
	for _, e := range s.out.Events() {
		switch e.Kind {
		case session.EvBack:
			if !s.up {
				s.up = true
				s.w.record(func(r *recorder) { r.up(s.id, now, s.downAt) })
			}
		case session.EvResubscribed:
			s.w.record(func(r *recorder) { r.resubscribed(s.id, now) })
		case session.EvFail:
			f := failure{class: e.Class, err: e.Err}
			s.fail = &f
			s.done = true
			s.conn.Close()
			return
		}
	}
	s.schedule(now)
}

// schedule arms the timer for the machine's deadline; s.mu is held.
func (s *wssSession) schedule(now int64) {
	if s.timer != nil {
		s.timer.Stop()
	}
	d := s.st.Deadline
	if d <= 0 || s.done {
		return
	}
	s.timer = time.AfterFunc(time.Duration(max(d-now, 0)), s.fire)
}

// fire calls the machine's Timer once its deadline is due.
func (s *wssSession) fire() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return
	}
	now := s.w.now()
	if d := s.st.Deadline; d <= 0 || now < d {
		s.schedule(now) // moved since the timer was armed
		return
	}
	s.out.Reset()
	s.w.m.Timer(&s.st, s.id, now, &s.out)
	s.apply()
}
