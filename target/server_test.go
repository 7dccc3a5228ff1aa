package target

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"
)

func TestEchoRoundTrip(t *testing.T) {
	s := startServer(t, Config{})
	conn := mustDial(t, s.URL())
	tests := []struct {
		name string
		op   ws.OpCode
		p    []byte
	}{
		{name: "text", op: ws.OpText, p: []byte("hello")},
		{name: "binary", op: ws.OpBinary, p: []byte{0, 1, 2, 255}},
		{name: "empty text", op: ws.OpText, p: []byte{}},
		{name: "larger than a read buffer", op: ws.OpBinary, p: bytes.Repeat([]byte("x"), 70000)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := wsutil.WriteClientMessage(conn, tc.op, tc.p); err != nil {
				t.Fatalf("write: %v", err)
			}
			got, op, err := wsutil.ReadServerData(conn)
			if err != nil {
				t.Fatalf("read: %v", err)
			}
			if op != tc.op || !bytes.Equal(got, tc.p) {
				t.Fatalf("echo = op %v, %d bytes; want op %v, %d bytes", op, len(got), tc.op, len(tc.p))
			}
		})
	}
	// The server counts a message out after its write returned, which may
	// be after the client read it.
	eventually(t, "4 messages out", func() bool { return s.Stats().MessagesOut == 4 })
	if st := s.Stats(); st.MessagesIn != 4 || st.UpgradesOK != 1 || st.Conns != 1 {
		t.Fatalf("stats = %+v; want 4 messages in, 1 upgrade, 1 conn", st)
	}
}

// Several messages in one write arrive in one read buffer; each is echoed.
func TestEchoPipelined(t *testing.T) {
	s := startServer(t, Config{})
	conn := mustDial(t, s.URL())
	var buf bytes.Buffer
	for i := range 20 {
		wsutil.WriteClientText(&buf, []byte(strings.Repeat("m", i+1)))
	}
	if _, err := conn.Write(buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		got, err := wsutil.ReadServerText(conn)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if len(got) != i+1 {
			t.Fatalf("message %d has %d bytes; want %d", i, len(got), i+1)
		}
	}
}

// A fragmented message with a ping between its fragments: the ping is
// answered first, then the whole message is echoed as one.
func TestFragmentedWithPing(t *testing.T) {
	s := startServer(t, Config{})
	conn := mustDial(t, s.URL())
	frames := []ws.Frame{
		ws.NewFrame(ws.OpText, false, []byte("hel")),
		ws.NewPingFrame([]byte("p")),
		ws.NewFrame(ws.OpContinuation, true, []byte("lo")),
	}
	for _, f := range frames {
		if err := ws.WriteFrame(conn, ws.MaskFrame(f)); err != nil {
			t.Fatal(err)
		}
	}
	f, err := readFrame(conn)
	if err != nil || f.Header.OpCode != ws.OpPong || string(f.Payload) != "p" {
		t.Fatalf("first frame = %v %q, %v; want pong \"p\"", f.Header.OpCode, f.Payload, err)
	}
	f, err = readFrame(conn)
	if err != nil || f.Header.OpCode != ws.OpText || string(f.Payload) != "hello" {
		t.Fatalf("second frame = %v %q, %v; want text \"hello\"", f.Header.OpCode, f.Payload, err)
	}
}

func TestPingAnswered(t *testing.T) {
	s := startServer(t, Config{})
	conn := mustDial(t, s.URL())
	for _, payload := range []string{"", "are you there"} {
		if err := ws.WriteFrame(conn, ws.MaskFrame(ws.NewPingFrame([]byte(payload)))); err != nil {
			t.Fatal(err)
		}
		f, err := readFrame(conn)
		if err != nil {
			t.Fatal(err)
		}
		if f.Header.OpCode != ws.OpPong || string(f.Payload) != payload {
			t.Fatalf("got %v %q; want pong %q", f.Header.OpCode, f.Payload, payload)
		}
	}
}

// recordingHandler is Echo that records how connections ended.
type recordingHandler struct {
	Echo
	closed chan error
}

func (h recordingHandler) OnClose(_ *Conn, cause error) { h.closed <- cause }

func TestClientClose(t *testing.T) {
	h := recordingHandler{closed: make(chan error, 1)}
	s := startServer(t, Config{Handler: h})
	conn := mustDial(t, s.URL())
	body := ws.NewCloseFrameBody(ws.StatusNormalClosure, "bye")
	if err := ws.WriteFrame(conn, ws.MaskFrame(ws.NewCloseFrame(body))); err != nil {
		t.Fatal(err)
	}
	f, err := readFrame(conn)
	if err != nil || f.Header.OpCode != ws.OpClose {
		t.Fatalf("answer = %v, %v; want a close frame", f.Header.OpCode, err)
	}
	if code, _ := ws.ParseCloseFrameData(f.Payload); code != ws.StatusNormalClosure {
		t.Fatalf("answer code %d; want 1000", code)
	}
	if _, err := conn.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("after close: %v; want EOF", err)
	}
	var ce *CloseError
	if cause := <-h.closed; !errors.As(cause, &ce) || ce.Code != 1000 || ce.Reason != "bye" {
		t.Fatalf("OnClose cause = %v; want close 1000 bye", cause)
	}
	eventually(t, "conns 0", func() bool { return s.Stats().Conns == 0 })
}

