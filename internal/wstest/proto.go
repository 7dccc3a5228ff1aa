package wstest

import (
	"errors"
	"net"
	"testing"
	"time"

	"github.com/gobwas/ws/wsutil"

	"github.com/stampede-dev/stampede/protocol"
)

// ProtoClient is a test client of the message protocol (docs/protocol.md).
type ProtoClient struct {
	T    testing.TB
	Name string
	Conn net.Conn
}

// Send writes one frame, failing the test on error.
func (c *ProtoClient) Send(frame string) {
	c.T.Helper()
	if err := wsutil.WriteClientText(c.Conn, []byte(frame)); err != nil {
		c.T.Fatalf("%s: send %s: %v", c.Name, frame, err)
	}
}

// Next reads the next frame, failing the test after 5 s.
func (c *ProtoClient) Next() protocol.Frame {
	c.T.Helper()
	c.Conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	p, err := wsutil.ReadServerText(c.Conn)
	if err != nil {
		c.T.Fatalf("%s: read: %v", c.Name, err)
	}
	var f protocol.Frame
	if err := protocol.Decode(p, &f); err != nil {
		c.T.Fatalf("%s: server sent %s: %v", c.Name, p, err)
	}
	// Detach from p's buffer.
	f.ID, f.Room, f.Body = clone(f.ID), clone(f.Room), clone(f.Body)
	return f
}

// clone copies b, nil staying nil.
func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

// Expect reads the next frame and checks it, written as the frame's JSON.
func (c *ProtoClient) Expect(want string) {
	c.T.Helper()
	got := c.Next()
	var w protocol.Frame
	if err := protocol.Decode([]byte(want), &w); err != nil {
		c.T.Fatalf("bad expectation %s: %v", want, err)
	}
	if g, w := string(protocol.Append(nil, &got)), string(protocol.Append(nil, &w)); g != w {
		c.T.Fatalf("%s: got %s\nwant %s", c.Name, g, w)
	}
}

// Closed reads until the server's close frame and returns it.
func (c *ProtoClient) Closed() wsutil.ClosedError {
	c.T.Helper()
	c.Conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		_, err := wsutil.ReadServerText(c.Conn)
		var ce wsutil.ClosedError
		if errors.As(err, &ce) {
			return ce
		}
		if err != nil {
			c.T.Fatalf("%s: read: %v, want a close frame", c.Name, err)
		}
	}
}
