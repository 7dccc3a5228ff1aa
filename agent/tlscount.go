package agent

import (
	"context"
	"sync"
	"time"

	"github.com/stampede-dev/stampede/tlsconf"
)

// tlsCounter totals a wss:// target group's TLS handshakes over every
// process it ever had: each process's counts at the last reading that saw
// it, so a process restarted meanwhile still counts (the handshakes of
// its last second before it stopped may be missed).
type tlsCounter struct {
	mu   sync.Mutex
	seen map[int]tlsconf.Stats
}

// readTimeout bounds one reading of the processes' counters.
const readTimeout = 2 * time.Second

// total reads every running process's counters with read and returns
// the sum over every process seen; nil when none counts handshakes (a
// ws:// target).
func (t *tlsCounter) total(ctx context.Context, read func(context.Context) (map[int]*tlsconf.Stats, error)) *tlsconf.Stats {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), readTimeout)
	defer cancel()
	byPID, _ := read(ctx) // a process restarting meanwhile is left out of this reading
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.seen == nil {
		t.seen = map[int]tlsconf.Stats{}
	}
	for pid, st := range byPID {
		if st != nil {
			t.seen[pid] = *st
		}
	}
	if len(t.seen) == 0 {
		return nil
	}
	var sum tlsconf.Stats
	for _, st := range t.seen {
		sum = sum.Add(st)
	}
	return &sum
}
