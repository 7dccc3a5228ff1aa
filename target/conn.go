package target

import (
	"bufio"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"
)

// ErrClosing is returned by Conn.Write once a close frame was sent on the
// connection: RFC 6455 allows no data frame after it.
var ErrClosing = errors.New("target: connection is closing")

// Conn is one upgraded WebSocket connection. While idle it holds no
// goroutine, no buffer and no timer: only this record and an entry in the
// server's epoll set and connection table. A ws:// connection's socket is
// a raw fd (sock.go), so it has no net.Conn either; a wss:// one keeps its
// *tls.Conn, whose record state lives there.
type Conn struct {
	srv      *Server
	id       uint64
	tls      *tlsSock // wss:// only; nil for ws://
	clientID string
	uri      string
	// sock is the socket of a ws:// connection. For wss:// only sock.fd
	// is used, as the connection's place in the server's table; the
	// socket belongs to tls.tcp.
	sock sock

	wmu     sync.Mutex  // serialises frame writes
	closing atomic.Bool // a close frame was sent; set under wmu
	once    sync.Once   // the connection is torn down once
}

// tlsSock is what a wss:// connection reads and writes through.
type tlsSock struct {
	nc  net.Conn        // the *tls.Conn frames are read and written on
	tcp *net.TCPConn    // the socket, closed directly so no TLS alert is sent
	raw syscall.RawConn // the socket's fd, for epoll
}

// closeSocket closes the connection's socket (without a TLS alert).
func (c *Conn) closeSocket() {
	if c.tls != nil {
		c.tls.tcp.Close()
		return
	}
	c.sock.close()
}

// write writes whole frames (the byte slices in order) within
// Config.WriteTimeout; the caller holds wmu.
func (c *Conn) write(bufs ...[]byte) error {
	deadline := time.Now().Add(c.srv.cfg.WriteTimeout)
	if c.tls == nil {
		return c.sock.writev(bufs, deadline)
	}
	c.tls.nc.SetWriteDeadline(deadline)
	b := bufs[0]
	if len(bufs) > 1 {
		// One TLS record rather than several.
		n := 0
		for _, p := range bufs {
			n += len(p)
		}
		b = make([]byte, 0, n)
		for _, p := range bufs {
			b = append(b, p...)
		}
	}
	_, err := c.tls.nc.Write(b)
	return err
}

// ID returns the connection's number, unique within the server's life.
func (c *Conn) ID() uint64 { return c.id }

// RemoteAddr returns the client's address; nil once a ws:// connection's
// socket is closed.
func (c *Conn) RemoteAddr() net.Addr {
	if c.tls != nil {
		return c.tls.tcp.RemoteAddr()
	}
	return c.sock.remoteAddr()
}

// ClientID returns the X-Stampede-Client header of the upgrade request, ""
// if it had none.
func (c *Conn) ClientID() string { return c.clientID }

// URI returns the request URI of the upgrade (path and query).
func (c *Conn) URI() string { return c.uri }

// Write sends one unfragmented message (or a control frame) with opcode op.
// It is safe to call from any goroutine; writes are serialised and bounded
// by Config.WriteTimeout. After a close frame it returns ErrClosing.
func (c *Conn) Write(op ws.OpCode, p []byte) error {
	err := c.writeFrame(op, p, false)
	if err == nil && op.IsData() {
		c.srv.stats.messagesOut.Add(1)
	}
	return err
}

// writeFrame writes one frame; with isClose it marks the connection closing
// first.
func (c *Conn) writeFrame(op ws.OpCode, p []byte, isClose bool) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.closing.Load() {
		return ErrClosing
	}
	if isClose {
		c.closing.Store(true)
	}
	var hb [ws.MaxHeaderSize]byte
	h := ws.Header{Fin: true, OpCode: op, Length: int64(len(p))}
	n := headerBytes(hb[:], h)
	return c.write(hb[:n], p)
}

// headerBytes encodes an unmasked frame header into b and returns its size.
func headerBytes(b []byte, h ws.Header) int {
	w := sliceWriter{b: b[:0]}
	ws.WriteHeader(&w, h) // cannot fail on a slice large enough for any header
	return len(w.b)
}

type sliceWriter struct{ b []byte }

func (w *sliceWriter) Write(p []byte) (int, error) { w.b = append(w.b, p...); return len(p), nil }

