package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/store"
)

// sharedCases run on a store that several processes share (store.Shared):
// each opens the store twice, as two target processes would.
var sharedCases = []struct {
	name string
	run  func(t *testing.T, open Opener)
}{
	{"feed announces another opener's appends", testFeed},
	{"dedupe is exact across openers", testSharedDedupe},
}

// runShared runs the shared cases when the backend's store is shared; it
// is part of Run.
func runShared(t *testing.T, fresh Fresh) {
	for _, c := range sharedCases {
		t.Run(c.name, func(t *testing.T) {
			open := fresh(t)
			s := open(t, store.Options{})
			shared := store.Shared(s)
			s.Close()
			if !shared {
				t.Skip("this store is not shared by several processes (store.Shared)")
			}
			c.run(t, open)
		})
	}
}

func testFeed(t *testing.T, open Opener) {
	a := open(t, store.Options{})
	defer a.Close()
	b := open(t, store.Options{})
	defer b.Close()
	ctx, cancel := context.WithCancel(Context(t))
	updates := make(chan store.Update, 1000)
	done := make(chan error, 1)
	go func() {
		done <- b.(store.Feed).Follow(ctx, func(u store.Update) { updates <- u })
	}()
	// Follow starts "from about now": append until b has seen one, then
	// check that every later append is announced, in order, readable.
	var seen uint64
	deadline := time.After(20 * time.Second)
	for i := 0; seen == 0; i++ {
		mustAppend(t, a, "feed", fmt.Sprint("warm", i), "x")
		select {
		case u := <-updates:
			if u.Room == "feed" {
				seen = u.Seq
			}
		case <-time.After(100 * time.Millisecond):
		case <-deadline:
			t.Fatal("no update from the feed within 20s")
		}
	}
	for len(updates) > 0 {
		<-updates
	}
	want, _ := mustAppend(t, a, "feed", "m-last", "hello")
	for {
		select {
		case u := <-updates:
			if u.Room == "" {
				continue // a recheck is always allowed
			}
			if u.Room != "feed" || u.Seq > want {
				t.Fatalf("update %+v, want room feed through %d", u, want)
			}
			if u.Seq < want {
				continue
			}
			msgs, _, _, err := b.Since(Context(t), "feed", want-1, 0)
			if err != nil || len(msgs) != 1 || msgs[0].ID != "m-last" {
				t.Fatalf("after the update, Since = %v, %v; want m-last", msgs, err)
			}
			cancel()
			if err := <-done; err != context.Canceled {
				t.Fatalf("Follow after cancel = %v, want context.Canceled", err)
			}
			return
		case <-deadline:
			t.Fatalf("no update for seq %d within 20s", want)
		}
	}
}

// testSharedDedupe resends every message through both openers at once:
// each ID is stored once, and the seqs are dense.
func testSharedDedupe(t *testing.T, open Opener) {
	a := open(t, store.Options{})
	defer a.Close()
	b := open(t, store.Options{})
	defer b.Close()
	const n = 100
	type res struct {
		id  int
		seq uint64
		dup bool
	}
	out := make(chan res, 4*n)
	var wg sync.WaitGroup
	for _, s := range []store.Store{a, b, a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range n {
				seq, dup, err := s.Append(Context(t), "dd", fmt.Sprint("id", i), []byte("x"))
				if err != nil {
					t.Errorf("append: %v", err)
					return
				}
				out <- res{i, seq, dup}
			}
		}()
	}
	wg.Wait()
	close(out)
	fresh := map[int]uint64{}
	seqOf := map[int]uint64{}
	for r := range out {
		if old, ok := seqOf[r.id]; ok && old != r.seq {
			t.Fatalf("id%d got seqs %d and %d", r.id, old, r.seq)
		}
		seqOf[r.id] = r.seq
		if !r.dup {
			if _, twice := fresh[r.id]; twice {
				t.Fatalf("id%d stored twice", r.id)
			}
			fresh[r.id] = r.seq
		}
	}
	if len(fresh) != n {
		t.Fatalf("%d ids stored, want %d", len(fresh), n)
	}
	head, err := a.Head(Context(t), "dd")
	if err != nil || head != n {
		t.Fatalf("head = %d, %v; want %d (dense seqs)", head, err, n)
	}
}
