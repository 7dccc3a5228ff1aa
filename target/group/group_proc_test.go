package group

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/target"
)

// One process of a group restarts while the other keeps serving: its
// clients see the stop, the other's do not, and the port never refuses.
func TestGroupRespawnProc(t *testing.T) {
	g := startGroup(t, 2, target.Config{})
	ctx := context.Background()
	before := g.Procs()
	var conns []net.Conn
	for range 30 {
		conns = append(conns, mustDial(t, g.URL()))
	}
	if err := g.RespawnProc(ctx, 0, 0); !errors.Is(err, ErrProcsRunning) {
		t.Fatalf("RespawnProc of a running process = %v; want ErrProcsRunning", err)
	}
	if err := g.RespawnProc(ctx, 2, 0); err == nil {
		t.Fatal("RespawnProc(2) in a group of 2 succeeded")
	}
	if err := g.SignalProc(-1, syscall.SIGUSR1); err == nil {
		t.Fatal("SignalProc(-1) succeeded")
	}
	st0, err := before[0].Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}

	if err := g.SignalProc(0, syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	if err := before[0].Wait(); err != nil {
		t.Fatalf("abrupt exit: %v", err)
	}
	// The other process still listens: connects succeed and land on it.
	for range 10 {
		mustDial(t, g.URL()).Close()
	}
	// Exactly the stopped process's clients see EOF; the others read
	// nothing within the deadline.
	var ended int
	for _, c := range conns {
		c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		if _, err := readFrame(c); err == io.EOF {
			ended++
		}
	}
	if ended != int(st0.Conns) {
		t.Fatalf("%d clients saw EOF; want the stopped process's %d", ended, st0.Conns)
	}

	const hold = 200 * time.Millisecond
	start := time.Now()
	if err := g.RespawnProc(ctx, 0, hold); err != nil {
		t.Fatal(err)
	}
	after := g.Procs()
	if after[1] != before[1] || after[0].PID == before[0].PID || after[0].Exited() {
		t.Fatalf("after RespawnProc(0): procs %d,%d; want a new first and the same second (%d)", after[0].PID, after[1].PID, before[1].PID)
	}
	if d := after[0].Ready.Sub(start); d < hold {
		t.Fatalf("respawned process ready %v after RespawnProc; want at least the %v hold", d, hold)
	}
	if err := after[0].SetBacklog(ctx, 7); err != nil {
		t.Fatal(err)
	}
	if err := after[0].SetAcceptRate(ctx, 100); err != nil {
		t.Fatal(err)
	}
	if err := after[0].Stall(ctx, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := after[0].Reject(ctx, 503, time.Second, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if st, err := g.Stats(ctx); err != nil || st.Procs != 2 {
		t.Fatalf("group stats after RespawnProc = %+v, %v; want 2 procs", st, err)
	}
}

// A control request that meets a process on its way out (a restart under
// way) skips it rather than failing the group's request.
func TestGroupControlSkipsExiting(t *testing.T) {
	g := startGroup(t, 2, target.Config{})
	ctx := context.Background()
	for range 3 {
		victim := g.Procs()[0]
		if err := g.SignalProc(0, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		if err := g.Stall(ctx, time.Millisecond); err != nil {
			t.Fatalf("Stall while a process dies: %v", err)
		}
		victim.Wait()
		if err := g.RespawnProc(ctx, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := g.SetBacklog(ctx, 0); err == nil {
		t.Fatal("SetBacklog(0) accepted by live processes")
	}
}