// readMessage reads one message from br (the connection's bytes) and acts
// on it: control frames are answered here, data messages go to the handler.
// A non-nil error ends the connection; it is a *CloseError when a close
// frame was exchanged.
func (s *Server) readMessage(c *Conn, br *bufio.Reader) error {
	rd := wsutil.Reader{
		Source:         br,
		State:          ws.StateServerSide,
		CheckUTF8:      true,
		MaxMessageSize: s.cfg.MaxMessageSize,
		OnIntermediate: func(h ws.Header, r io.Reader) error { return s.control(c, h, r) },
	}
	h, err := rd.NextFrame()
	if err != nil {
		return s.protocolClose(c, err)
	}
	if h.OpCode.IsControl() {
		return s.control(c, h, &rd)
	}
	p, err := io.ReadAll(&rd)
	if err != nil {
		return s.protocolClose(c, err)
	}
	s.stats.messagesIn.Add(1)
	if err := s.cfg.Handler.OnMessage(c, h.OpCode, p); err != nil {
		return s.handlerClose(c, err)
	}
	return nil
}

// control answers one control frame whose unmasked payload is r.
func (s *Server) control(c *Conn, h ws.Header, r io.Reader) error {
	var buf [125]byte // RFC 6455 5.5: control payloads are at most 125 bytes
	p := buf[:h.Length]
	if _, err := io.ReadFull(r, p); err != nil {
		return err
	}
	switch h.OpCode {
	case ws.OpPing:
		if err := c.Write(ws.OpPong, p); err != nil && err != ErrClosing {
			return err
		}
	case ws.OpClose:
		code, reason := ws.ParseCloseFrameData(p)
		if err := ws.CheckCloseFrameData(code, reason); err != nil {
			return s.sendClose(c, ws.StatusProtocolError, err.Error())
		}
		// Answer with the same code unless this is the answer to ours.
		var body []byte
		if !code.Empty() {
			body = p[:2]
		}
		c.writeFrame(ws.OpClose, body, true)
		return &CloseError{Code: code, Reason: reason}
	}
	return nil
}

// protocolClose maps a read error to the close it deserves: a protocol
// violation or an oversized message is answered with a close frame; a
// network error or EOF is returned as is.
func (s *Server) protocolClose(c *Conn, err error) error {
	var pe ws.ProtocolError
	switch {
	case errors.As(err, &pe), errors.Is(err, wsutil.ErrInvalidUTF8):
		code := ws.StatusProtocolError
		if errors.Is(err, wsutil.ErrInvalidUTF8) {
			code = ws.StatusInvalidFramePayloadData
		}
		return s.sendClose(c, code, err.Error())
	case errors.Is(err, wsutil.ErrMessageTooLarge), errors.Is(err, wsutil.ErrFrameTooLarge):
		return s.sendClose(c, ws.StatusMessageTooBig, err.Error())
	}
	return err
}

// handlerClose closes with the handler's *CloseError, or 1011.
func (s *Server) handlerClose(c *Conn, err error) error {
	var ce *CloseError
	if errors.As(err, &ce) {
		return s.sendClose(c, ce.Code, ce.Reason)
	}
	if errors.Is(err, ErrClosing) {
		// Our close frame is out (a graceful shutdown): keep reading until
		// the client's answers it.
		return nil
	}
	return s.sendClose(c, ws.StatusInternalServerError, err.Error())
}

// sendClose sends a close frame and returns the *CloseError that ends the
// connection.
func (s *Server) sendClose(c *Conn, code ws.StatusCode, reason string) error {
	if len(reason) > 123 {
		reason = reason[:123]
	}
	c.writeFrame(ws.OpClose, ws.NewCloseFrameBody(code, reason), true)
	return &CloseError{Code: code, Reason: reason}
}

// closeConn tears c down once: it leaves the server's table and the epoll
// set, then its socket is closed and the handler told. The fd is removed
// from epoll before the close (holding a reference to the fd, or through
// RawConn.Control for wss://, either of which fails rather than touch an
// fd already closed), so a recycled fd number never reaches epoll with c's
// key.
func (s *Server) closeConn(c *Conn, cause error) {
	c.once.Do(func() {
		s.mu.Lock()
		s.conns.remove(c)
		empty := s.conns.n == 0 && s.drained != nil
		if empty {
			close(s.drained)
			s.drained = nil
		}
		s.mu.Unlock()
		s.reactor.remove(c)
		c.closeSocket()
		s.stats.conns.Add(-1)
		s.live.Add(-1)
		s.cfg.Handler.OnClose(c, cause)
	})
}
