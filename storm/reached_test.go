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

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/loadgen"
	"github.com/stampede-dev/stampede/results"
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
		Fleet:            loadgen.Config{URL: url, Clients: 10, Policy: pol, Seed: 7},
		Duration:         d,
		Out:              t.TempDir(),
		Exe:              stampedeExe,
		ProgressInterval: time.Second,
	}
}

// runUnreached runs cfg and checks that it ended with an UnreachableError
// whose reason has want, its folder written with a failing "fleet" check.
func runUnreached(t *testing.T, cfg storm.Config, want string) *results.Summary {
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
	if _, err := results.ReadSummary(filepath.Join(cfg.Out, results.SummaryFile)); err != nil {
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
