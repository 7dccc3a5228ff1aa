package storm_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gobwas/ws"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/loadgen"
	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/results/folder"
	"github.com/stampede-dev/stampede/results/summary"
	"github.com/stampede-dev/stampede/spec"
	"github.com/stampede-dev/stampede/storm"
)

// externalConfig is a small fleet against url (someone else's server).
func externalConfig(t *testing.T, url string, d time.Duration) storm.Config {
	t.Helper()
	pol, err := backoff.Parse(testPolicy)
	if err != nil {
		t.Fatal(err)
	}
	return storm.Config{
		Fleet:            loadgen.Config{Client: spec.Client{URL: url, Clients: 10, Policy: pol, Seed: 7}},
		Duration:         d,
		Out:              t.TempDir(),
		Exe:              stampedeExe,
		ProgressInterval: time.Second,
	}
}

// runUnreached runs cfg and checks that it ended with an UnreachableError
// whose reason has want, its folder written with a failing "fleet" check.
func runUnreached(t *testing.T, cfg storm.Config, want string) *summary.Summary {
	t.Helper()
	logs := &lockedBuffer{}
	cfg.Log = logs
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("storm log:\n%s", logs.String())
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Duration+30*time.Second)
	defer cancel()
	res, err := storm.Run(ctx, cfg)
	var ue *storm.UnreachableError
	if !errors.As(err, &ue) {
		t.Fatalf("storm.Run: %v, want an UnreachableError", err)
	}
	if !strings.Contains(ue.Error(), want) {
		t.Errorf("error %q does not say %q", ue.Error(), want)
	}
	if res == nil || res.Summary == nil {
		t.Fatal("no result with the error")
	}
	sum := res.Summary
	if sum.Pass || len(sum.Checks) != 1 || sum.Checks[0].Name != "fleet" || sum.Checks[0].Pass {
		t.Errorf("pass %v, checks %+v; want a failing fleet check", sum.Pass, sum.Checks)
	}
	if _, err := folder.ReadSummary(filepath.Join(cfg.Out, folder.SummaryFile)); err != nil {
		t.Errorf("the folder was not written: %v", err)
	}
	return sum
}

// A fleet against a port nobody listens on never connects: its clients
// retry refusals to the end, and the run fails for it.
func TestUnreachableRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	sum := runUnreached(t, externalConfig(t, "ws://"+addr+"/", 2*time.Second), "no client of 10 connected")
	if sum.Connect.Successes != 0 || sum.Connect.Failures["refused"] == 0 {
		t.Errorf("connect %+v; want refusals only", sum.Connect)
	}
}

// A server that answers every upgrade 404 stops every client on its first
// attempt: the run ends then, not at its planned end, and fails.
func TestAllStoppedEndsEarly(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(srv.Close)
	const planned = 60 * time.Second
	sum := runUnreached(t, externalConfig(t, "ws"+strings.TrimPrefix(srv.URL, "http")+"/", planned), "all 10 clients stopped on handshake_4xx")
	if sum.DurationS >= planned.Seconds() {
		t.Errorf("duration_s %.1f: the run waited out its %s after every client stopped", sum.DurationS, planned)
	}
	if st := sum.Stopped["handshake_4xx"]; st.Count != 10 {
		t.Errorf("stopped %+v; want 10 on handshake_4xx", sum.Stopped)
	}
}

// A fleet that connected, lost its server and ran out of attempts gave up:
// the run ends when the last client does, counts them apart as
// attempts_exhausted in the event's recovery, and fails its fleet check.
func TestAllGaveUp(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conns := make(chan net.Conn, 10)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if _, err := ws.Upgrade(c); err != nil {
				c.Close()
				continue
			}
			conns <- c
		}
	}()
	go func() { // all ten up, then the server dies for good
		var held []net.Conn
		for range 10 {
			held = append(held, <-conns)
		}
		time.Sleep(500 * time.Millisecond)
		ln.Close()
		for _, c := range held {
			c.Close()
		}
	}()
	cfg := externalConfig(t, "ws://"+ln.Addr().String()+"/", 60*time.Second)
	cfg.Fleet.Policy = backoff.MustParse("signalr:delays=10ms|20ms")
	sum := runUnreached(t, cfg, "all 10 clients gave up")
	if st := sum.Stopped[results.AttemptsExhausted]; st.Count != 10 || len(sum.Stopped) != 1 {
		t.Errorf("stopped %+v; want 10 attempts_exhausted", sum.Stopped)
	}
	if len(sum.Recovery) != 1 || sum.Recovery[0].AttemptsExhausted != 10 || sum.Recovery[0].StillRetrying != 0 {
		t.Errorf("recovery %+v; want 10 attempts exhausted, none still retrying", sum.Recovery)
	}
	if sum.DurationS >= 30 {
		t.Errorf("duration_s %.1f: the run waited after every client gave up", sum.DurationS)
	}
}
