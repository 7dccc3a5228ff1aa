package epoll

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestPair: a token's halves come back as given, negative ones included
// (the proxy's listener and probe tokens are negative).
func TestPair(t *testing.T) {
	for _, c := range []struct{ lo, hi int32 }{
		{0, 0}, {7, 3}, {-2, 0}, {-3, 0}, {1<<31 - 1, -1}, {-1, 1<<31 - 1},
	} {
		tok := Pair(c.lo, c.hi)
		if tok.Lo() != c.lo || tok.Hi() != c.hi {
			t.Errorf("Pair(%d, %d) = %#x: Lo %d, Hi %d", c.lo, c.hi, uint64(tok), tok.Lo(), tok.Hi())
		}
		ev := unix.EpollEvent{Fd: c.lo, Pad: c.hi}
		if TokenOf(&ev) != tok {
			t.Errorf("TokenOf(Fd %d, Pad %d) = %#x, want %#x", c.lo, c.hi, uint64(TokenOf(&ev)), uint64(tok))
		}
	}
	if Pair(-1, -1) != WakeToken {
		t.Errorf("Pair(-1, -1) = %#x, want WakeToken", uint64(Pair(-1, -1)))
	}
}

// pipe returns a non-blocking pipe closed at the end of the test.
func pipe(t *testing.T) (r, w int) {
	t.Helper()
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fds[0]); unix.Close(fds[1]) })
	return fds[0], fds[1]
}

func newPoller(t *testing.T) *Poller {
	t.Helper()
	p, err := New(8)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// TestWaitTokens: a ready descriptor's event carries its token; nothing
// ready returns nothing after the timeout.
func TestWaitTokens(t *testing.T) {
	p := newPoller(t)
	r1, w1 := pipe(t)
	r2, _ := pipe(t)
	if err := p.Add(r1, unix.EPOLLIN, Pair(5, 9)); err != nil {
		t.Fatal(err)
	}
	if err := p.Add(r2, unix.EPOLLIN, Pair(6, 1)); err != nil {
		t.Fatal(err)
	}
	if evs, woken, err := p.Wait(0); err != nil || woken || len(evs) != 0 {
		t.Fatalf("Wait with nothing ready = %v, %v, %v", evs, woken, err)
	}
	unix.Write(w1, []byte("x"))
	evs, woken, err := p.Wait(1000)
	if err != nil || woken || len(evs) != 1 {
		t.Fatalf("Wait = %v, %v, %v; want one event", evs, woken, err)
	}
	if tok := TokenOf(&evs[0]); tok != Pair(5, 9) || evs[0].Events&unix.EPOLLIN == 0 {
		t.Fatalf("event token %#x events %#x, want %#x EPOLLIN", uint64(tok), evs[0].Events, uint64(Pair(5, 9)))
	}
	if err := p.Del(r1); err != nil {
		t.Fatal(err)
	}
	if evs, _, _ := p.Wait(0); len(evs) != 0 {
		t.Fatalf("after Del: %d events", len(evs))
	}
}

// TestWake: Wake is reported as woken, once (the eventfd is drained),
// and the batch's other events stay, in order, without the wake-up's.
func TestWake(t *testing.T) {
	p := newPoller(t)
	r1, w1 := pipe(t)
	r2, w2 := pipe(t)
	p.Add(r1, unix.EPOLLIN, Pair(1, 0))
	p.Add(r2, unix.EPOLLIN, Pair(2, 0))
	p.Wake()
	unix.Write(w1, []byte("x"))
	unix.Write(w2, []byte("x"))
	evs, woken, err := p.Wait(1000)
	if err != nil || !woken {
		t.Fatalf("Wait after Wake = %v, %v, %v; want woken", evs, woken, err)
	}
	if len(evs) != 2 {
		t.Fatalf("%d events beside the wake-up, want 2", len(evs))
	}
	for i := range evs {
		if tok := TokenOf(&evs[i]); tok == WakeToken {
			t.Fatalf("event %d is the wake-up's", i)
		}
	}
	unix.Read(r1, make([]byte, 1))
	unix.Read(r2, make([]byte, 1))
	if evs, woken, _ := p.Wait(0); woken || len(evs) != 0 {
		t.Fatalf("second Wait = %d events, woken %v: the wake-up was not drained", len(evs), woken)
	}
}

// TestOneShotRearm: an EPOLLONESHOT registration fires once until Mod
// re-arms it, with the token Mod gives.
func TestOneShotRearm(t *testing.T) {
	p := newPoller(t)
	r, w := pipe(t)
	p.Add(r, unix.EPOLLIN|unix.EPOLLONESHOT, Pair(3, 1))
	unix.Write(w, []byte("x"))
	if evs, _, _ := p.Wait(1000); len(evs) != 1 {
		t.Fatalf("first Wait: %d events, want 1", len(evs))
	}
	if evs, _, _ := p.Wait(0); len(evs) != 0 {
		t.Fatalf("one-shot fired again before re-arming: %d events", len(evs))
	}
	if err := p.Mod(r, unix.EPOLLIN|unix.EPOLLONESHOT, Pair(3, 2)); err != nil {
		t.Fatal(err)
	}
	evs, _, _ := p.Wait(1000)
	if len(evs) != 1 || TokenOf(&evs[0]) != Pair(3, 2) {
		t.Fatalf("after Mod: %v, want one event with token (3, 2)", evs)
	}
}

// TestWaitParks: a goroutine in Wait is parked in the runtime's poller
// ("IO wait"), not blocked in a system call that holds its thread and P,
// and still wakes for an event, for Wake and for its timeout.
func TestWaitParks(t *testing.T) {
	p, err := New(8)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	r, w := pipe(t)
	if err := p.Add(r, unix.EPOLLIN, Pair(5, 9)); err != nil {
		t.Fatal(err)
	}
	got := make(chan []unix.EpollEvent, 1)
	go func() {
		evs, _, err := p.Wait(-1)
		if err != nil {
			t.Error(err)
		}
		got <- append([]unix.EpollEvent(nil), evs...)
	}()
	deadline := time.Now().Add(5 * time.Second)
	for {
		buf := make([]byte, 1<<20)
		all := string(buf[:runtime.Stack(buf, true)])
		var state string
		for _, g := range strings.Split(all, "\n\n") {
			if strings.Contains(g, "epoll.(*Poller).Wait") {
				state = g[strings.Index(g, "[")+1 : strings.Index(g, "]")]
			}
		}
		if strings.HasPrefix(state, "IO wait") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the waiting goroutine is in state %q, want IO wait", state)
		}
		time.Sleep(10 * time.Millisecond)
	}
	unix.Write(w, []byte{1})
	select {
	case evs := <-got:
		if len(evs) != 1 || TokenOf(&evs[0]) != Pair(5, 9) {
			t.Fatalf("Wait = %+v, want the pipe's event", evs)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Wait did not return for a readable pipe")
	}
	start := time.Now()
	var b [1]byte
	unix.Read(r, b[:])
	if evs, woken, err := p.Wait(30); err != nil || woken || len(evs) != 0 {
		t.Fatalf("Wait(30) = %v, %v, %v; want a timeout", evs, woken, err)
	}
	if d := time.Since(start); d < 30*time.Millisecond {
		t.Errorf("Wait(30) returned after %v", d)
	}
	go func() { time.Sleep(20 * time.Millisecond); p.Wake() }()
	if _, woken, err := p.Wait(-1); err != nil || !woken {
		t.Fatalf("Wait after Wake: woken %v, %v", woken, err)
	}
}
