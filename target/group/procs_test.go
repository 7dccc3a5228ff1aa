package group

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/spec"
	"github.com/stampede-dev/stampede/target"
)

// The control API's /shutdown takes spread=, hint_after= and hint=.
func TestControlShutdownHint(t *testing.T) {
	s := startServer(t, target.Config{})
	waitReady(t, s)
	api := httptest.NewServer(ControlHandler(s))
	defer api.Close()
	var conns []net.Conn
	for range 4 {
		conns = append(conns, mustDial(t, s.URL()))
	}
	eventually(t, "4 conns", func() bool { return s.Stats().Conns == 4 })
	for _, tc := range []struct {
		query string
		want  int
	}{
		{"mode=abrupt&spread=1s", 400},
		{"mode=graceful&hint=-1s", 400},
		{"mode=graceful&spread=soon", 400},
		{"mode=graceful&spread=300ms&hint_after=500ms&hint=1s", 202},
	} {
		resp, err := http.Post(api.URL+"/shutdown?"+tc.query, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Fatalf("/shutdown?%s: %d; want %d", tc.query, resp.StatusCode, tc.want)
		}
	}
	first, last := checkHinted(t, readCloses(conns), 500*time.Millisecond, time.Second)
	if d := last.Sub(first); d < 150*time.Millisecond {
		t.Fatalf("closes came within %v; want them spread over 300ms", d)
	}
	<-s.Done()
}

// A run's group starts its first generation at full rate
// (FirstAtFullRate); a process it starts again ramps.
func TestGroupFirstAtFullRate(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cfg := target.Config{Server: spec.Server{AcceptRate: 100, AdmitRamp: 10 * time.Minute, AdmitFloor: 0.1, Backlog: 64}}
	g, err := Start(ctx, Config{Spawn: testSpawner(t), Procs: 1, Config: cfg, FirstAtFullRate: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	const n = 30
	accepted := func() uint64 {
		st, err := g.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return st.Accepted
	}
	// Ramped from 0.1/s, 30 accepts would take 19 s.
	dialTCP(t, g.Addr(), n, 5*time.Second)
	eventually(t, "the first generation accepts all at full rate", func() bool { return accepted() == n })
	if err := g.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	g.Wait()
	if err := g.Respawn(ctx, 0); err != nil {
		t.Fatal(err)
	}
	dialTCP(t, g.Addr(), n, 5*time.Second)
	time.Sleep(time.Second)
	if got := accepted(); got > n/3 {
		t.Fatalf("a restarted process accepted %d of %d in its first second; want it ramping from 0.1/s", got, n)
	}
}

// TestRunProcsCap: a server process count past MaxProcs is refused with
// the cap, not forked.
func TestRunProcsCap(t *testing.T) {
	if err := (RunConfig{Server: target.Config{Server: spec.Server{Procs: MaxProcs}}}).Validate(); err != nil {
		t.Fatalf("Procs %d: %v", MaxProcs, err)
	}
	err := RunConfig{Server: target.Config{Server: spec.Server{Procs: MaxProcs + 1}}}.Validate()
	var ce *spec.FieldError
	if !errors.As(err, &ce) || ce.Field != "Server.Procs" || !strings.Contains(ce.Reason, "cap of 256") {
		t.Fatalf("Procs %d: %v, want a Procs error naming the cap", MaxProcs+1, err)
	}
}

// A client rejected by one process of a group and coming back early is
// counted by whichever process its retry reaches: every early retry counts,
// not only the ones the kernel happens to hash to the rejecting process.
func TestGroupEarlyRetriesShared(t *testing.T) {
	g := startGroup(t, 2, target.Config{})
	ctx := context.Background()
	if err := g.Reject(ctx, 503, 5*time.Second, time.Hour); err != nil {
		t.Fatal(err)
	}
	const clients = 6
	for i := range clients {
		if r := dialWS(g.URL(), fmt.Sprint(i)); r.status != 503 {
			t.Fatalf("client %d: dial during a reject: status %d, %v", i, r.status, r.err)
		}
	}
	if err := g.Reject(ctx, 503, 0, 0); err != nil { // end the window
		t.Fatal(err)
	}
	const retries = 5
	for i := range clients {
		for range retries {
			mustDial(t, g.URL()) // no id: not counted
			r := dialWS(g.URL(), fmt.Sprint(i))
			if r.err != nil {
				t.Fatalf("client %d: early retry after the window: %v", i, r.err)
			}
			r.conn.Close()
		}
	}
	st, err := g.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.EarlyRetries != clients*retries {
		t.Fatalf("early retries %d; want every one of %d", st.EarlyRetries, clients*retries)
	}
}

// A message-protocol target of several processes needs a store they can
// share: a store URL they cannot share is refused before any process
// starts.
func TestRunStoreNeedsOneProc(t *testing.T) {
	err := RunConfig{Server: target.Config{Server: spec.Server{Procs: 2, Store: "x"}}}.Validate()
	var ce *spec.FieldError
	if !errors.As(err, &ce) {
		t.Fatalf("Validate = %v, want a *spec.FieldError", err)
	}
}
