package jsstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/stampede-dev/stampede/store"
)

// shadowServer starts an embedded server on dir whose syncs go to d.
func shadowServer(t *testing.T, dir string, d *shadowDisk) *Server {
	t.Helper()
	srv, err := startServer(dir, serverConfig{syncFile: d.syncFile})
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

// openURL opens a store on url, closed at the end of t.
func openURL(t *testing.T, url string) store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), url, store.Options{Retention: 1_000_000})
	if err != nil {
		t.Fatalf("Open %s: %v", url, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// checkACKed starts a server on dir and checks every ACKed message of
// acked (id -> seq, room "r") is stored with its seq; it returns the
// room's head.
func checkACKed(t *testing.T, dir string, round int, acked map[string]uint64) uint64 {
	t.Helper()
	srv, err := StartServer(dir)
	if err != nil {
		t.Fatalf("round %d: restart on the power cut's image: %v", round, err)
	}
	defer srv.Close()
	s := openURL(t, srv.URL())
	defer s.Close()
	msgs, _, _, err := s.Since(context.Background(), "r", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]uint64{}
	for i, m := range msgs {
		if m.Seq != uint64(i+1) {
			t.Fatalf("round %d: seq %d at position %d", round, m.Seq, i)
		}
		stored[m.ID] = m.Seq
	}
	for id, seq := range acked {
		if got, ok := stored[id]; !ok || got != seq {
			t.Fatalf("round %d: ACKed %s seq %d: after the power cut stored %v seq %d (%d messages kept)", round, id, seq, ok, got, len(msgs))
		}
	}
	return uint64(len(msgs))
}

// TestPowerCutLosesNoACKedMessage appends through two stores of a shared
// embedded server (sync=1, as a target group's processes do), cuts the
// power at a random sync or after 200 ACKs, and restarts a server on the
// folder as the cut leaves it: every ACKed message is there with its seq.
// Five rounds, each on the image the last one left. A sync service that
// answered without syncing fails this.
func TestPowerCutLosesNoACKedMessage(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(3, 17))
	acked := map[string]uint64{}
	lost := 0
	for round := range 5 {
		d := newShadowDisk()
		d.cutAt = 1 + rng.IntN(200)
		srv := shadowServer(t, dir, d)
		stores := []store.Store{openURL(t, srv.URL()+"?sync=1"), openURL(t, srv.URL()+"?sync=1")}
		var mu sync.Mutex
		var wg sync.WaitGroup
		acks := 0
		for g := range 4 {
			wg.Go(func() {
				s := stores[g%2]
				for n := 0; n < 400; n++ {
					id := fmt.Sprintf("%d-%d-%d", round, g, n)
					if n%7 == 0 && n > 0 {
						id = fmt.Sprintf("%d-%d-%d", round, g, n-1) // a resend
					}
					seq, _, err := s.Append(context.Background(), "r", id, []byte(strings.Repeat("j", 10+n%30)))
					if err != nil {
						return // the power is off
					}
					mu.Lock()
					if old, ok := acked[id]; ok && old != seq {
						t.Errorf("round %d: %s ACKed with seq %d, earlier %d", round, id, seq, old)
					}
					acked[id] = seq
					if acks++; acks >= 200 {
						d.Cut()
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		d.Cut()
		head, err := stores[0].Head(context.Background(), "r")
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range stores {
			s.Close()
		}
		srv.Close()
		dir = d.Image(t, dir)
		lost += int(head - checkACKed(t, dir, round, acked))
	}
	if lost == 0 {
		t.Fatal("no cut lost a stored message: the test would pass on a sync that does nothing")
	}
	t.Logf("5 power cuts lost %d stored, unsynced messages; %d ACKed messages all kept", lost, len(acked))
}

// TestDupAfterUnsyncedWriteIsSynced: a store without sync (standing for
// a writer that died before its sync) stores a message; a resend through
// a store with sync=1 is ACKed as a dup; then the power goes. The dup's
// ACK must have been synced: the message is there after the cut.
func TestDupAfterUnsyncedWriteIsSynced(t *testing.T) {
	dir := t.TempDir()
	d := newShadowDisk()
	srv := shadowServer(t, dir, d)
	first := openURL(t, srv.URL())
	if _, _, err := first.Append(context.Background(), "r", "x", []byte("body")); err != nil {
		t.Fatal(err)
	}
	if n := d.Syncs(); n != 0 {
		t.Fatalf("%d syncs after a write without sync=1", n)
	}
	resend := openURL(t, srv.URL()+"?sync=1")
	if seq, dup, err := resend.Append(context.Background(), "r", "x", []byte("body")); err != nil || seq != 1 || !dup {
		t.Fatalf("resend = %d %v %v, want 1, dup", seq, dup, err)
	}
	d.Cut()
	first.Close()
	resend.Close()
	srv.Close()
	checkACKed(t, d.Image(t, dir), 0, map[string]uint64{"x": 1})
}
