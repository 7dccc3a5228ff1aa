package wsdial

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"

	"github.com/stampede-dev/stampede/connerr"
)

// closeWriteTimeout bounds the close frame Close sends before it closes the
// socket.
const closeWriteTimeout = time.Second

// Conn is an established client WebSocket connection. One goroutine may read
// (ReadMessage or Wait) while others write (WriteMessage, Close); pings are
// answered by the reader.
type Conn struct {
	// Protocol is the subprotocol the server selected, "" for none.
	Protocol string

	conn   net.Conn       // TCP or TLS
	rd     *wsutil.Reader // frames from the server
	ctlBuf bytes.Buffer   // replies to control frames, owned by the reader
	wmu    sync.Mutex     // serialises frame writes
	local  atomic.Bool    // Close was called: a read error is ours, not the peer's
	once   sync.Once      // closes conn once
	cerr   error          // conn.Close's result
	rx     atomic.Int64   // when the last frame from the server began, Unix ns
	// resumed: the wss:// handshake resumed a TLS session
	resumed bool
}

// TLSResumed reports whether the connection's TLS handshake resumed a
// session (false for ws://).
func (c *Conn) TLSResumed() bool { return c.resumed }

// newConn wraps an upgraded conn; br holds bytes the server sent right after
// its 101 answer (nil when none); maxMessage bounds one message in bytes.
func newConn(conn net.Conn, br *bufio.Reader, protocol string, maxMessage int64) *Conn {
	c := &Conn{Protocol: protocol, conn: conn}
	c.rx.Store(time.Now().UnixNano())
	var src io.Reader = conn
	if br != nil {
		src = io.MultiReader(br, conn)
	}
	c.rd = &wsutil.Reader{
		Source:         src,
		State:          ws.StateClientSide,
		CheckUTF8:      true,
		MaxMessageSize: maxMessage,
		OnIntermediate: c.control,
	}
	return c
}

// NetConn returns the underlying TCP or TLS connection, for deadlines and
// addresses. Do not read from or write to it directly.
func (c *Conn) NetConn() net.Conn { return c.conn }

// control answers a control frame from the server: a pong for a ping, the
// close reply for a close (then it returns wsutil.ClosedError). The reply is
// built in ctlBuf and written in one locked write, so it never interleaves
// with a concurrent WriteMessage.
func (c *Conn) control(h ws.Header, r io.Reader) error {
	if h.OpCode == ws.OpClose && h.Length >= 2 && h.Length <= 125 {
		p := make([]byte, h.Length)
		if _, err := io.ReadFull(r, p); err != nil {
			return err
		}
		if code, reason := ws.ParseCloseFrameData(p); isRestartCode(code) && utf8.ValidString(reason) {
			// gobwas/ws refuses 1012 and 1013 as undefined codes (they
			// are in the IANA registry, not in RFC 6455): answer them
			// here, echoing the code, as its handler does the others (a
			// reply that cannot be written, the server gone, changes
			// nothing: the close frame is why the connection ended).
			c.wmu.Lock()
			_ = ws.WriteFrame(c.conn, ws.MaskFrameInPlace(ws.NewCloseFrame(ws.NewCloseFrameBody(code, ""))))
			c.wmu.Unlock()
			return wsutil.ClosedError{Code: code, Reason: reason}
		}
		r = bytes.NewReader(p)
	}
	c.ctlBuf.Reset()
	err := wsutil.ControlFrameHandler(&c.ctlBuf, ws.StateClientSide)(h, r)
	if c.ctlBuf.Len() > 0 {
		c.wmu.Lock()
		_, werr := c.conn.Write(c.ctlBuf.Bytes())
		c.wmu.Unlock()
		if err == nil {
			err = werr
		}
	}
	return err
}

// isRestartCode reports a close code 1012 (service restart) or 1013 (try
// again later), whose reason may carry a delay (connerr.ParseCloseHint).
func isRestartCode(code ws.StatusCode) bool { return code == 1012 || code == 1013 }

// ReadMessage returns the next text or binary message, answering control
// frames on the way. When the connection ends it closes it and returns a
// *connerr.Error (class closed_1001, closed_1012, closed_1013, closed_1006
// or protocol; the close frame's wsutil.ClosedError in Err), or
// net.ErrClosed after Close.
func (c *Conn) ReadMessage() ([]byte, ws.OpCode, error) {
	for {
		hdr, err := c.rd.NextFrame()
		if err != nil {
			return nil, 0, c.end(err)
		}
		c.rx.Store(time.Now().UnixNano())
		if hdr.OpCode.IsControl() {
			if err := c.control(hdr, c.rd); err != nil {
				return nil, 0, c.end(err)
			}
			continue
		}
		p, err := io.ReadAll(c.rd)
		if err != nil {
			return nil, 0, c.end(err)
		}
		return p, hdr.OpCode, nil
	}
}

// end closes the connection after a read failed and classifies the failure.
func (c *Conn) end(err error) error {
	c.shut()
	if c.local.Load() {
		return net.ErrClosed
	}
	return connerr.Wrap(err, connerr.PhaseEstablished)
}

// Wait reads and discards messages, answering pings, until the connection
// ends, and returns why: closed_1001 for a close frame with 1001, closed_1006
// for EOF or a reset without a close frame, protocol for another close code
// or a broken frame. It returns nil when Close ended the connection.
func (c *Conn) Wait() *connerr.Error {
	for {
		_, _, err := c.ReadMessage()
		if err == nil {
			continue
		}
		var ce *connerr.Error
		if errors.As(err, &ce) {
			return ce
		}
		return nil // net.ErrClosed: closed by us
	}
}

// LastRead returns when the last frame from the server (a pong or any
// other) arrived, or when the connection was established if none has: what
// a keepalive checks (docs/metrics.md "Keepalive").
func (c *Conn) LastRead() time.Time { return time.Unix(0, c.rx.Load()) }

// Ping sends a masked ping frame with an empty payload; the reader sees the
// server's pong as a frame (LastRead).
func (c *Conn) Ping() error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return ws.WriteFrame(c.conn, ws.MaskFrameInPlace(ws.NewPingFrame(nil)))
}

// WriteMessage sends one masked message frame (ws.OpText or ws.OpBinary).
func (c *Conn) WriteMessage(op ws.OpCode, p []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return wsutil.WriteClientMessage(c.conn, op, p)
}

// Close sends a 1000 close frame (best effort, bounded by a second) and
// closes the connection without waiting for the server's reply. A reader
// blocked in ReadMessage or Wait returns. Close is safe to call more than
// once.
func (c *Conn) Close() error {
	if c.local.Swap(true) {
		return c.shut()
	}
	c.wmu.Lock()
	c.conn.SetWriteDeadline(time.Now().Add(closeWriteTimeout))
	ws.WriteFrame(c.conn, ws.MaskFrameInPlace(ws.NewCloseFrame(ws.NewCloseFrameBody(ws.StatusNormalClosure, ""))))
	c.wmu.Unlock()
	return c.shut()
}

// shut closes the socket once.
func (c *Conn) shut() error {
	c.once.Do(func() { c.cerr = c.conn.Close() })
	return c.cerr
}
