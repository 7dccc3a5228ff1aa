package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
)

// TestPowerCutLosesNoACKedMessage appends from four goroutines to a store
// whose log is on a powerCutDisk, cuts the power at a random sync (or
// after 300 ACKs, should no sync come), and reopens the folder from the
// real file system: every ACKed message must be there with its seq. 12
// rounds on one folder. A store that ACKs before its fsync returns fails
// this, where a SIGKILL test cannot tell (the page cache outlives the
// process).
func TestPowerCutLosesNoACKedMessage(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(5, 9))
	acked := map[string]uint64{}
	lost := 0
	const rounds = 12
	for round := range rounds {
		d := newPowerCutDisk()
		d.cutAt = 2 + rng.IntN(40) // sync 1 is the open's
		s, err := openFile(dir, Options{}, d.openLog)
		if err != nil {
			t.Fatalf("round %d: open: %v", round, err)
		}
		var mu sync.Mutex
		var wg sync.WaitGroup
		acks := 0
		for g := range 4 {
			wg.Go(func() {
				room := "r" + fmt.Sprint(g%3)
				for n := 0; n < 3000; {
					k := 1 + n%5
					entries := make([]Entry, k)
					for i := range entries {
						entries[i] = Entry{ID: fmt.Sprintf("%d-%d-%d", round, g, n+i), Body: []byte(strings.Repeat("p", 5+n%40))}
					}
					if n%9 == 0 && n > 0 {
						entries[0].ID = fmt.Sprintf("%d-%d-%d", round, g, n-1) // a resend
					}
					res, err := s.AppendBatch(context.Background(), room, entries)
					if err != nil {
						return // the power is off
					}
					mu.Lock()
					for i, r := range res {
						key := room + "\x00" + entries[i].ID
						if old, ok := acked[key]; ok && old != r.Seq {
							t.Errorf("round %d: %s ACKed with seq %d, earlier %d", round, entries[i].ID, r.Seq, old)
						}
						acked[key] = r.Seq
					}
					if acks += len(res); acks >= 300 {
						d.Cut()
					}
					mu.Unlock()
					n += k
				}
			})
		}
		wg.Wait()
		d.Cut()
		s.Close()
		lost += d.Lost()
		checkStore(t, dir, round, acked)
	}
	if lost == 0 {
		t.Fatal("no cut dropped a write: the test would pass on a store that never syncs")
	}
	t.Logf("%d power cuts dropped %d bytes of unsynced writes; %d ACKed messages all kept", rounds, lost, len(acked))
}

// TestDupAfterKillIsSynced: a process writes a message and is killed
// before its fsync (not ACKed; the write is in the page cache), the next
// process answers the client's resend as a dup with that seq, and then
// the power goes: the dup's ACK must have been durable too.
func TestDupAfterKillIsSynced(t *testing.T) {
	dir := t.TempDir()
	d := newPowerCutDisk()
	s, err := openFile(dir, Options{}, d.openLog)
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, s, "r0", "a", "first")
	d.failAt = d.Syncs() + 1
	if _, _, err := s.Append(context.Background(), "r0", "b", []byte("second")); err == nil {
		t.Fatal("Append ACKed although its fsync failed")
	}
	d.kill()
	s.Close()

	s2, err := openFile(dir, Options{}, d.openLog)
	if err != nil {
		t.Fatal(err)
	}
	if seq, dup := mustAppend(t, s2, "r0", "b", "second"); seq != 2 || !dup {
		t.Fatalf("resend after the kill = seq %d dup %v, want the cached write's 2, dup", seq, dup)
	}
	d.Cut()
	s2.Close()

	checkStore(t, dir, 0, map[string]uint64{"r0\x00a": 1, "r0\x00b": 2})
}
