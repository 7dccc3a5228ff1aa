package loadgen

import (
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gobwas/ws"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/connerr"
	"github.com/stampede-dev/stampede/spec"
)

// A 503 with Retry-After waits at least the hint, unless the fleet ignores
// the header; then the policy decides alone. A close 1012 or 1013 with a
// delay in its reason is a hint as a Retry-After is; another close's
// hint, or any with NoRetryAfter, is not.
func TestNextWaitRetryAfter(t *testing.T) {
	pol := backoff.Policy{Kind: backoff.Fixed, Initial: 100 * time.Millisecond, Multiplier: 1}
	rejected := failure{class: connerr.HTTP503, status: 503, hint: 2 * time.Second}
	hinted := func(c connerr.Class) failure { return failure{class: c, hint: 2 * time.Second} }
	top := 2*time.Second + time.Duration(backoff.HintSpread*float64(2*time.Second))
	for _, c := range []struct {
		name     string
		ignore   bool
		f        failure
		min, max time.Duration
	}{
		// Hinted spreads the hint upwards, never below it.
		{"honoured", false, rejected, 2 * time.Second, top},
		// The fixed policy's 100 ms, exactly.
		{"ignored", true, rejected, 100 * time.Millisecond, 100 * time.Millisecond},
		// No hint: the policy either way.
		{"no hint", false, failure{class: connerr.Refused}, 100 * time.Millisecond, 100 * time.Millisecond},
		{"1013 honoured", false, hinted(connerr.Closed1013), 2 * time.Second, top},
		{"1012 honoured", false, hinted(connerr.Closed1012), 2 * time.Second, top},
		{"1013 ignored", true, hinted(connerr.Closed1013), 100 * time.Millisecond, 100 * time.Millisecond},
		{"1001 carries none", false, hinted(connerr.Closed1001), 100 * time.Millisecond, 100 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := Config{Client: spec.Client{Policy: pol, Seed: 7, NoRetryAfter: c.ignore}}
			for id := range uint32(50) {
				dec := nextWait(&cfg, id, 1, c.f, 0)
				d, ok := dec.Delay, dec.Stop == backoff.Continue
				if !ok || d < c.min || d > c.max {
					t.Fatalf("client %d: wait %v, %v; want %v..%v", id, d, ok, c.min, c.max)
				}
			}
		})
	}
}

// closeAllWith sends a close frame with code and reason to every
// connection, then closes it.
func (s *testServer) closeAllWith(code ws.StatusCode, reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		_ = ws.WriteFrame(c, ws.NewCloseFrame(ws.NewCloseFrameBody(code, reason)))
		c.Close()
		delete(s.conns, c)
	}
}

// TestCloseHint: clients closed with 1013 "retry after 1.5s" do not attempt
// again before 1.5 s (the server notes when each upgrade arrives); with
// NoRetryAfter they follow their policy.
func TestCloseHint(t *testing.T) {
	const n = 4
	const hint = 1500 * time.Millisecond
	for _, ignore := range []bool{false, true} {
		t.Run("NoRetryAfter="+strconv.FormatBool(ignore), func(t *testing.T) {
			var mu sync.Mutex
			second := map[uint32]time.Time{}
			srv := newTestServer(t, false, func(id uint32, k int) (int, http.Header) {
				if k == 2 {
					mu.Lock()
					second[id] = time.Now()
					mu.Unlock()
				}
				return 0, nil
			})
			var rs retries
			run := start(t, Config{Client: spec.Client{URL: srv.url, Clients: n, Policy: fast, Seed: 5, NoRetryAfter: ignore}, OnRetry: rs.add})
			waitFor(t, 10*time.Second, "all connected", func(s Stats) bool { return s.Connected == n }, run.f)
			srv.waitHeld(n)
			closed := time.Now()
			srv.closeAllWith(1013, connerr.CloseHintReason(hint))
			waitFor(t, 10*time.Second, "all back", func(s Stats) bool { return s.Connected == n && s.DisconnectCount() == n }, run.f)
			s := run.f.Stats()
			if s.Disconnects[connerr.Closed1013] != n {
				t.Fatalf("disconnects %v; want %d closed_1013", s.Disconnects, n)
			}
			for id := range uint32(n) {
				r := rs.of(id)
				if len(r) != 1 || r[0].Class != connerr.Closed1013 || r[0].Hint != hint {
					t.Fatalf("client %d: retries %+v; want one closed_1013 with hint %v", id, r, hint)
				}
				mu.Lock()
				at := second[id]
				mu.Unlock()
				if ignore {
					// The fixed 50 ms ± 50 % of the policy.
					if r[0].Delay > 75*time.Millisecond {
						t.Errorf("client %d: waited %v ignoring the hint; want the policy's", id, r[0].Delay)
					}
					continue
				}
				if r[0].Delay < hint {
					t.Errorf("client %d: waited %v; want at least the hint %v", id, r[0].Delay, hint)
				}
				if d := at.Sub(closed); d < hint {
					t.Errorf("client %d came back %v after the close; want at least %v", id, d, hint)
				}
			}
		})
	}
}
