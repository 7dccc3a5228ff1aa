// Package storetest is the conformance suite every store backend passes
// (docs/protocol.md, "Stores"): dense seqs per room, dedupe by ID,
// replay with limit and through, retention gaps, reopen, concurrency and
// no-dedupe. Each backend's tests call Run with an opener of a fresh
// store; the embedded store's are in package store, Redis's in redisstore,
// PostgreSQL's in pgstore. The service helpers (services.go) reach the
// real Redis and PostgreSQL on 127.0.0.1.
package storetest

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/store"
)

// Opener opens the same store (same directory, key prefix or table) each
// time it is called, with opt, failing t if it cannot.
type Opener func(t *testing.T, opt store.Options) store.Store

// Fresh returns an Opener of a new, empty store of one backend: its own
// directory, key prefix or table, removed when t ends. It may skip t when
// the backend's server is unreachable (RequireService).
type Fresh func(t *testing.T) Opener

// Run runs every conformance case as a subtest of t, each on a store of
// its own from fresh.
func Run(t *testing.T, fresh Fresh) {
	for _, c := range conformanceCases {
		t.Run(c.name, func(t *testing.T) {
			c.run(t, fresh(t))
		})
	}
	runShared(t, fresh)
}

var conformanceCases = []struct {
	name string
	run  func(t *testing.T, open Opener)
}{
	{"append assigns dense seqs per room", testAppendSeqs},
	{"dedupe returns the original seq", testDedupe},
	{"since replays in order with limit and through", testSince},
	{"retention reports a gap", testRetentionGap},
	{"reopen keeps messages, seqs and dedupe", testReopen},
	{"concurrent appends to one room get unique consecutive seqs", testConcurrent},
	{"no-dedupe stores a repeated id again", testNoDedupe},
}