// Idle connections cost no goroutine: 200 of them leave the goroutine
// count where it was.
func TestIdleConnsNoGoroutines(t *testing.T) {
	s := startServer(t, Config{})
	conn := mustDial(t, s.URL()) // warm up the pools and the runtime
	wsutil.WriteClientText(conn, []byte("x"))
	wsutil.ReadServerText(conn)
	before := runtime.NumGoroutine()
	for range 200 {
		mustDial(t, s.URL())
	}
	eventually(t, "201 conns", func() bool { return s.Stats().Conns == 201 })
	// Let the upgrade goroutines finish.
	eventually(t, "goroutines to settle", func() bool { return runtime.NumGoroutine() < before+10 })
	if got := runtime.NumGoroutine(); got >= before+10 {
		t.Fatalf("goroutines %d -> %d with 200 idle connections", before, got)
	}
}

func TestShutdownGraceful(t *testing.T) {
	s := startServer(t, Config{CloseTimeout: time.Minute})
	var conns []io.ReadWriter
	for range 3 {
		conns = append(conns, mustDial(t, s.URL()))
	}
	eventually(t, "3 conns", func() bool { return s.Stats().Conns == 3 })
	done := make(chan struct{})
	go func() { s.Shutdown(Graceful); close(done) }()
	for i, c := range conns {
		// ReadServerData answers the close frame, which lets the server
		// finish without waiting for CloseTimeout.
		_, _, err := wsutil.ReadServerData(c)
		var ce wsutil.ClosedError
		if !errors.As(err, &ce) || ce.Code != ws.StatusGoingAway {
			t.Fatalf("client %d read %v; want close 1001", i, err)
		}
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("graceful shutdown did not finish after every client answered")
	}
	if st := s.Stats(); st.Conns != 0 {
		t.Fatalf("conns after shutdown = %d", st.Conns)
	}
}

func TestShutdownAbrupt(t *testing.T) {
	s := startServer(t, Config{})
	conn := mustDial(t, s.URL())
	eventually(t, "1 conn", func() bool { return s.Stats().Conns == 1 })
	s.Shutdown(Abrupt)
	if f, err := readFrame(conn); err != io.EOF {
		t.Fatalf("read after abrupt shutdown = %v %v; want EOF without a close frame", f.Header.OpCode, err)
	}
	if r := dialWS(s.URL(), ""); r.err == nil {
		t.Fatal("dial after shutdown succeeded")
	}
	if err := s.Stall(time.Second); !errors.Is(err, ErrServerClosed) {
		t.Fatalf("Stall after shutdown = %v; want ErrServerClosed", err)
	}
}

// closeOnMessage is Echo that refuses messages starting with "!" with 1008.
type closeOnMessage struct{ Echo }

func (closeOnMessage) OnMessage(c *Conn, op ws.OpCode, p []byte) error {
	if len(p) > 0 && p[0] == '!' {
		return &CloseError{Code: ws.StatusPolicyViolation, Reason: "no shouting"}
	}
	return c.Write(op, p)
}

// A broken frame or message is answered with the close code RFC 6455 gives
// it, then the connection ends.
func TestProtocolViolations(t *testing.T) {
	s := startServer(t, Config{MaxMessageSize: 100, Handler: closeOnMessage{}})
	tests := []struct {
		name  string
		frame ws.Frame
		mask  bool
		want  ws.StatusCode
	}{
		{name: "unmasked client frame", frame: ws.NewTextFrame([]byte("hi")), mask: false, want: ws.StatusProtocolError},
		{name: "invalid UTF-8 text", frame: ws.NewTextFrame([]byte{0xff, 0xfe}), mask: true, want: ws.StatusInvalidFramePayloadData},
		{name: "message above MaxMessageSize", frame: ws.NewBinaryFrame(make([]byte, 101)), mask: true, want: ws.StatusMessageTooBig},
		{name: "handler refuses", frame: ws.NewTextFrame([]byte("!hi")), mask: true, want: ws.StatusPolicyViolation},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			conn := mustDial(t, s.URL())
			f := tc.frame
			if tc.mask {
				f = ws.MaskFrame(f)
			}
			if err := ws.WriteFrame(conn, f); err != nil {
				t.Fatal(err)
			}
			got, err := readFrame(conn)
			if err != nil || got.Header.OpCode != ws.OpClose {
				t.Fatalf("answer %v, %v; want a close frame", got.Header.OpCode, err)
			}
			if code, _ := ws.ParseCloseFrameData(got.Payload); code != tc.want {
				t.Fatalf("close code %d; want %d", code, tc.want)
			}
		})
	}
}

// Many clients echo at once through the few workers; every message comes
// back, in order, on its own connection.
func TestManyClientsEcho(t *testing.T) {
	const clients, msgs = 50, 50
	s := startServer(t, Config{Workers: 2})
	errc := make(chan error, clients)
	for i := range clients {
		conn := mustDial(t, s.URL())
		go func() {
			errc <- func() error {
				for j := range msgs {
					want := []byte(strings.Repeat("x", i+j))
					if err := wsutil.WriteClientBinary(conn, want); err != nil {
						return err
					}
					got, err := wsutil.ReadServerBinary(conn)
					if err != nil {
						return err
					}
					if !bytes.Equal(got, want) {
						return errors.New("echo mismatch")
					}
				}
				return nil
			}()
		}()
	}
	for range clients {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "all messages counted", func() bool { return s.Stats().MessagesOut == clients*msgs })
}
