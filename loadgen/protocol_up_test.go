package loadgen

import (
	"cmp"
	"context"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/protocol"
	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/results/summary"
	"github.com/stampede-dev/stampede/spec"
)

// upSpy wraps a reactor's mode and notes, per client ID, the offsets of
// its 101 answers and of the joined and resumed frames it received. It
// runs on the reactor's goroutine; read it after the run.
type upSpy struct {
	handler
	fr       protocol.Frame
	upgrades map[uint32][]int64
	caught   map[uint32][]catchUp
}

type catchUp struct {
	at      int64
	resumed bool
}

func (s *upSpy) connected(r *reactor, j int32, now int64) {
	s.upgrades[r.id(j)] = append(s.upgrades[r.id(j)], now)
	s.handler.connected(r, j, now)
}

func (s *upSpy) data(r *reactor, j int32, h ws.Header, p []byte, now int64) {
	if h.OpCode == ws.OpText && protocol.Decode(p, &s.fr) == nil &&
		(s.fr.Type == protocol.TypeJoined || s.fr.Type == protocol.TypeResumed) {
		s.caught[r.id(j)] = append(s.caught[r.id(j)], catchUp{at: now, resumed: s.fr.Type == protocol.TypeResumed})
	}
	s.handler.data(r, j, h, p, now)
}

// spyOn wraps the modes of f's reactors in upSpys, appended to spies.
func spyOn(f *Fleet, spies *[]*upSpy) {
	for _, r := range f.reactors {
		s := &upSpy{handler: r.mode, upgrades: map[uint32][]int64{}, caught: map[uint32][]catchUp{}}
		r.mode = s
		*spies = append(*spies, s)
	}
}

// byClient returns rep's transitions per client, in time order.
func byClient(rep *results.Report) map[uint32][]results.Transition {
	trs := slices.Clone(rep.Transitions)
	slices.SortStableFunc(trs, func(a, b results.Transition) int { return cmp.Compare(a.At, b.At) })
	out := map[uint32][]results.Transition{}
	for _, tr := range trs {
		out[tr.Client] = append(out[tr.Client], tr)
	}
	return out
}

// checkAlternate fails t unless each client's transitions go up, down, up...
func checkAlternate(t *testing.T, per map[uint32][]results.Transition) {
	t.Helper()
	for id, trs := range per {
		for i, tr := range trs {
			if tr.Up != (i%2 == 0) {
				t.Errorf("client %d: transition %d is up=%v: want alternating from up (%+v)", id, i, tr.Up, trs)
				break
			}
		}
	}
}

// TestStampedeUpWhenResumed: in the stampede mode a client is up when it
// caught up, not at its 101. Against the bundled target restarted on its
// store, every Up of a client is at a joined (first) or resumed (after a
// Down) frame it received, strictly after that connection's 101; the
// transitions alternate; every client connected before the crash recovers;
// each recovery's TTR runs to its resumed frame.
func TestStampedeUpWhenResumed(t *testing.T) {
	srv := newTargetRestarter(t, false)
	var spies []*upSpy
	rep, _ := stampedeStormPrep(t, srv, 1, nil, func(f *Fleet) { spyOn(f, &spies) })
	upgrades, caught := map[uint32][]int64{}, map[uint32][]catchUp{}
	for _, s := range spies {
		for id, v := range s.upgrades {
			upgrades[id] = append(upgrades[id], v...)
		}
		for id, v := range s.caught {
			caught[id] = append(caught[id], v...)
		}
	}
	per := byClient(rep)
	if len(per) != 24 {
		t.Fatalf("transitions of %d clients, want 24", len(per))
	}
	checkAlternate(t, per)
	firstDown := time.Duration(-1)
	recovered := 0
	for id, trs := range per {
		for i, tr := range trs {
			if !tr.Up {
				if firstDown < 0 || tr.At < firstDown {
					firstDown = tr.At
				}
				continue
			}
			at := int64(tr.At)
			k := slices.IndexFunc(caught[id], func(c catchUp) bool { return c.at == at })
			if k < 0 {
				t.Errorf("client %d: Up at %s is at none of its joined/resumed frames %v", id, tr.At, caught[id])
				continue
			}
			if after := i > 0; caught[id][k].resumed != after {
				t.Errorf("client %d: Up %d at a resumed frame %v, want %v", id, i, caught[id][k].resumed, after)
			}
			if i > 0 {
				recovered++
			}
			var last int64 = -1 // the 101 of the connection that went up
			for _, u := range upgrades[id] {
				if u <= at {
					last = max(last, u)
				}
			}
			if last < 0 || last >= at || (i > 0 && last <= int64(trs[i-1].At)) {
				t.Errorf("client %d: Up at %d, its connection's 101 at %d (101s %v): want a 101 after the Down and before the Up", id, at, last, upgrades[id])
			}
		}
	}
	if firstDown < 0 {
		t.Fatal("no client went down")
	}
	if got := rep.TTR.TotalCount(); got != int64(recovered) || got != int64(rep.Messages.Resumed) {
		t.Errorf("%d TTRs for %d recoveries and %d resumes: want equal", got, recovered, rep.Messages.Resumed)
	}
	recs := summary.Recoveries(rep, []results.Event{{Kind: "restart", Start: firstDown}}, 0)
	if recs[0].ConnectedBefore != 24 || recs[0].Recovered != recs[0].ConnectedBefore {
		t.Errorf("connected before %d, recovered %d: want 24, 24", recs[0].ConnectedBefore, recs[0].Recovered)
	}
}

