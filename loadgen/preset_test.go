package loadgen

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/spec"
)

// A library preset sees the close code: graphql-ws stops on 4400, and
// reconnects at once, uncounted, after a 1000: the server refuses that
// reconnect, and the retry after it is still the first.
func TestPresetCloseCodes(t *testing.T) {
	const n = 40
	srv := newTestServer(t, false, func(_ uint32, k int) (int, http.Header) {
		if k == 2 {
			return http.StatusServiceUnavailable, nil
		}
		return 0, nil
	})
	var mu sync.Mutex
	attempts := map[int]int{}
	run := start(t, Config{
		Client: spec.Client{URL: srv.url, Clients: n, Policy: backoff.MustParse("graphql-ws"), Seed: 1, Reactors: 1},
		OnRetry: func(r Retry) {
			mu.Lock()
			attempts[r.Attempt]++
			mu.Unlock()
		},
	})
	waitFor(t, 20*time.Second, "all connected", func(s Stats) bool { return s.Connected == n }, run.f)
	srv.waitHeld(n)
	srv.closeAll(1000)
	// At once, refused, then graphql-ws's first wait: 1.3 s to 4 s.
	waitFor(t, 10*time.Second, "all back after 1000", func(s Stats) bool { return s.Successes == 2*n && s.Connected == n }, run.f)
	srv.waitHeld(n)
	srv.closeAll(4400)
	s := waitFor(t, 10*time.Second, "all stopped after 4400", func(s Stats) bool { return s.StoppedCount() == n }, run.f)
	if s.Successes != 2*n {
		t.Errorf("%d successes; a client reconnected after 4400", s.Successes)
	}
	mu.Lock()
	defer mu.Unlock()
	if attempts[1] != 2*n || len(attempts) != 1 {
		t.Errorf("retries by attempt %v; want %d first retries (the 1000 close's, uncounted, and the 503's), no other", attempts, 2*n)
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
