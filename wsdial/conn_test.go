package wsdial

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"

	"github.com/stampede-dev/stampede/connerr"
)

// How an established connection ends, as Wait classifies it.
func TestConnWaitClass(t *testing.T) {
	for _, tc := range []struct {
		name   string
		server func(net.Conn) // runs after the upgrade; returning closes the TCP connection
		class  connerr.Class
		is     error // wrapped in the error, when not nil
	}{
		{"graceful restart sends 1001", func(c net.Conn) {
			ws.WriteFrame(c, ws.NewCloseFrame(ws.NewCloseFrameBody(ws.StatusGoingAway, "restart")))
			readFrame(c) // the client's close reply
		}, connerr.Closed1001, nil},
		{"abrupt exit: FIN without close frame", func(net.Conn) {}, connerr.Closed1006, io.EOF},
		{"killed with unread data: RST without close frame", func(c net.Conn) {
			c.(*net.TCPConn).SetLinger(0)
		}, connerr.Closed1006, syscall.ECONNRESET},
		{"try again later: 1013 (which gobwas/ws does not know)", func(c net.Conn) {
			ws.WriteFrame(c, ws.NewCloseFrame(ws.NewCloseFrameBody(1013, "retry after 2s")))
			readFrame(c)
		}, connerr.Closed1013, wsutil.ClosedError{Code: 1013, Reason: "retry after 2s"}},
		{"service restart: 1012", func(c net.Conn) {
			ws.WriteFrame(c, ws.NewCloseFrame(ws.NewCloseFrameBody(1012, "")))
			readFrame(c)
		}, connerr.Closed1012, nil},
		{"close 1011 is protocol", func(c net.Conn) {
			ws.WriteFrame(c, ws.NewCloseFrame(ws.NewCloseFrameBody(ws.StatusInternalServerError, "oops")))
			readFrame(c)
		}, connerr.Protocol, nil},
		{"a masked frame from the server is protocol", func(c net.Conn) {
			ws.WriteFrame(c, ws.MaskFrame(ws.NewTextFrame([]byte("x"))))
		}, connerr.Protocol, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := wsServer(t, tc.server)
			c, err := dial(t, &Dialer{}, url)
			if err != nil {
				t.Fatal(err)
			}
			e := wantClass(t, c.Wait(), tc.class, true)
			if tc.is != nil && !errors.Is(e, tc.is) {
				t.Errorf("error %v does not wrap %v", e, tc.is)
			}
		})
	}
}

// Wait answers pings while it waits: the server gets its pong before it
// sends 1001.
func TestConnWaitAnswersPing(t *testing.T) {
	pong := make(chan ws.OpCode, 1)
	url := wsServer(t, func(c net.Conn) {
		ws.WriteFrame(c, ws.NewPingFrame([]byte("p")))
		f, err := readFrame(c)
		if err != nil {
			pong <- 0
			return
		}
		pong <- f.Header.OpCode
		ws.WriteFrame(c, ws.NewCloseFrame(ws.NewCloseFrameBody(ws.StatusGoingAway, "")))
		readFrame(c)
	})
	c, err := dial(t, &Dialer{}, url)
	if err != nil {
		t.Fatal(err)
	}
	wantClass(t, c.Wait(), connerr.Closed1001, true)
	if op := <-pong; op != ws.OpPong {
		t.Errorf("server got opcode %v, want pong", op)
	}
}

// Close ends the connection from our side: Wait returns nil, the server sees
// a 1000 close frame, and a second Close is harmless.
func TestConnCloseLocal(t *testing.T) {
	got := make(chan error, 1)
	url := wsServer(t, func(c net.Conn) {
		_, _, err := wsutil.ReadClientData(c)
		got <- err
	})
	c, err := dial(t, &Dialer{}, url)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan *connerr.Error, 1)
	go func() { done <- c.Wait() }()
	c.Close()
	if e := <-done; e != nil {
		t.Errorf("Wait after Close = %v, want nil", e)
	}
	var closed wsutil.ClosedError
	if err := <-got; !errors.As(err, &closed) || closed.Code != ws.StatusNormalClosure {
		t.Errorf("server read %v, want close 1000", err)
	}
	c.Close()
}

// Headers, subprotocol and source address reach the server, and messages
// flow both ways.
func TestConnEchoWithHeaderProtocolAndSource(t *testing.T) {
	type seen struct {
		auth   string
		remote net.Addr
	}
	saw := make(chan seen, 1)
	auth := ""
	u := ws.Upgrader{
		Protocol: func(p []byte) bool { return string(p) == "chat.v2" },
		OnHeader: func(k, v []byte) error {
			if http.CanonicalHeaderKey(string(k)) == "Authorization" {
				auth = string(v)
			}
			return nil
		},
	}
	addr := tcpServer(t, func(c net.Conn) {
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := u.Upgrade(c); err != nil {
			return
		}
		saw <- seen{auth, c.RemoteAddr()}
		for {
			p, op, err := wsutil.ReadClientData(c)
			if err != nil {
				return
			}
			wsutil.WriteServerMessage(c, op, p)
		}
	})
	d := &Dialer{
		Header:    http.Header{"Authorization": {"Bearer t0k"}},
		Protocols: []string{"chat.v1", "chat.v2"},
		LocalAddr: mustAddr(t, "127.0.0.2"),
	}
	c, err := dial(t, d, "ws://"+addr+"/room?x=1")
	if err != nil {
		t.Fatal(err)
	}
	if c.Protocol != "chat.v2" {
		t.Errorf("Protocol = %q, want chat.v2", c.Protocol)
	}
	s := <-saw
	if s.auth != "Bearer t0k" {
		t.Errorf("server saw Authorization %q", s.auth)
	}
	if ip := s.remote.(*net.TCPAddr).IP.String(); ip != "127.0.0.2" {
		t.Errorf("server saw source %s, want 127.0.0.2", ip)
	}
	if err := c.WriteMessage(ws.OpText, []byte("echo?")); err != nil {
		t.Fatal(err)
	}
	p, op, err := c.ReadMessage()
	if err != nil || op != ws.OpText || string(p) != "echo?" {
		t.Fatalf("ReadMessage = %q, %v, %v", p, op, err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if _, _, err := c.ReadMessage(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("ReadMessage after Close = %v, want net.ErrClosed", err)
	}
}

// A message above MaxMessageSize ends the connection as protocol.
func TestConnMessageTooLarge(t *testing.T) {
	url := wsServer(t, func(c net.Conn) {
		wsutil.WriteServerBinary(c, make([]byte, 2048))
		readFrame(c)
	})
	c, err := dial(t, &Dialer{MaxMessageSize: 1024}, url)
	if err != nil {
		t.Fatal(err)
	}
	e := wantClass(t, c.Wait(), connerr.Protocol, true)
	if !errors.Is(e, wsutil.ErrMessageTooLarge) && !errors.Is(e, wsutil.ErrFrameTooLarge) {
		t.Errorf("error %v is not a size limit", e)
	}
}

func mustAddr(t *testing.T, s string) netip.Addr {
	t.Helper()
	a, err := netip.ParseAddr(s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
