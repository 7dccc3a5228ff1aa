package loadgen

import (
	"net"
	"sync"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"

	"github.com/stampede-dev/stampede/protocol"
)

// memServer is a minimal message-protocol server for the tests
// (docs/protocol.md): an in-memory store that outlives restarts, one
// goroutine per connection, one lock around everything so that each
// connection sees its room's frames in seq order. Unlike the real target it
// can be muted: it then stores messages but sends nothing, which is a
// crash between storing and ACKing made repeatable.
type memServer struct {
	t        *testing.T
	addr     string
	url      string
	noDedupe bool

	mu      sync.Mutex
	ln      net.Listener
	conns   map[*memConn]bool
	rooms   map[string]*memRoom
	mute    bool
	garbage bool // answer every join with a malformed frame first
	dupSupp int  // msgs ACKed again instead of stored
	again   int  // msgs stored a second time (noDedupe)
}

type memRoom struct {
	ids     []string // message ID of seq i+1
	seqOf   map[string]uint64
	members map[*memConn]bool
}

type memConn struct {
	c     net.Conn
	rooms []*memRoom
}

func newMemServer(t *testing.T, noDedupe bool) *memServer {
	t.Helper()
	s := &memServer{t: t, noDedupe: noDedupe, conns: map[*memConn]bool{}, rooms: map[string]*memRoom{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.addr = ln.Addr().String()
	s.url = "ws://" + s.addr + "/"
	s.serve(ln)
	t.Cleanup(func() { s.kill() })
	return s
}

func (s *memServer) serve(ln net.Listener) {
	s.mu.Lock()
	s.ln = ln
	s.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go s.conn(c)
		}
	}()
}

// kill closes the listener and every connection without a close frame,
// as a crash would; the store survives.
func (s *memServer) kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln != nil {
		s.ln.Close()
		s.ln = nil
	}
	for mc := range s.conns {
		mc.c.Close()
		s.leave(mc)
	}
	s.mute = false
}

// restart listens again on the same port.
func (s *memServer) restart() {
	s.t.Helper()
	var ln net.Listener
	var err error
	for i := 0; i < 50; i++ { // the old socket may linger a moment
		if ln, err = net.Listen("tcp", s.addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		s.t.Fatal(err)
	}
	s.serve(ln)
}

func (s *memServer) setMute(m bool) {
	s.mu.Lock()
	s.mute = m
	s.mu.Unlock()
}

func (s *memServer) leave(mc *memConn) {
	for _, r := range mc.rooms {
		delete(r.members, mc)
	}
	delete(s.conns, mc)
}

func (s *memServer) room(name string) *memRoom {
	r := s.rooms[name]
	if r == nil {
		r = &memRoom{seqOf: map[string]uint64{}, members: map[*memConn]bool{}}
		s.rooms[name] = r
	}
	return r
}

func (s *memServer) conn(c net.Conn) {
	defer c.Close()
	if _, err := ws.Upgrade(c); err != nil {
		return
	}
	mc := &memConn{c: c}
	s.mu.Lock()
	if s.ln == nil { // killed meanwhile
		s.mu.Unlock()
		return
	}
	s.conns[mc] = true
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.leave(mc)
		s.mu.Unlock()
	}()
	var f protocol.Frame
	for {
		p, op, err := wsutil.ReadClientData(c)
		if err != nil || op != ws.OpText {
			return
		}
		if err := protocol.Decode(p, &f); err != nil {
			return
		}
		s.mu.Lock()
		if s.conns[mc] {
			s.handle(mc, &f)
		}
		s.mu.Unlock()
	}
}

// handle answers one frame, under s.mu.
func (s *memServer) handle(mc *memConn, f *protocol.Frame) {
	write := func(c *memConn, b []byte) {
		if !s.mute {
			_ = c.c.SetWriteDeadline(time.Now().Add(2 * time.Second))
			_ = wsutil.WriteServerText(c.c, b)
		}
	}
	r := s.room(string(f.Room))
	switch f.Type {
	case protocol.TypeJoin:
		if s.garbage {
			write(mc, []byte(`{"type":"deliver","room":"`+string(f.Room)+`","seq":1,"id":"","body":""}`))
		}
		r.members[mc] = true
		mc.rooms = append(mc.rooms, r)
		write(mc, protocol.AppendJoined(nil, string(f.Room), uint64(len(r.ids))))
	case protocol.TypeResume:
		for seq := f.LastSeq + 1; seq <= uint64(len(r.ids)); seq++ {
			write(mc, protocol.AppendDeliver(nil, string(f.Room), seq, r.ids[seq-1], []byte("x")))
		}
		r.members[mc] = true
		mc.rooms = append(mc.rooms, r)
		write(mc, protocol.AppendResumed(nil, string(f.Room), uint64(len(r.ids))))
	case protocol.TypeMsg:
		id := string(f.ID)
		if seq, ok := r.seqOf[id]; ok {
			if !s.noDedupe {
				s.dupSupp++
				write(mc, protocol.AppendAck(nil, id, seq))
				return
			}
			s.again++
		}
		r.ids = append(r.ids, id)
		seq := uint64(len(r.ids))
		r.seqOf[id] = seq
		write(mc, protocol.AppendAck(nil, id, seq))
		for m := range r.members {
			if m != mc {
				write(m, protocol.AppendDeliver(nil, string(f.Room), seq, id, f.Body))
			}
		}
	}
}

// The restarter methods of the storm test.

func (s *memServer) URL() string { return s.url }
func (s *memServer) Mute()       { s.setMute(true) }
func (s *memServer) Kill()       { s.kill() }
func (s *memServer) Restart()    { s.restart() }
func (s *memServer) DupSuppressed() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dupSupp
}

// storedAgain is the number of msgs stored a second time (noDedupe).
func (s *memServer) storedAgain() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.again
}
