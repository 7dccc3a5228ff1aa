package target

import (
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/stampede-dev/stampede/spec"
	"golang.org/x/sys/unix"
)

// maxTrackedClients bounds the Retry-After bookkeeping: past it, expired
// entries are swept, and if none are, new rejections are not tracked (early
// retries are then undercounted rather than memory unbounded).
const maxTrackedClients = 1 << 17

// retryTracker holds the Reject window and, per client key, the earliest
// time the client was told it may come back: in the process's own map, or
// in the retry ledger its Group shares (RetryLedgerEnv), so that an early
// retry is counted by whichever process of the group it reaches.
type retryTracker struct {
	mu         sync.Mutex
	status     int           // status of the Reject window, 0 = none
	retryAfter time.Duration // its Retry-After
	until      time.Time     // its end
	notBefore  map[string]time.Time
	ledger     *retryLedger // nil: notBefore holds the clients
}

// init prepares the tracker, mapping the group's ledger when the process
// was given one; without it (or when it cannot be mapped, which is said
// on stderr) early retries are counted per process.
func (t *retryTracker) init() {
	t.notBefore = make(map[string]time.Time)
	if path := os.Getenv(RetryLedgerEnv); path != "" {
		l, err := openLedger(path)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%v; early retries are counted per process\n", err)
			return
		}
		t.ledger = l
	}
}

// admit looks at a request from client key at now: the status and
// Retry-After to reject it with (status 0: not rejected by a window), and
// whether the client came back before the Retry-After it was given.
func (t *retryTracker) admit(key string, now time.Time) (status int, retryAfter time.Duration, early bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ledger != nil {
		early = t.ledger.early(key, now)
	} else if nb, ok := t.notBefore[key]; ok {
		if now.Before(nb) {
			early = true
		} else {
			delete(t.notBefore, key)
		}
	}
	if now.Before(t.until) {
		status, retryAfter = t.status, t.retryAfter
	}
	return status, retryAfter, early
}

// note records that client key was told at now not to return before nb.
func (t *retryTracker) note(key string, nb, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ledger != nil {
		t.ledger.note(key, nb, now)
		return
	}
	if _, ok := t.notBefore[key]; !ok && len(t.notBefore) >= maxTrackedClients {
		for k, v := range t.notBefore {
			if !now.Before(v) {
				delete(t.notBefore, k)
			}
		}
		if len(t.notBefore) >= maxTrackedClients {
			return
		}
	}
	t.notBefore[key] = nb
}

// Reject answers every upgrade for d from now with status (400-599) and a
// Retry-After of retryAfter (sent in whole seconds, rounded up), then
// admits again. Clients keyed by remote IP and X-Stampede-Client that come
// back before their Retry-After are counted in Stats.EarlyRetries. Reject
// with d = 0 ends a window in progress.
func (s *Server) Reject(status int, retryAfter, d time.Duration) error {
	switch {
	case status < 400 || status > 599:
		return spec.Errorf("reject status", "want 400-599")
	case retryAfter < 0 || d < 0:
		return spec.Errorf("reject", "durations must not be negative")
	}
	select {
	case <-s.stopCh:
		return ErrServerClosed
	default:
	}
	now := s.clock.Now()
	s.retries.mu.Lock()
	s.retries.status, s.retries.retryAfter, s.retries.until = status, retryAfter, now.Add(d)
	s.retries.mu.Unlock()
	return nil
}

// peerGone reports whether the client already closed its side of tcp: its
// FIN is queued behind the request, so it gave up waiting (a handshake
// timeout while the request sat in a full accept queue) and will never
// read a rejection. Such a rejection must not bind its next attempt.
func peerGone(tcp *net.TCPConn) bool {
	raw, err := tcp.SyscallConn()
	if err != nil {
		return false
	}
	gone := false
	raw.Read(func(fd uintptr) bool {
		var b [1]byte
		n, _, err := unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		gone = n == 0 && err == nil
		return true
	})
	return gone
}
