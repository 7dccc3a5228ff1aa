package serve

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gobwas/ws"

	"github.com/stampede-dev/stampede/session"
)

// fakeConn records what the server wrote.
type fakeConn struct {
	id uint64
	mu sync.Mutex
	w  [][]byte
}

func (c *fakeConn) ID() uint64 { return c.id }
func (c *fakeConn) Write(_ ws.OpCode, p []byte) error {
	c.mu.Lock()
	c.w = append(c.w, bytes.Clone(p))
	c.mu.Unlock()
	return nil
}

func (c *fakeConn) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var s []string
	for _, b := range c.w {
		s = append(s, string(b))
	}
	c.w = nil
	return s
}

// tickClock fires After when the test says so.
type tickClock struct{ ch chan time.Time }

func (k tickClock) Now() time.Time                       { return time.Time{} }
func (k tickClock) After(time.Duration) <-chan time.Time { return k.ch }

func TestSocketIO(t *testing.T) {
	k := tickClock{ch: make(chan time.Time)}
	s, err := New(session.SocketIO, Options{Clock: k})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a, b := &fakeConn{id: 1}, &fakeConn{id: 2}
	for _, c := range []*fakeConn{a, b} {
		if err := s.Open(c); err != nil {
			t.Fatal(err)
		}
	}
	if got := a.take(); len(got) != 1 || !strings.HasPrefix(got[0], `0{"sid":"1",`) || !strings.Contains(got[0], `"pingInterval":25000,"pingTimeout":20000`) {
		t.Errorf("open packet %q", got)
	}
	b.take()
	for in, want := range map[string]string{
		`40{"token":"x"}`:        `40{"sid":"1"}`,
		`40/chat,{"token":"x"}`:  `40/chat,{"sid":"1"}`,
		`42/chat,7["join","r1"]`: `43/chat,7[]`,
		`4212["join","r1"]`:      `4312[]`,
		`42["join","r1"]`:        "",
		`3`:                      "",
	} {
		if err := s.Message(a, ws.OpText, []byte(in)); err != nil {
			t.Fatal(err)
		}
		got := strings.Join(a.take(), "|")
		if got != want {
			t.Errorf("%s answered %q, want %q", in, got, want)
		}
	}
	pinged := func(c *fakeConn, n int) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			c.mu.Lock()
			k := len(c.w)
			c.mu.Unlock()
			if k >= n {
				return
			}
		}
		t.Fatalf("conn %d: %d pings never came", c.id, n)
	}
	k.ch <- time.Time{} // one ping to each
	k.ch <- time.Time{}
	pinged(b, 2)
	s.Closed(b)
	k.ch <- time.Time{}
	pinged(a, 3)
	s.Close()
	if got := strings.Join(a.take(), ""); got != "222" {
		t.Errorf("pings to a: %q, want three", got)
	}
	if got := strings.Join(b.take(), ""); got != "22" {
		t.Errorf("pings to b, closed after two: %q", got)
	}
}

func TestMQTT(t *testing.T) {
	s, err := New(session.MQTT, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, tc := range []struct {
		name      string
		level     byte
		connack   []byte
		subscribe []byte // after the packet id
		suback    []byte
	}{
		{"3.1.1", 4, []byte{0x20, 2, 0, 0}, []byte{0, 1, 'a', 1, 0, 1, 'b', 2}, []byte{0x90, 4, 0, 9, 1, 1}},
		{"5", 5, []byte{0x20, 3, 0, 0, 0}, []byte{0, 0, 1, 'a', 1, 0, 1, 'b', 0}, []byte{0x90, 5, 0, 9, 0, 1, 0}},
	} {
		c := &fakeConn{id: 3}
		if err := s.Open(c); err != nil {
			t.Fatal(err)
		}
		connect := []byte{0x10, 12, 0, 4, 'M', 'Q', 'T', 'T', tc.level, 2, 0, 60, 0, 0}
		if tc.level == 5 {
			connect = append(connect, 0)
			connect[1]++
		}
		sub := append([]byte{0x82, byte(2 + len(tc.subscribe)), 0, 9}, tc.subscribe...)
		frame := append(append(append(connect, sub...), 0xC0, 0), 0x32, 5, 0, 1, 'x', 0, 4)
		if err := s.Message(c, ws.OpBinary, frame); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		want := append(append(append(tc.connack, tc.suback...), 0xD0, 0), 0x40, 2, 0, 4)
		if got := c.take(); len(got) != 1 || got[0] != string(want) {
			t.Errorf("%s: answered % x, want % x", tc.name, got, want)
		}
		s.Closed(c)
	}
	if err := s.Message(&fakeConn{id: 4}, ws.OpText, []byte("x")); err == nil {
		t.Error("a text frame: no error")
	}
}

func TestActionCable(t *testing.T) {
	k := tickClock{ch: make(chan time.Time)}
	s, err := New(session.ActionCable, Options{Clock: k})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.opt.PingInterval != 3*time.Second {
		t.Errorf("ping interval %v, want Rails' 3 s", s.opt.PingInterval)
	}
	c := &fakeConn{id: 5}
	if err := s.Open(c); err != nil {
		t.Fatal(err)
	}
	if got := c.take(); len(got) != 1 || got[0] != `{"type":"welcome"}` {
		t.Errorf("open: %q, want the welcome", got)
	}
	for in, want := range map[string]string{
		`{"command":"subscribe","identifier":"{\"channel\":\"ChatChannel\",\"room\":\"1\"}"}`: `{"identifier":"{\"channel\":\"ChatChannel\",\"room\":\"1\"}","type":"confirm_subscription"}`,
		`{"command":"message","identifier":"{}","data":"{}"}`:                                 "",
		`{"command":"unsubscribe","identifier":"{}"}`:                                         "",
	} {
		if err := s.Message(c, ws.OpText, []byte(in)); err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(c.take(), "|"); got != want {
			t.Errorf("%s answered %q, want %q", in, got, want)
		}
	}
	k.ch <- time.Time{}
	var pings []string
	for deadline := time.Now().Add(5 * time.Second); len(pings) == 0 && time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		pings = c.take()
	}
	if len(pings) != 1 || !strings.HasPrefix(pings[0], `{"type":"ping","message":`) {
		t.Errorf("a beat sent %q, want one ping", pings)
	}
	s.Close()
	if got := string(actionCablePing(time.Unix(1765000000, 0))); got != `{"type":"ping","message":1765000000}` {
		t.Errorf("ping %q", got)
	}
	for _, bad := range []struct {
		op ws.OpCode
		p  string
	}{{ws.OpText, "not json"}, {ws.OpBinary, `{"command":"subscribe"}`}} {
		if err := s.Message(c, bad.op, []byte(bad.p)); err == nil {
			t.Errorf("%q: no error", bad.p)
		}
	}
}

func TestNewRefuses(t *testing.T) {
	if _, err := New(session.STOMP, Options{}); err == nil || !strings.Contains(err.Error(), "socketio") {
		t.Errorf("New(stomp) = %v", err)
	}
}