// dropServer is a message-protocol server for one client whose every
// connection is upgraded and then handled by its number: the first joins
// and is closed after 100 ms, the second is closed once its resume
// arrives, unanswered, and the third resumes and stays.
type dropServer struct {
	url  string
	mu   sync.Mutex
	n    int
	done chan struct{}
}

func newDropServer(t *testing.T) *dropServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &dropServer{url: "ws://" + ln.Addr().String() + "/", done: make(chan struct{})}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		close(s.done)
		ln.Close()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				s.conn(c)
			}()
		}
	}()
	return s
}

func (s *dropServer) conn(c net.Conn) {
	defer c.Close()
	go func() { <-s.done; c.Close() }()
	s.mu.Lock()
	s.n++
	n := s.n
	s.mu.Unlock()
	if _, err := ws.Upgrade(c); err != nil {
		return
	}
	p, _, err := wsutil.ReadClientData(c)
	var f protocol.Frame
	if err != nil || protocol.Decode(p, &f) != nil {
		return
	}
	switch {
	case n == 1 && f.Type == protocol.TypeJoin:
		if wsutil.WriteServerText(c, protocol.AppendJoined(nil, string(f.Room), 0)) != nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
		return
	case n == 2:
		return // upgraded, never caught up
	case f.Type == protocol.TypeResume:
		if wsutil.WriteServerText(c, protocol.AppendResumed(nil, string(f.Room), f.LastSeq)) != nil {
			return
		}
	}
	for { // hold: read what the client sends until it goes
		if _, _, err := wsutil.ReadClientData(c); err != nil {
			return
		}
	}
}

// TestStampedeDropBeforeResumed: a connection that ends after its 101 but
// before its resumed is an attempt that succeeded and a disconnect, but
// the client was never up on it: no Down, and the one TTR runs from the
// first disconnect to the resumed of the third connection.
func TestStampedeDropBeforeResumed(t *testing.T) {
	srv := newDropServer(t)
	f, err := New(Config{Client: spec.Client{URL: srv.url, Clients: 1, Mode: spec.ModeStampede, Rooms: 1, MsgRate: 20, Seed: 3,
		Policy:      backoff.Policy{Kind: backoff.Fixed, Initial: 50 * time.Millisecond},
		QuietPeriod: 100 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	var spies []*upSpy
	spyOn(f, &spies)
	ctx, cancel := context.WithTimeout(context.Background(), 800*time.Millisecond)
	defer cancel()
	rep, err := f.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b := totals(rep)
	var disc uint32
	for _, d := range b.Disconnects {
		disc += d
	}
	if b.Successes != 3 || disc != 2 || rep.Connect.TotalCount() != 3 {
		t.Errorf("successes %d, disconnects %d, connect latencies %d: want 3, 2, 3", b.Successes, disc, rep.Connect.TotalCount())
	}
	trs := byClient(rep)[0]
	if len(trs) != 3 || !trs[0].Up || trs[1].Up || !trs[2].Up {
		t.Fatalf("transitions %+v: want up, down, up", trs)
	}
	s := spies[0]
	if len(s.upgrades[0]) != 3 || len(s.caught[0]) != 2 {
		t.Fatalf("101s %v, catch-ups %v: want 3 and 2", s.upgrades[0], s.caught[0])
	}
	if up := int64(trs[2].At); up != s.caught[0][1].at || !s.caught[0][1].resumed || up <= s.upgrades[0][2] {
		t.Errorf("second Up at %d: want at the resumed frame %+v, after the third 101 at %d", up, s.caught[0][1], s.upgrades[0][2])
	}
	want := trs[2].At - trs[1].At
	if got := rep.TTR.TotalCount(); got != 1 {
		t.Fatalf("%d TTRs, want 1", got)
	}
	// The histogram keeps 3 significant digits of µs.
	if got := time.Duration(rep.TTR.Max()) * time.Microsecond; got < want*999/1000 || got > want*1001/1000+time.Microsecond {
		t.Errorf("TTR %s, want %s (first Down to the resumed of the third connection)", got, want)
	}
}
