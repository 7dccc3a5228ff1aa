package loadgen

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/spec"
	"github.com/stampede-dev/stampede/target"
)

// targetRestarter is the bundled target with its embedded store in a test
// directory, behind a relay that can mute the server's side: muted, the
// target still stores and ACKs what the clients send, but nothing it
// writes reaches them, which makes "stored, then the ACK lost in the
// crash" repeatable. Kill shuts the target down abruptly and drops every
// relayed connection; Restart starts a new target on the same port with
// the same store, and the relay listens again on its own.
type targetRestarter struct {
	t        *testing.T
	cfg      target.Config
	srv      *target.Server
	dupsGone uint64 // DupSuppressed of the targets shut down

	relayAddr string
	mu        sync.Mutex
	ln        net.Listener
	conns     map[net.Conn]bool
	muted     atomic.Bool
}

func newTargetRestarter(t *testing.T, noDedupe bool) *targetRestarter {
	t.Helper()
	tr := &targetRestarter{t: t, cfg: target.Config{Server: spec.Server{Store: t.TempDir(), NoDedupe: noDedupe}}, conns: map[net.Conn]bool{}}
	srv, err := target.Start(tr.cfg)
	if err != nil {
		t.Fatal(err)
	}
	tr.srv, tr.cfg.Addr = srv, srv.Addr().String()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tr.relayAddr = ln.Addr().String()
	tr.relay(ln)
	t.Cleanup(func() {
		tr.dropRelay()
		tr.srv.Shutdown(target.Abrupt)
	})
	return tr
}

func (tr *targetRestarter) relay(ln net.Listener) {
	tr.mu.Lock()
	tr.ln = ln
	tr.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go tr.pipe(c)
		}
	}()
}

// pipe relays one connection; the server's bytes are discarded while muted.
func (tr *targetRestarter) pipe(c net.Conn) {
	s, err := net.Dial("tcp", tr.cfg.Addr)
	if err != nil {
		c.Close()
		return
	}
	tr.mu.Lock()
	if tr.ln == nil {
		tr.mu.Unlock()
		c.Close()
		s.Close()
		return
	}
	tr.conns[c], tr.conns[s] = true, true
	tr.mu.Unlock()
	go func() {
		_, _ = io.Copy(s, c)
		s.Close()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := s.Read(buf)
		if n > 0 && !tr.muted.Load() {
			if _, werr := c.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	c.Close()
}

// dropRelay closes the relay's listener and every relayed connection.
func (tr *targetRestarter) dropRelay() {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if tr.ln != nil {
		tr.ln.Close()
		tr.ln = nil
	}
	for c := range tr.conns {
		c.Close()
		delete(tr.conns, c)
	}
}

func (tr *targetRestarter) URL() string { return "ws://" + tr.relayAddr + "/" }
func (tr *targetRestarter) Mute()       { tr.muted.Store(true) }

func (tr *targetRestarter) Kill() {
	tr.dropRelay()
	tr.dupsGone += tr.srv.Stats().DupSuppressed
	if err := tr.srv.Shutdown(target.Abrupt); err != nil {
		tr.t.Fatal(err)
	}
	tr.muted.Store(false)
}

func (tr *targetRestarter) Restart() {
	tr.t.Helper()
	var err error
	for i := 0; i < 50; i++ { // the old listener's port may linger a moment
		if tr.srv, err = target.Start(tr.cfg); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		tr.t.Fatal(err)
	}
	var ln net.Listener
	for i := 0; i < 50; i++ {
		if ln, err = net.Listen("tcp", tr.relayAddr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		tr.t.Fatal(err)
	}
	tr.relay(ln)
}

func (tr *targetRestarter) DupSuppressed() int {
	return int(tr.dupsGone + tr.srv.Stats().DupSuppressed)
}

// TestStampedeTarget runs the crash of TestStampedeRecovery against the
// bundled target and its embedded store, restarted on the same port with
// the same store: nothing lost or delivered twice with the whole pattern
// on; loss without resume; duplicates without the server's dedupe.
func TestStampedeTarget(t *testing.T) {
	for _, tc := range []struct {
		name     string
		noDedupe bool
		tweak    func(*Config)
		check    func(t *testing.T, m results.Messages, serverDups int)
	}{
		{
			name: "everything on",
			check: func(t *testing.T, m results.Messages, serverDups int) {
				if m.Lost != 0 || m.DupDelivered != 0 || m.Unsynced != 0 || m.SeqConflicts != 0 || m.Received != m.Expected {
					t.Errorf("lost %d, dup_delivered %d, unsynced %d, conflicts %d, received %d of %d: want none lost",
						m.Lost, m.DupDelivered, m.Unsynced, m.SeqConflicts, m.Received, m.Expected)
				}
				if m.Retried == 0 || m.Resumed == 0 || m.DupSuppressed == 0 {
					t.Errorf("retried %d, resumed %d, dup_suppressed %d: want > 0", m.Retried, m.Resumed, m.DupSuppressed)
				}
				if int(m.DupSuppressed) != serverDups {
					t.Errorf("client counted %d suppressed duplicates, target %d", m.DupSuppressed, serverDups)
				}
			},
		},
		{
			name:  "no resume",
			tweak: func(c *Config) { c.NoResume = true },
			check: func(t *testing.T, m results.Messages, _ int) {
				if m.Lost == 0 || m.Resumed != 0 || m.DupDelivered != 0 {
					t.Errorf("lost %d, resumed %d, dup_delivered %d: want > 0, 0, 0", m.Lost, m.Resumed, m.DupDelivered)
				}
			},
		},
		{
			name:     "target without dedupe",
			noDedupe: true,
			check: func(t *testing.T, m results.Messages, serverDups int) {
				// At most the 5 other members of a resent message's room
				// (6 clients) get it twice.
				if m.DupDelivered == 0 || m.DupDelivered > 5*m.Retried || m.Lost != 0 || serverDups != 0 {
					t.Errorf("dup_delivered %d (retried %d), lost %d, target dup_suppressed %d: want 0 < dup_delivered <= 5 x retried, 0, 0",
						m.DupDelivered, m.Retried, m.Lost, serverDups)
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := newTargetRestarter(t, tc.noDedupe)
			rep := stampedeStorm(t, srv, tc.tweak)
			m := rep.Messages
			if m.Sent == 0 || m.Acked == 0 || m.Sent != m.Acked+m.Unacked+m.UnackedDropped {
				t.Errorf("sent %d, acked %d, unacked %d, unacked_dropped %d", m.Sent, m.Acked, m.Unacked, m.UnackedDropped)
			}
			tc.check(t, m, srv.DupSuppressed())
		})
	}
}
