package jsstore

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/stampede-dev/stampede/store"
)

// written fills a store folder with 50 messages of one room and stops
// its server; it returns the folder and its one block file.
func written(t *testing.T) (string, string) {
	dir := t.TempDir()
	srv, err := StartServer(dir)
	if err != nil {
		t.Fatal(err)
	}
	s, err := store.Open(context.Background(), srv.URL()+"?sync=1", store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		if _, _, err := s.Append(context.Background(), "r", fmt.Sprint("m", i), []byte("a body long enough to be hit")); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	srv.Close()
	blks, _ := filepath.Glob(filepath.Join(dir, "jetstream", "*", "streams", DefaultStream, "msgs", "*.blk"))
	if len(blks) != 1 {
		t.Fatalf("block files %v, want one", blks)
	}
	rep, err := Verify(dir)
	if err != nil || rep.Records < 100 || rep.TornTail != "" {
		t.Fatalf("Verify of an intact store = %+v, %v; want >= 100 records (messages and markers), no torn tail", rep, err)
	}
	return dir, blks[0]
}

// TestVerifyRefusesDamage: one flipped byte in the middle of the block
// makes StartServer refuse the store (nats-server would truncate the block
// there, dropping the valid records after it), naming the block.
func TestVerifyRefusesDamage(t *testing.T) {
	dir, blk := written(t)
	b, err := os.ReadFile(blk)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(blk, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := StartServer(dir); !errors.Is(err, ErrDamaged) {
		t.Fatalf("StartServer on a damaged block = %v, want ErrDamaged", err)
	}
	after, _ := os.ReadFile(blk)
	if len(after) != len(b) {
		t.Fatalf("the refused block was changed: %d bytes, was %d", len(after), len(b))
	}
}

// TestVerifyAllowsTornTail: a last record cut short (a write that never
// completed, never ACKed) is allowed, and the store starts with every
// message before it.
func TestVerifyAllowsTornTail(t *testing.T) {
	dir, blk := written(t)
	fi, _ := os.Stat(blk)
	if err := os.Truncate(blk, fi.Size()-5); err != nil {
		t.Fatal(err)
	}
	rep, err := Verify(dir)
	if err != nil || rep.TornTail != blk {
		t.Fatalf("Verify with a torn tail = %+v, %v; want it allowed and named", rep, err)
	}
	srv, err := StartServer(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	s, err := store.Open(context.Background(), srv.URL(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	msgs, _, _, err := s.Since(context.Background(), "r", 0, 0)
	if err != nil || len(msgs) < 49 {
		t.Fatalf("after a torn tail: %d messages, %v; want the 49 or 50 written before it", len(msgs), err)
	}
}

// TestRetentionBoundsGrowth: a room written 3 times its retention keeps
// at most 1.125 times it in the stream, messages and markers alike.
func TestRetentionBoundsGrowth(t *testing.T) {
	srv, err := StartServer(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	s, err := store.Open(context.Background(), srv.URL(), store.Options{Retention: 40})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range 120 {
		if _, _, err := s.Append(context.Background(), "r", fmt.Sprint("m", i), []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	st, err := s.(*Store).js.Stream(context.Background(), DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if n := info.State.Msgs; n > 2*45 {
		t.Fatalf("%d records kept for 120 messages at retention 40; want at most %d", n, 2*45)
	}
}

// TestTrimKeepsTheLastOfARoom: Trim (the store's retention purge, which
// lab/jsrecover calls too) keeps the last keep messages of one room
// and as many markers, and leaves other rooms alone.
func TestTrimKeepsTheLastOfARoom(t *testing.T) {
	ctx := context.Background()
	srv, err := StartServer(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	s, err := store.Open(ctx, srv.URL(), store.Options{Retention: 1000})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range 30 {
		for _, room := range []string{"a", "b"} {
			if _, _, err := s.Append(ctx, room, fmt.Sprint(room, i), []byte("x")); err != nil {
				t.Fatal(err)
			}
		}
	}
	js := s.(*Store).js
	if err := Trim(ctx, js, DefaultStream, "a", 10); err != nil {
		t.Fatal(err)
	}
	msgs, _, gap, err := s.Since(ctx, "a", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 10 || msgs[0].Seq != 21 || msgs[9].Seq != 30 || msgs[0].ID != "a20" || !gap {
		t.Fatalf("room a after Trim(10): %d messages from seq %v, gap %v; want seqs 21..30, a gap", len(msgs), msgs, gap)
	}
	if msgs, _, gap, err := s.Since(ctx, "b", 0, 0); err != nil || len(msgs) != 30 || gap {
		t.Fatalf("room b after Trim of a: %d messages, gap %v, %v; want all 30", len(msgs), gap, err)
	}
	st, err := js.Stream(ctx, DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		room string
		want int
	}{{"a", 10}, {"b", 30}} {
		info, err := st.Info(ctx, jetstream.WithSubjectFilter("stampede."+DefaultStream+".d."+hex.EncodeToString([]byte(c.room))+".*"))
		if err != nil {
			t.Fatal(err)
		}
		if len(info.State.Subjects) != c.want {
			t.Fatalf("room %s: %d dedupe markers kept, want %d", c.room, len(info.State.Subjects), c.want)
		}
	}
	// A resend of a kept ID is still a dup; one trimmed away with its
	// marker is stored again (the store's retention contract).
	if seq, dup, err := s.Append(ctx, "a", "a25", []byte("x")); err != nil || !dup || seq != 26 {
		t.Fatalf("resend of kept a25 = %d %v %v, want 26 dup", seq, dup, err)
	}
}
