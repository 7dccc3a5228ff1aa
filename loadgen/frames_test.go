package loadgen

import (
	"bufio"
	"bytes"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/gobwas/ws"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/connerr"
	"github.com/stampede-dev/stampede/spec"
)

// scripted accepts one connection, answers its upgrade and runs script
// on it; errors go to the test.
func scripted(t *testing.T, script func(c net.Conn, br *bufio.Reader, answer string)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() {
		ln.Close()
		<-done
	})
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		br := bufio.NewReader(c)
		req, err := http.ReadRequest(br)
		if err != nil {
			t.Errorf("server: %v", err)
			return
		}
		answer := "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " +
			acceptOf(req.Header.Get("Sec-WebSocket-Key")) + "\r\n\r\n"
		script(c, br, answer)
	}()
	return "ws://" + ln.Addr().String() + "/"
}

// dribble writes p in pieces of n bytes with a pause between them, so the
// client reads answers and frames split at every possible point.
func dribble(t *testing.T, c net.Conn, p []byte, n int) {
	for len(p) > 0 {
		k := min(n, len(p))
		if _, err := c.Write(p[:k]); err != nil {
			t.Errorf("server write: %v", err)
			return
		}
		p = p[k:]
		time.Sleep(2 * time.Millisecond)
	}
}

func compile(f ws.Frame) []byte {
	var b bytes.Buffer
	_ = ws.WriteFrame(&b, f)
	return b.Bytes()
}

// readClientFrame reads one masked client frame and unmasks it.
func readClientFrame(t *testing.T, br *bufio.Reader) ws.Frame {
	f, err := readFrame(br)
	if err != nil {
		t.Errorf("server read: %v", err)
		return f
	}
	if !f.Header.Masked {
		t.Errorf("client frame %v is not masked", f.Header.OpCode)
	}
	return ws.UnmaskFrameInPlace(f)
}

// TestSplitFrames: an answer and frames that arrive a few bytes at a time;
// a large data frame the mode does not need is skipped without buffering;
// pings are answered with their payload; a close 1001 is echoed and ends
// the connection as closed_1001.
func TestSplitFrames(t *testing.T) {
	url := scripted(t, func(c net.Conn, br *bufio.Reader, answer string) {
		msg := append([]byte(answer), compile(ws.NewPingFrame([]byte("hello")))...)
		dribble(t, c, msg, 7)
		if f := readClientFrame(t, br); f.Header.OpCode != ws.OpPong || string(f.Payload) != "hello" {
			t.Errorf("got %v %q, want pong hello", f.Header.OpCode, f.Payload)
		}
		big := compile(ws.NewBinaryFrame(bytes.Repeat([]byte("x"), 200<<10)))
		msg = append(big, compile(ws.NewPingFrame([]byte("again")))...)
		dribble(t, c, msg[:100], 3)
		dribble(t, c, msg[100:], 50<<10)
		if f := readClientFrame(t, br); f.Header.OpCode != ws.OpPong || string(f.Payload) != "again" {
			t.Errorf("got %v %q, want pong again", f.Header.OpCode, f.Payload)
		}
		dribble(t, c, compile(ws.NewCloseFrame(ws.NewCloseFrameBody(ws.StatusGoingAway, "bye"))), 3)
		f := readClientFrame(t, br)
		if code, _ := ws.ParseCloseFrameData(f.Payload); f.Header.OpCode != ws.OpClose || code != ws.StatusGoingAway {
			t.Errorf("got %v %d, want close 1001", f.Header.OpCode, code)
		}
	})
	pol := backoff.Policy{Kind: backoff.Fixed, Initial: time.Hour}
	run := start(t, Config{Client: spec.Client{URL: url, Clients: 1, Policy: pol}})
	waitFor(t, 10*time.Second, "the close", func(s Stats) bool { return s.DisconnectCount() == 1 }, run.f)
	rep := run.stop(t)
	b := totals(rep)
	if b.Successes != 1 || b.Disconnects[connerr.Closed1001] != 1 {
		t.Errorf("successes %d disconnects %v", b.Successes, b.Disconnects)
	}
}

// TestSplitEcho: echoes that arrive split are gathered and timed.
func TestSplitEcho(t *testing.T) {
	url := scripted(t, func(c net.Conn, br *bufio.Reader, answer string) {
		dribble(t, c, []byte(answer), 5)
		for i := 0; i < 3; i++ {
			f := readClientFrame(t, br)
			if f.Header.OpCode != ws.OpText || len(f.Payload) != 300 {
				t.Errorf("got %v of %d bytes, want text of 300", f.Header.OpCode, len(f.Payload))
				return
			}
			dribble(t, c, compile(ws.NewTextFrame(f.Payload)), 37)
		}
		_, _ = readFrame(br) // until the client goes
	})
	run := start(t, Config{Client: spec.Client{URL: url, Clients: 1, Policy: fast, Mode: spec.ModeEcho, MsgRate: 20, MsgSize: 300}})
	waitFor(t, 10*time.Second, "three echoes", func(s Stats) bool { return s.MsgDelivered == 3 }, run.f)
	rep := run.stop(t)
	if rep.RTT.TotalCount() != 3 || rep.Messages.Delivered != 3 {
		t.Errorf("RTT samples %d, messages %+v", rep.RTT.TotalCount(), rep.Messages)
	}
	// Each echo was dribbled over 9 writes 2 ms apart: >= 16 ms.
	if min := time.Duration(rep.RTT.Min()) * time.Microsecond; min < 16*time.Millisecond {
		t.Errorf("shortest RTT %s, want >= 16ms", min)
	}
}

// TestBadFrames: frames a server may not send end the connection as
// protocol.
func TestBadFrames(t *testing.T) {
	masked := ws.MaskFrame(ws.NewTextFrame([]byte("x")))
	for _, tc := range []struct {
		name  string
		frame []byte
	}{
		{"masked server frame", compile(masked)},
		{"reserved opcode", compile(ws.NewFrame(ws.OpCode(0x3), true, nil))},
		{"rsv bits", compile(ws.Frame{Header: ws.Header{Fin: true, Rsv: 4, OpCode: ws.OpText, Length: 1}, Payload: []byte("x")})},
		{"fragmented ping", compile(ws.NewFrame(ws.OpPing, false, nil))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := scripted(t, func(c net.Conn, br *bufio.Reader, answer string) {
				_, _ = c.Write(append([]byte(answer), tc.frame...))
				_, _ = readFrame(br)
			})
			pol := backoff.Policy{Kind: backoff.Fixed, Initial: time.Hour}
			run := start(t, Config{Client: spec.Client{URL: url, Clients: 1, Policy: pol}})
			s := waitFor(t, 10*time.Second, "the disconnect", func(s Stats) bool { return s.DisconnectCount() == 1 }, run.f)
			if s.Disconnects[connerr.Protocol] != 1 {
				t.Errorf("disconnects %v, want protocol", s.Disconnects)
			}
		})
	}
}
