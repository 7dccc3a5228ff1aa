package loadgen

import (
	"testing"
	"time"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/internal/rawsys"
	"github.com/stampede-dev/stampede/spec"
)

// TestStatsSyscalls: a fleet's Stats carry the process's system calls,
// and a known number of attempts made at least as many sockets, connects
// and closes (other tests of the process may add more); its upgrades, a
// write of the request each.
func TestStatsSyscalls(t *testing.T) {
	const n, retries = 10, 3
	before := rawsys.Counts()
	pol := backoff.Policy{Kind: backoff.Fixed, Initial: 10 * time.Millisecond, MaxAttempts: retries}
	run := start(t, Config{Client: spec.Client{URL: "ws://" + closedPort(t) + "/", Clients: n, Policy: pol}})
	s := waitFor(t, 10*time.Second, "all stopped", func(s Stats) bool { return s.StoppedCount() == n }, run.f)
	run.stop(t)
	for _, k := range []string{"socket", "connect", "close"} {
		if s.Syscalls[k] < before[k]+s.Attempts || s.Attempts != n*(1+retries) {
			t.Errorf("%s: %d counted, %d before, for %d attempts (want %d)", k, s.Syscalls[k], before[k], s.Attempts, n*(1+retries))
		}
	}

	srv := newTestServer(t, false, nil)
	before = rawsys.Counts()
	run = start(t, Config{Client: spec.Client{URL: srv.url, Clients: n, Policy: fast}})
	s = waitFor(t, 10*time.Second, "all connected", func(s Stats) bool { return s.Connected == n }, run.f)
	run.stop(t)
	if s.Syscalls["write"] < before["write"]+n {
		t.Errorf("write: %d counted, %d before, for %d upgrades", s.Syscalls["write"], before["write"], n)
	}
}
