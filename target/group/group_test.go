package group

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"

	"github.com/stampede-dev/stampede/target"
)

// startGroup starts procs copies of this test binary as target processes.
func startGroup(t *testing.T, procs int, cfg target.Config) *Group {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	g, err := Start(ctx, Config{Spawn: testSpawner(t), Procs: procs, Config: cfg})
	if err != nil {
		t.Fatalf("StartGroup: %v", err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

// Two processes share one port; connections spread over both; SIGTERM
// closes every client with 1001; the port stays reserved (refused) until
// a new generation is respawned, which then stops abruptly on SIGUSR1.
func TestGroup(t *testing.T) {
	g := startGroup(t, 2, target.Config{})
	procs := g.Procs()
	if len(procs) != 2 || procs[0].PID == procs[1].PID || procs[0].Ready.IsZero() {
		t.Fatalf("procs = %+v", procs)
	}
	var conns []net.Conn
	for range 40 {
		conns = append(conns, mustDial(t, g.URL()))
	}
	ctx := context.Background()
	// A process counts a connection just after writing the 101 the client
	// has read: wait for the last one to be counted.
	eventually(t, "40 connections counted", func() bool {
		st, err := g.Stats(ctx)
		return err == nil && st.Conns == 40
	})
	for _, p := range procs {
		st, err := p.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// The kernel hashes connections over the group; all 40 on one
		// process has probability 2^-39.
		if st.Conns == 0 {
			t.Fatalf("process %d serves no connection", p.PID)
		}
	}
	if st, err := g.Stats(ctx); err != nil || st.Conns != 40 || st.Procs != 2 {
		t.Fatalf("group stats = %+v, %v; want 40 conns over 2 procs", st, err)
	}

	g.Signal(syscall.SIGTERM)
	for i, c := range conns {
		_, _, err := wsutil.ReadServerData(c)
		var ce wsutil.ClosedError
		if !errors.As(err, &ce) || ce.Code != ws.StatusGoingAway {
			t.Fatalf("client %d read %v; want close 1001", i, err)
		}
	}
	if err := g.Wait(); err != nil {
		t.Fatalf("graceful exit: %v", err)
	}
	if _, err := net.Dial("tcp", g.Addr()); err == nil {
		t.Fatal("connect succeeded while no process listens")
	}

	const hold = 300 * time.Millisecond
	before := time.Now()
	if err := g.Respawn(ctx, hold); err != nil {
		t.Fatal(err)
	}
	for _, p := range g.Procs() {
		if p.Ready.Sub(before) < hold {
			t.Fatalf("process %d ready %v after respawn; want at least the %v hold", p.PID, p.Ready.Sub(before), hold)
		}
	}
	if err := g.Respawn(ctx, 0); !errors.Is(err, ErrProcsRunning) {
		t.Fatalf("Respawn while running = %v; want ErrProcsRunning", err)
	}
	c := mustDial(t, g.URL())
	g.Signal(syscall.SIGUSR1)
	if _, err := readFrame(c); err != io.EOF {
		t.Fatalf("after SIGUSR1 the client read %v; want EOF", err)
	}
	if err := g.Wait(); err != nil {
		t.Fatalf("abrupt exit: %v", err)
	}
}

// The group's control API reaches every process.
func TestGroupControl(t *testing.T) {
	g := startGroup(t, 2, target.Config{})
	ctx := context.Background()
	if err := g.Reject(ctx, 503, time.Second, time.Hour); err != nil {
		t.Fatal(err)
	}
	for range 6 {
		if r := dialWS(g.URL(), ""); r.status != 503 {
			t.Fatalf("dial during a group reject: %v", r.err)
		}
	}
	if err := g.SetBacklog(ctx, 0); err == nil {
		t.Fatal("SetBacklog(0) accepted")
	}
	st, err := g.Stats(ctx)
	if err != nil || st.UpgradesRejected != 6 {
		t.Fatalf("stats = %+v, %v; want 6 rejected", st, err)
	}
	if err := g.Shutdown(ctx, target.Abrupt); err != nil {
		t.Fatal(err)
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
}

// A child that dies before its ready line fails StartGroup.
func TestGroupChildFails(t *testing.T) {
	_, err := Start(context.Background(), Config{Spawn: testSpawner(t, "--fail")})
	if err == nil {
		t.Fatal("StartGroup succeeded with a failing child")
	}
}

// OnExit hears of a process that exits when the group did not stop it (a
// SIGKILL from outside), and not of one the group signalled.
func TestGroupOnExit(t *testing.T) {
	exits := make(chan int, 4)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	g, err := Start(ctx, Config{Spawn: testSpawner(t), Procs: 2,
		OnExit: func(p *Proc, err error) { exits <- p.PID }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	victim := g.Procs()[1]
	if err := syscall.Kill(victim.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case pid := <-exits:
		if pid != victim.PID {
			t.Fatalf("OnExit for %d; want the killed %d", pid, victim.PID)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no OnExit for a process killed from outside")
	}
	if err := g.SignalProc(0, syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	g.Procs()[0].Wait()
	g.Close()
	select {
	case pid := <-exits:
		t.Fatalf("OnExit for %d, which the group stopped", pid)
	case <-time.After(200 * time.Millisecond):
	}
}
