package target

import (
	"strconv"

	"github.com/gobwas/ws"
)

// Handler is the application on top of the server: it sees every upgraded
// connection and every data message, and answers through Conn.Write. The
// server handles the WebSocket protocol itself (pings, close frames,
// fragmentation, limits). Echo is the default; the message protocol of
// docs/protocol.md (msg/ack/deliver/resume with a store) is another Handler.
//
// Methods are called from the server's worker goroutines: OnMessage for one
// connection is never called concurrently with itself, but different
// connections are handled in parallel, and OnOpen/OnClose may run on any
// goroutine. A handler must not block for long: a worker is busy meanwhile.
type Handler interface {
	// OnOpen is called once the upgrade succeeded, before any message. A
	// non-nil error closes the connection (with its code if it is a
	// *CloseError, else 1011).
	OnOpen(c *Conn) error
	// OnMessage handles one complete text or binary message. p is only
	// valid until it returns. A non-nil error closes the connection like
	// OnOpen's.
	OnMessage(c *Conn, op ws.OpCode, p []byte) error
	// OnClose is called once when the connection is gone, with the cause:
	// a *CloseError when a close frame was exchanged, io.EOF or a network
	// error otherwise.
	OnClose(c *Conn, cause error)
}

// Echo is the default Handler: it writes every message back unchanged, so a
// client measures round-trip time.
type Echo struct{}

// OnOpen accepts every connection.
func (Echo) OnOpen(*Conn) error { return nil }

// OnMessage writes p back with the same opcode.
func (Echo) OnMessage(c *Conn, op ws.OpCode, p []byte) error { return c.Write(op, p) }

// OnClose does nothing.
func (Echo) OnClose(*Conn, error) {}

// CloseError is a WebSocket close with a status code and reason. The server
// returns it as the cause of a close frame exchange; a Handler returns it to
// close a connection with that code (for example 1008 for a message it
// cannot parse).
type CloseError struct {
	Code   ws.StatusCode
	Reason string
}

func (e *CloseError) Error() string {
	return "websocket close " + strconv.Itoa(int(e.Code)) + " " + e.Reason
}
