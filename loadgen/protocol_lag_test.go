package loadgen

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/protocol"
	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/spec"
	"github.com/stampede-dev/stampede/target"
)

// frameRelay stands between the fleet and the bundled target and reads
// the server's side frame by frame. Once hold is on, every frame the
// server sends to a held connection (every third accepted) is kept back
// for as long as the connection lives: the client stays connected and
// synced, but what its room's other members send from then on, stored and
// ACKed, is still on its way when the run ends, as when a target
// process's fan-out lags under load. Once drop is on, the next deliver
// frame to one connection is thrown away and the relay goes on: a real
// loss, a gap in the seqs the client receives.
type frameRelay struct {
	t    *testing.T
	dst  string
	url  string
	hold atomic.Bool
	drop atomic.Bool

	mu      sync.Mutex
	n       int // connections accepted
	dropped atomic.Int64
	held    atomic.Int64 // frames kept back
	conns   []net.Conn
}

func newFrameRelay(t *testing.T, dst string) *frameRelay {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fr := &frameRelay{t: t, dst: dst, url: "ws://" + ln.Addr().String() + "/"}
	t.Cleanup(func() {
		ln.Close()
		fr.mu.Lock()
		defer fr.mu.Unlock()
		for _, c := range fr.conns {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			fr.mu.Lock()
			i := fr.n
			fr.n++
			fr.mu.Unlock()
			go fr.pipe(c, i)
		}
	}()
	return fr
}

func (fr *frameRelay) pipe(c net.Conn, i int) {
	s, err := net.Dial("tcp", fr.dst)
	if err != nil {
		c.Close()
		return
	}
	fr.mu.Lock()
	fr.conns = append(fr.conns, c, s)
	fr.mu.Unlock()
	defer c.Close()
	defer s.Close()
	go func() {
		_, _ = io.Copy(s, c)
		s.Close()
	}()
	held := i%3 == 0
	var buf []byte
	rd := make([]byte, 32<<10)
	upgraded := false
	var f protocol.Frame
	for {
		n, err := s.Read(rd)
		buf = append(buf, rd[:n]...)
		if !upgraded {
			end := bytes.Index(buf, []byte("\r\n\r\n"))
			if end < 0 {
				if err != nil {
					return
				}
				continue
			}
			if _, werr := c.Write(buf[:end+4]); werr != nil {
				return
			}
			buf, upgraded = buf[end+4:], true
		}
		for {
			size, payload, ok := serverFrame(buf)
			if !ok {
				break
			}
			frame := buf[:size]
			buf = buf[size:]
			switch {
			case held && fr.hold.Load():
				fr.held.Add(1)
				continue
			case !held && fr.drop.Load() && protocol.Decode(payload, &f) == nil && f.Type == protocol.TypeDeliver && fr.drop.CompareAndSwap(true, false):
				fr.dropped.Add(1)
				continue
			}
			if _, werr := c.Write(frame); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// serverFrame parses one unmasked WebSocket frame at the start of b: its
// whole size and its payload; ok is false while b holds less than a frame.
func serverFrame(b []byte) (size int, payload []byte, ok bool) {
	if len(b) < 2 {
		return 0, nil, false
	}
	h, n := 2, uint64(b[1]&0x7f)
	switch n {
	case 126:
		if len(b) < 4 {
			return 0, nil, false
		}
		h, n = 4, uint64(binary.BigEndian.Uint16(b[2:]))
	case 127:
		if len(b) < 10 {
			return 0, nil, false
		}
		h, n = 10, binary.BigEndian.Uint64(b[2:])
	}
	if uint64(len(b)-h) < n {
		return 0, nil, false
	}
	return h + int(n), b[h : h+int(n)], true
}

// lagRun runs 24 clients in 4 rooms (6 members each) against the bundled
// target through a frameRelay, turns on what set chooses once every
// client is connected and has had messages ACKed, and returns the tallied
// report. No kill: nothing but the relay keeps a message from a member.
func lagRun(t *testing.T, set func(*frameRelay)) (results.Messages, *frameRelay) {
	t.Helper()
	srv, err := target.Start(target.Config{Server: spec.Server{Store: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Shutdown(target.Abrupt) })
	fr := newFrameRelay(t, srv.Addr().String())
	const n = 24
	f, err := New(Config{Client: spec.Client{URL: fr.url, Clients: n, Mode: spec.ModeStampede, Rooms: 4, MsgRate: 20, Seed: 7,
		Policy:      backoff.Policy{Kind: backoff.Fixed, Initial: 200 * time.Millisecond, Jitter: 0.9},
		QuietPeriod: 1500 * time.Millisecond, Reactors: 2, PingInterval: -1},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	var rep *results.Report
	done := make(chan error, 1)
	go func() {
		var err error
		rep, err = f.Run(ctx)
		done <- err
	}()
	for s := f.Stats(); s.Connected != n || s.MsgAcked < 2*n; s = f.Stats() {
		if ctx.Err() != nil {
			t.Fatalf("the run ended before every client was connected and sending: %+v", s)
		}
		time.Sleep(10 * time.Millisecond)
	}
	set(fr)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	Tally(rep)
	t.Logf("messages %+v; relay: %d frames held, %d deliveries dropped", rep.Messages, fr.held.Load(), fr.dropped.Load())
	return rep.Messages, fr
}

// TestStampedeLagIsNotLoss: a member that is connected and synced at the
// end but behind its room (the fan-out to it lags) is counted unsynced,
// held to what it saw, not as having lost what is still on its way; a
// delivery that never came, with later ones after it, is still lost.
func TestStampedeLagIsNotLoss(t *testing.T) {
	t.Run("fan-out behind at the end", func(t *testing.T) {
		t.Parallel()
		m, fr := lagRun(t, func(fr *frameRelay) { fr.hold.Store(true) })
		if fr.held.Load() == 0 {
			t.Fatal("the relay held nothing back: the test did not make a member lag")
		}
		if m.Lost != 0 || m.LossClients != 0 {
			t.Errorf("lost %d (loss_clients %d) with nothing lost, only held back: lag counted as loss", m.Lost, m.LossClients)
		}
		// Every third client is held back; each is behind its room.
		if m.Unsynced == 0 || m.Unsynced > 8 {
			t.Errorf("unsynced %d, want 1..8 (the held members)", m.Unsynced)
		}
		if m.Received != m.Expected || m.DupDelivered != 0 {
			t.Errorf("received %d of %d, dup_delivered %d", m.Received, m.Expected, m.DupDelivered)
		}
	})
	t.Run("a dropped delivery", func(t *testing.T) {
		t.Parallel()
		m, fr := lagRun(t, func(fr *frameRelay) { fr.drop.Store(true) })
		if fr.dropped.Load() != 1 {
			t.Fatalf("the relay dropped %d deliveries, want 1", fr.dropped.Load())
		}
		if m.Lost != 1 || m.LossClients != 1 || m.Unsynced != 0 {
			t.Errorf("lost %d, loss_clients %d, unsynced %d: want the dropped delivery lost (1, 1, 0)", m.Lost, m.LossClients, m.Unsynced)
		}
	})
}
