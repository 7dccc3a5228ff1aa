package loadgen

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/spec"
)

// A library preset sees the close code: graphql-ws reconnects at once
// after a 1000, stops on a 4400, and gives up at the first attempt that
// fails to open.
func TestPresetCloseCodes(t *testing.T) {
	const n = 40
	var refuse sync.Map // client IDs whose next upgrade gets a 503
	srv := newTestServer(t, false, func(id uint32, _ int) (int, http.Header) {
		if _, ok := refuse.Load(id); ok {
			return http.StatusServiceUnavailable, nil
		}
		return 0, nil
	})
	run := start(t, Config{Client: spec.Client{URL: srv.url, Clients: n, Policy: backoff.MustParse("graphql-ws"), Seed: 1, Reactors: 1}})
	waitFor(t, 20*time.Second, "all connected", func(s Stats) bool { return s.Connected == n }, run.f)
	srv.waitHeld(n)
	srv.closeAll(1000)
	// At once: well inside graphql-ws's shortest wait of 1.3 s.
	waitFor(t, time.Second, "all back after 1000", func(s Stats) bool { return s.Successes == 2*n && s.Connected == n }, run.f)
	srv.waitHeld(n)
	for id := range uint32(n / 2) {
		refuse.Store(id, true)
	}
	srv.closeAll(1006)
	waitFor(t, 10*time.Second, "half stopped after a refusal", func(s Stats) bool {
		return s.StoppedCount() == n/2 && s.Successes == 2*n+n/2 && s.Connected == n/2
	}, run.f)
	srv.waitHeld(n / 2)
	srv.closeAll(4400)
	s := waitFor(t, 10*time.Second, "all stopped after 4400", func(s Stats) bool { return s.StoppedCount() == n }, run.f)
	if s.Successes != 2*n+n/2 {
		t.Errorf("%d successes; a client reconnected after 4400 or after a refusal", s.Successes)
	}
}

// reconnecting-websocket keeps its count through a connection shorter than
// minUptime: the second drop's retry is its second, where a policy that
// resets on connect starts again at 1.
func TestPresetKeepsCountThroughShortConnection(t *testing.T) {
	for _, c := range []struct {
		policy string
		want   int
	}{
		{"reconnecting-websocket:minReconnectionDelay=20ms,maxReconnectionDelay=50ms,minUptime=1h", 2},
		{"reconnecting-websocket:minReconnectionDelay=20ms,maxReconnectionDelay=50ms,minUptime=0s", 1},
	} {
		t.Run(c.policy, func(t *testing.T) {
			const n = 20
			srv := newTestServer(t, false, nil)
			var mu sync.Mutex
			last := map[uint32]int{}
			run := start(t, Config{
				Client: spec.Client{URL: srv.url, Clients: n, Policy: backoff.MustParse(c.policy), Seed: 1, Reactors: 1},
				OnRetry: func(r Retry) {
					mu.Lock()
					last[r.Client] = r.Attempt
					mu.Unlock()
				},
			})
			for round := 1; round <= 2; round++ {
				waitFor(t, 20*time.Second, "all connected", func(s Stats) bool { return s.Successes == uint64(round*n) && s.Connected == n }, run.f)
				srv.waitHeld(n)
				srv.dropAll()
			}
			waitFor(t, 20*time.Second, "all back", func(s Stats) bool { return s.Successes == 3*n && s.Connected == n }, run.f)
			mu.Lock()
			defer mu.Unlock()
			for id, a := range last {
				if a != c.want {
					t.Fatalf("client %d: the second drop's retry was attempt %d, want %d", id, a, c.want)
				}
			}
		})
	}
}
