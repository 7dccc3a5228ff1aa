// Command jsrecover measures how long the embedded JetStream store
// (store/jsstore) takes to come back after a stop with many messages
// written: the time from StartServer (Verify's check of every record, then
// nats-server's recovery of its block files) to the first answered Head
// and Since of a room.
//
//	go run ./scripts/jsrecover -n 10000000 -dir /tmp/jsr
//
// It writes n messages (and their dedupe markers) in the store's layout
// into rooms of -retention messages each (so every one is kept), with
// asynchronous publishes for speed, stops the server, starts it again on
// the same folder and prints the figures. -keep reuses a folder written
// before (no writing).
package main

import (
	"context"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/stampede-dev/stampede/store"
	"github.com/stampede-dev/stampede/store/jsstore"
)

func main() {
	n := flag.Int("n", 10_000_000, "messages `N` to write")
	retention := flag.Int("retention", 10_000, "messages `R` per room (rooms = N/R)")
	dir := flag.String("dir", "", "store `folder` (default: a temporary one, removed at the end)")
	keep := flag.Bool("keep", false, "reuse -dir as written before: measure the recovery only")
	flag.Parse()
	if err := run(*n, *retention, *dir, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "jsrecover:", err)
		os.Exit(1)
	}
}

func run(n, retention int, dir string, keep bool) error {
	if dir == "" {
		d, err := os.MkdirTemp("", "jsrecover-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	ctx := context.Background()
	rooms := max(1, n/retention)
	if !keep {
		srv, err := jsstore.StartServer(dir)
		if err != nil {
			return err
		}
		st, err := store.Open(ctx, srv.URL(), store.Options{Retention: retention})
		if err != nil {
			return err
		}
		st.Close() // creates the stream
		nc, err := nats.Connect(srv.URL())
		if err != nil {
			return err
		}
		js, _ := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(4096))
		t0 := time.Now()
		pfx := "stampede." + jsstore.DefaultStream
		for i := 0; i < n; i++ {
			room := hex.EncodeToString([]byte("room-" + strconv.Itoa(i%rooms)))
			seq := uint64(i/rooms + 1)
			id := "c" + strconv.Itoa(i%rooms) + "-" + strconv.FormatUint(seq, 10)
			m := nats.NewMsg(pfx + ".m." + room + "." + strconv.FormatUint(seq, 10))
			m.Header.Set("Stampede-Id", id)
			m.Data = []byte("a message body of about fifty bytes, as in a chat")
			if _, err := js.PublishMsgAsync(m); err != nil {
				return err
			}
			d := nats.NewMsg(pfx + ".d." + room + "." + hex.EncodeToString([]byte(id)))
			d.Data = strconv.AppendUint(nil, seq, 10)
			if _, err := js.PublishMsgAsync(d); err != nil {
				return err
			}
			if i%1000 == 999 {
				<-js.PublishAsyncComplete()
			}
			if i%1_000_000 == 999_999 {
				fmt.Printf("written %d messages in %.0fs\n", i+1, time.Since(t0).Seconds())
			}
		}
		<-js.PublishAsyncComplete()
		fmt.Printf("written %d messages (%d records with the dedupe markers) in %d rooms in %.1fs\n", n, 2*n, rooms, time.Since(t0).Seconds())
		nc.Close()
		if err := srv.Close(); err != nil {
			return err
		}
	}
	size := dirSize(dir)
	t0 := time.Now()
	rep, err := jsstore.Verify(dir)
	if err != nil {
		return err
	}
	tv := time.Since(t0)
	t1 := time.Now()
	srv, err := jsstore.StartServer(dir) // verifies again, then recovers
	if err != nil {
		return err
	}
	defer srv.Close()
	st, err := store.Open(ctx, srv.URL(), store.Options{Retention: retention})
	if err != nil {
		return err
	}
	defer st.Close()
	head, err := st.Head(ctx, "room-0")
	if err != nil {
		return err
	}
	msgs, _, _, err := st.Since(ctx, "room-0", head-min(head, 100), 100)
	if err != nil {
		return err
	}
	tr := time.Since(t1)
	fmt.Printf("store: %.2f GB on disk, %d blocks, %d records verified in %.1fs\n", float64(size)/1e9, rep.Blocks, rep.Records, tv.Seconds())
	fmt.Printf("recovery: server start (verify + nats-server recovery) to the first Head (%d) and Since (%d messages) of a room: %.1fs\n", head, len(msgs), tr.Seconds())
	return nil
}

func dirSize(dir string) int64 {
	var n int64
	filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			n += fi.Size()
		}
		return nil
	})
	return n
}