// Context returns a context that ends after 30 s or when t ends, for a
// test's store calls.
func Context(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func mustAppend(t *testing.T, s store.Store, room, id, body string) (uint64, bool) {
	t.Helper()
	seq, dup, err := s.Append(Context(t), room, id, []byte(body))
	if err != nil {
		t.Fatalf("Append(%s, %s): %v", room, id, err)
	}
	return seq, dup
}

func testAppendSeqs(t *testing.T, open Opener) {
	s := open(t, store.Options{})
	defer s.Close()
	ctx := Context(t)
	for i, want := range []struct {
		room string
		seq  uint64
	}{{"a", 1}, {"a", 2}, {"b", 1}, {"a", 3}, {"b", 2}} {
		seq, dup := mustAppend(t, s, want.room, fmt.Sprint("m", i), "x")
		if seq != want.seq || dup {
			t.Fatalf("append %d to %s = seq %d dup %v, want %d false", i, want.room, seq, dup, want.seq)
		}
	}
	if h, err := s.Head(ctx, "a"); err != nil || h != 3 {
		t.Fatalf("Head(a) = %d, %v; want 3", h, err)
	}
	if h, err := s.Head(ctx, "none"); err != nil || h != 0 {
		t.Fatalf("Head(none) = %d, %v; want 0", h, err)
	}
	res, err := s.AppendBatch(ctx, "b", []store.Entry{{ID: "x1", Body: []byte("1")}, {ID: "x2", Body: []byte("2")}, {ID: "x1", Body: []byte("again")}})
	if err != nil {
		t.Fatal(err)
	}
	want := []store.Result{{Seq: 3, Dup: false}, {Seq: 4, Dup: false}, {Seq: 3, Dup: true}}
	for i := range want {
		if res[i] != want[i] {
			t.Fatalf("AppendBatch results = %v, want %v", res, want)
		}
	}
}

func testDedupe(t *testing.T, open Opener) {
	s := open(t, store.Options{})
	defer s.Close()
	mustAppend(t, s, "r", "first", "1")
	seq, _ := mustAppend(t, s, "r", "dup-me", "2")
	mustAppend(t, s, "r", "third", "3")
	got, dup := mustAppend(t, s, "r", "dup-me", "2 again")
	if got != seq || !dup {
		t.Fatalf("resend = seq %d dup %v, want %d true", got, dup, seq)
	}
	// The same ID in another room is another message.
	if got, dup := mustAppend(t, s, "other", "dup-me", "x"); got != 1 || dup {
		t.Fatalf("same id in another room = %d %v, want 1 false", got, dup)
	}
	msgs, through, gap, err := s.Since(Context(t), "r", 0, 0)
	if err != nil || len(msgs) != 3 || through != 3 || gap {
		t.Fatalf("Since = %d msgs through %d gap %v err %v, want 3, 3, false", len(msgs), through, gap, err)
	}
	if string(msgs[1].Body) != "2" {
		t.Fatalf("stored body %q, want the first copy's %q", msgs[1].Body, "2")
	}
}

func testSince(t *testing.T, open Opener) {
	s := open(t, store.Options{})
	defer s.Close()
	ctx := Context(t)
	for i := 1; i <= 10; i++ {
		mustAppend(t, s, "r", fmt.Sprint("id", i), fmt.Sprint("body", i))
	}
	cases := []struct {
		after       uint64
		limit       int
		first, n    int
		wantThrough uint64
	}{
		{0, 0, 1, 10, 10}, // everything
		{4, 0, 5, 6, 10},  // after 4
		{4, 3, 5, 3, 7},   // limit cuts: through is the last returned
		{7, 3, 8, 3, 10},  // exactly the rest
		{10, 0, 0, 0, 10}, // caught up
		{99, 5, 0, 0, 10}, // ahead of the room
	}
	for _, c := range cases {
		msgs, through, gap, err := s.Since(ctx, "r", c.after, c.limit)
		if err != nil || gap || len(msgs) != c.n || through != c.wantThrough {
			t.Fatalf("Since(%d, %d) = %d msgs through %d gap %v err %v; want %d through %d",
				c.after, c.limit, len(msgs), through, gap, err, c.n, c.wantThrough)
		}
		for i, m := range msgs {
			seq := c.first + i
			if m.Seq != uint64(seq) || m.ID != fmt.Sprint("id", seq) || string(m.Body) != fmt.Sprint("body", seq) {
				t.Fatalf("Since(%d)[%d] = %+v, want seq %d", c.after, i, m, seq)
			}
		}
	}
	if msgs, through, gap, err := s.Since(ctx, "empty", 0, 10); err != nil || len(msgs) != 0 || through != 0 || gap {
		t.Fatalf("Since on an empty room = %v %d %v %v", msgs, through, gap, err)
	}
}

func testRetentionGap(t *testing.T, open Opener) {
	// Redis trims with MAXLEN ~ (whole stream nodes of 100 entries), so
	// write enough that every backend must have dropped something.
	const retention, total = 5, 400
	s := open(t, store.Options{Retention: retention})
	defer s.Close()
	ctx := Context(t)
	entries := make([]store.Entry, total)
	for i := range entries {
		entries[i] = store.Entry{ID: fmt.Sprint("id", i+1), Body: []byte("b")}
	}
	if _, err := s.AppendBatch(ctx, "r", entries[:total/2]); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendBatch(ctx, "r", entries[total/2:]); err != nil {
		t.Fatal(err)
	}
	msgs, through, gap, err := s.Since(ctx, "r", 0, 0)
	if err != nil || !gap || through != total {
		t.Fatalf("Since(0) = gap %v through %d err %v, want a gap through %d", gap, through, err, total)
	}
	if len(msgs) < retention || msgs[len(msgs)-1].Seq != total || msgs[0].Seq <= 1 {
		t.Fatalf("kept seqs %d..%d (%d), want at least the last %d ending at %d", msgs[0].Seq, msgs[len(msgs)-1].Seq, len(msgs), retention, total)
	}
	for i := 1; i < len(msgs); i++ {
		if msgs[i].Seq != msgs[i-1].Seq+1 {
			t.Fatalf("kept seqs not consecutive at %d: %d after %d", i, msgs[i].Seq, msgs[i-1].Seq)
		}
	}
	// Inside the retained window there is no gap.
	if _, _, gap, err := s.Since(ctx, "r", total-2, 0); gap || err != nil {
		t.Fatalf("Since(total-2) gap %v err %v, want none", gap, err)
	}
	// Just before the oldest kept message: no gap either.
	if _, _, gap, _ := s.Since(ctx, "r", msgs[0].Seq-1, 0); gap {
		t.Fatalf("Since(oldest-1) reports a gap")
	}
	if _, _, gap, _ := s.Since(ctx, "r", msgs[0].Seq-2, 0); !gap {
		t.Fatalf("Since(oldest-2) reports no gap")
	}
}

func testReopen(t *testing.T, open Opener) {
	s := open(t, store.Options{})
	for i := 1; i <= 5; i++ {
		mustAppend(t, s, "r", fmt.Sprint("id", i), fmt.Sprint("b", i))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Append(Context(t), "r", "late", nil); err == nil {
		t.Fatalf("Append after Close succeeded")
	}
	s = open(t, store.Options{})
	defer s.Close()
	if seq, dup := mustAppend(t, s, "r", "id3", "again"); seq != 3 || !dup {
		t.Fatalf("resend after reopen = %d %v, want 3 true", seq, dup)
	}
	if seq, dup := mustAppend(t, s, "r", "id6", "b6"); seq != 6 || dup {
		t.Fatalf("append after reopen = %d %v, want 6 false", seq, dup)
	}
	msgs, through, _, err := s.Since(Context(t), "r", 0, 0)
	if err != nil || len(msgs) != 6 || through != 6 || string(msgs[4].Body) != "b5" {
		t.Fatalf("Since after reopen = %d msgs through %d err %v", len(msgs), through, err)
	}
}

func testConcurrent(t *testing.T, open Opener) {
	s := open(t, store.Options{})
	defer s.Close()
	const writers, each = 8, 25
	ctx := Context(t)
	var mu sync.Mutex
	var seqs []uint64
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				seq, dup, err := s.Append(ctx, "room", fmt.Sprintf("w%d-%d", w, i), []byte("x"))
				if err != nil || dup {
					errs <- fmt.Errorf("append: %v dup %v", err, dup)
					return
				}
				mu.Lock()
				seqs = append(seqs, seq)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	sort.Slice(seqs, func(i, j int) bool { return seqs[i] < seqs[j] })
	for i, seq := range seqs {
		if seq != uint64(i+1) {
			t.Fatalf("seqs not unique and consecutive: position %d has %d", i, seq)
		}
	}
	msgs, through, _, err := s.Since(ctx, "room", 0, 0)
	if err != nil || len(msgs) != writers*each || through != writers*each {
		t.Fatalf("Since = %d msgs through %d err %v", len(msgs), through, err)
	}
	// Concurrent resends of one ID: exactly one wins.
	var wins sync.Map
	var wg2 sync.WaitGroup
	for range 6 {
		wg2.Add(1)
		go func() {
			defer wg2.Done()
			seq, _, err := s.Append(ctx, "room", "contended", []byte("c"))
			if err == nil {
				wins.Store(seq, true)
			}
		}()
	}
	wg2.Wait()
	n := 0
	wins.Range(func(any, any) bool { n++; return true })
	if n != 1 {
		t.Fatalf("concurrent appends of one id got %d different seqs, want 1", n)
	}
}

func testNoDedupe(t *testing.T, open Opener) {
	s := open(t, store.Options{NoDedupe: true})
	defer s.Close()
	a, _ := mustAppend(t, s, "r", "same", "1")
	b, dup := mustAppend(t, s, "r", "same", "2")
	if a != 1 || b != 2 || dup {
		t.Fatalf("no-dedupe appends = %d, %d dup %v; want 1, 2, false", a, b, dup)
	}
	msgs, _, _, err := s.Since(Context(t), "r", 0, 0)
	if err != nil || len(msgs) != 2 || msgs[0].ID != "same" || msgs[1].ID != "same" {
		t.Fatalf("Since = %+v %v", msgs, err)
	}
}
