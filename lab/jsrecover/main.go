// Command jsrecover measures how long the embedded JetStream store
// (store/jsstore) takes to come back after a stop with many messages
// written, and what it keeps on disk: the time from StartServer (Verify's
// check of every record, then nats-server's recovery of its block files)
// to the first answered Head and Since of a room.
//
//	go -C lab run ./jsrecover -n 10000000 -rooms 100 -retention 10000 -dir DIR
//	go -C lab run ./jsrecover -n 2000000 -dir DIR          (keep everything)
//	go -C lab run ./jsrecover -n 10000000 -rooms 100 -kill-after 3000000 -dir DIR
//
// It writes n messages (and their dedupe markers) in the store's layout,
// with the headers the store's appends send (without its reads first),
// round robin over the rooms, with asynchronous publishes from -writers
// connections (each its own rooms). With -rooms 0 the rooms are n/retention,
// so every message is kept. With fewer rooms the messages are written
// through retention as a long-running deployment does: every retention/8
// messages of a room past retention, once they are acknowledged, the writer
// purges the room with jsstore.Trim, the store's own purge (the store calls
// it from Append at the same points), so rooms × retention bounds what is
// kept (up to 1.125 × that). It prints the rate and the bytes and blocks on
// disk every million, stops the server, starts it again on the same folder
// and prints the figures. -cold C writes C rooms only -cold-msgs messages
// each, first, then never again: their kept messages stay in the oldest
// blocks among purged ones (what nats-server must compact). -append writes
// through the store's own Append instead (slower; the same store on disk).
//
// -kill-after K writes in a child process that holds the embedded server
// and SIGKILLs it once K messages are acknowledged (acknowledged here as by
// the store: stored, then fsynced by the owner's sync service); then it
// recovers and checks that every acknowledged message of -check rooms that
// retention keeps is there, in order, with its ID. -keep reuses a folder
// written before (no writing).
package main

import (
	"bufio"
	"context"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/stampede-dev/stampede/store"
	"github.com/stampede-dev/stampede/store/jsstore"
)

type config struct {
	n, retention, rooms int
	writers, window     int
	dir                 string
	keep                bool
	killAfter           int
	cold, coldMsgs      int
	append              bool
	check               int
	child               bool
}

func main() {
	var c config
	flag.IntVar(&c.n, "n", 10_000_000, "messages `N` to write")
	flag.IntVar(&c.retention, "retention", 10_000, "messages `R` a room keeps (the store's Retention)")
	flag.IntVar(&c.rooms, "rooms", 0, "rooms to write round robin; 0: N/R, so every message is kept")
	flag.IntVar(&c.writers, "writers", 4, "connections writing at once, each its own rooms")
	flag.IntVar(&c.window, "window", 4096, "asynchronous publishes in flight per writer")
	flag.StringVar(&c.dir, "dir", "", "store `folder` (default: a temporary one, removed at the end)")
	flag.BoolVar(&c.keep, "keep", false, "reuse -dir as written before: measure the recovery only")
	flag.IntVar(&c.killAfter, "kill-after", 0, "write in a child process and SIGKILL it after `K` acknowledged messages, then recover and check")
	flag.IntVar(&c.check, "check", 10, "rooms whose acknowledged messages -kill-after checks after the recovery")
	flag.IntVar(&c.cold, "cold", 0, "rooms (the first `C`) that get only -cold-msgs messages each, written first, then never again: their kept messages stay in old blocks among purged ones")
	flag.IntVar(&c.coldMsgs, "cold-msgs", 0, "messages of each -cold room (default: retention)")
	flag.BoolVar(&c.append, "append", false, "write through the store's own Append (a goroutine per room, -writers stores; sync=1): slow, to compare")
	flag.BoolVar(&c.child, "child", false, "internal: the writing child of -kill-after")
	flag.Parse()
	if c.rooms <= 0 {
		c.rooms = max(1, c.n/c.retention)
	}
	c.writers = max(1, min(c.writers, c.rooms))
	if c.append && c.killAfter > 0 {
		fmt.Fprintln(os.Stderr, "jsrecover: -append does not report acknowledgements: not with -kill-after")
		os.Exit(2)
	}
	if c.coldMsgs <= 0 {
		c.coldMsgs = c.retention
	}
	if c.cold < 0 || c.cold >= c.rooms || c.cold*c.coldMsgs > c.n {
		fmt.Fprintln(os.Stderr, "jsrecover: -cold: want fewer rooms than -rooms, and -cold × -cold-msgs at most -n")
		os.Exit(2)
	}
	var err error
	if c.child {
		err = child(c)
	} else {
		err = run(c)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "jsrecover:", err)
		os.Exit(1)
	}
}

func roomName(r int) string { return "room-" + strconv.Itoa(r) }

func msgID(r int, seq uint64) string {
	return "c" + strconv.Itoa(r) + "-" + strconv.FormatUint(seq, 10)
}

// perRoom is how many of the n messages room r gets (round robin): a
// cold room -cold-msgs, the others an even share of the rest.
func perRoom(c config, r int) uint64 {
	if r < c.cold {
		return uint64(c.coldMsgs)
	}
	hot, rest := c.rooms-c.cold, c.n-c.cold*c.coldMsgs
	k := rest / hot
	if r-c.cold < rest%hot {
		k++
	}
	return uint64(k)
}

func run(c config) error {
	if c.dir == "" {
		d, err := os.MkdirTemp("", "jsrecover-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		c.dir = d
	}
	ctx := context.Background()
	var acked []uint64 // per room, the last seq acknowledged before the kill
	switch {
	case c.keep:
	case c.killAfter > 0:
		var err error
		if acked, err = writeAndKill(c); err != nil {
			return err
		}
	default:
		srv, err := jsstore.StartServer(c.dir)
		if err != nil {
			return err
		}
		if err := write(c, srv.URL(), nil); err != nil {
			srv.Close()
			return err
		}
		if err := srv.Close(); err != nil {
			return err
		}
	}
	size, blocks := dirSize(c.dir)
	t0 := time.Now()
	rep, err := jsstore.Verify(c.dir)
	if err != nil {
		return err
	}
	tv := time.Since(t0)
	t1 := time.Now()
	srv, err := jsstore.StartServer(c.dir) // verifies again, then recovers
	if err != nil {
		return err
	}
	defer srv.Close()
	st, err := store.Open(ctx, srv.URL(), store.Options{Retention: c.retention})
	if err != nil {
		return err
	}
	defer st.Close()
	head, err := st.Head(ctx, roomName(0))
	if err != nil {
		return err
	}
	msgs, _, _, err := st.Since(ctx, roomName(0), head-min(head, 100), 100)
	if err != nil {
		return err
	}
	tr := time.Since(t1)
	fmt.Printf("store: %.3f GB on disk, %d block files, %d records verified (%d blocks, %.3f GB read) in %.1fs; torn tail: %q\n",
		float64(size)/1e9, blocks, rep.Records, rep.Blocks, float64(rep.Bytes)/1e9, tv.Seconds(), rep.TornTail)
	fmt.Printf("recovery: server start (verify + nats-server recovery) to the first Head (%d) and Since (%d messages) of a room: %.1fs\n", head, len(msgs), tr.Seconds())
	if acked != nil {
		return checkAcked(ctx, c, st, acked)
	}
	return nil
}

// write publishes the n messages and their markers to the server at url,
// trimming as the store does; progress, if set, is called at each point
// where a writer's messages are acknowledged (synced): rooms r of that
// writer hold every seq through seq.
func write(c config, url string, progress func(w int, seq uint64)) error {
	ctx := context.Background()
	st, err := store.Open(ctx, url, store.Options{Retention: c.retention})
	if err != nil {
		return err
	}
	st.Close() // creates the stream
	var written atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, c.writers)
	t0 := time.Now()
	done := make(chan struct{})
	go func() { // progress: rate and disk every million
		next := int64(1_000_000)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			if w := written.Load(); w >= next {
				size, blocks := dirSize(c.dir)
				el := time.Since(t0).Seconds()
				fmt.Fprintf(os.Stderr, "written %d messages in %.0fs (%.0f/s), on disk %.3f GB in %d block files\n", w, el, float64(w)/el, float64(size)/1e9, blocks)
				next = (w/1_000_000 + 1) * 1_000_000
			}
		}
	}()
	for w := 0; w < c.writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var p func(uint64)
			if progress != nil {
				p = func(seq uint64) { progress(w, seq) }
			}
			write := writer
			if c.append {
				write = appender
			}
			if err := write(ctx, c, url, w, &written, p); err != nil {
				errs <- fmt.Errorf("writer %d: %w", w, err)
			}
		}()
	}
	wg.Wait()
	close(done)
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	el := time.Since(t0).Seconds()
	size, blocks := dirSize(c.dir)
	how := "asynchronous publishes"
	if c.append {
		how = "the store's Append"
	}
	fmt.Printf("written %d messages (%d records with the dedupe markers) by %s in %d rooms (%d cold), retention %d, %d writers, in %.1fs: %.0f messages/s; on disk %.3f GB in %d block files\n",
		c.n, 2*c.n, how, c.rooms, c.cold, c.retention, c.writers, el, float64(c.n)/el, float64(size)/1e9, blocks)
	return nil
}

// writer writes the rooms r of writer w (r % writers == w) on a connection
// of its own, one round of seqs at a time over its rooms.
func writer(ctx context.Context, c config, url string, w int, written *atomic.Int64, progress func(seq uint64)) error {
	nc, err := nats.Connect(url, nats.Name("jsrecover"))
	if err != nil {
		return err
	}
	defer nc.Close()
	var pubErr atomic.Pointer[error]
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(c.window),
		jetstream.WithPublishAsyncTimeout(time.Minute),
		jetstream.WithPublishAsyncErrHandler(func(_ jetstream.JetStream, m *nats.Msg, err error) {
			e := fmt.Errorf("publish %s: %w", m.Subject, err)
			pubErr.CompareAndSwap(nil, &e)
		}))
	if err != nil {
		return err
	}
	var mine []int
	var most uint64
	for r := w; r < c.rooms; r += c.writers {
		mine = append(mine, r)
		most = max(most, perRoom(c, r))
	}
	pfx := "stampede." + jsstore.DefaultStream
	hexes := make([]string, len(mine))
	for i, r := range mine {
		hexes[i] = hex.EncodeToString([]byte(roomName(r)))
	}
	stall := jetstream.WithStallWait(time.Minute)
	body := []byte("a message body of about fifty bytes, as in a chat")
	every := uint64(max(1, c.retention/8))
	// acknowledged waits for every publish in flight, then has the owner
	// fsync, as a store's append does before it returns.
	acknowledged := func() error {
		select {
		case <-js.PublishAsyncComplete():
		case <-time.After(2 * time.Minute):
			return errors.New("publishes not acknowledged within 2 minutes")
		}
		if e := pubErr.Load(); e != nil {
			return *e
		}
		r, err := nc.Request(jsstore.SyncSubject, nil, 30*time.Second)
		if err != nil {
			return fmt.Errorf("sync: %w", err)
		}
		if string(r.Data) != "+OK" {
			return fmt.Errorf("sync: %s", r.Data)
		}
		return nil
	}
	for seq := uint64(1); seq <= most; seq++ {
		for i, r := range mine {
			if seq > perRoom(c, r) {
				continue
			}
			id := msgID(r, seq)
			d := nats.NewMsg(pfx + ".d." + hexes[i] + "." + hex.EncodeToString([]byte(id)))
			// The headers a store's append sends (appendOne, publishMsg):
			// JetStream checks them and stores them with the record.
			d.Header.Set(jetstream.ExpectedLastSubjSeqHeader, "0")
			d.Data = strconv.AppendUint(nil, seq, 10)
			if _, err := js.PublishMsgAsync(d, stall); err != nil {
				return err
			}
			m := nats.NewMsg(pfx + ".m." + hexes[i] + "." + strconv.FormatUint(seq, 10))
			m.Header.Set("Stampede-Id", id)
			m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, "0")
			m.Data = body
			if _, err := js.PublishMsgAsync(m, stall); err != nil {
				return err
			}
			written.Add(1)
		}
		trim := seq > uint64(c.retention) && seq%every == 0
		// The kill test's acknowledgements: often enough to matter.
		report := progress != nil && (seq%50 == 0 || seq == most)
		if trim || report || seq == most {
			if err := acknowledged(); err != nil {
				return err
			}
			if progress != nil {
				progress(seq)
			}
		}
		if trim {
			for _, r := range mine {
				if err := jsstore.Trim(ctx, js, jsstore.DefaultStream, roomName(r), uint64(c.retention)); err != nil {
					return fmt.Errorf("trim %s: %w", roomName(r), err)
				}
			}
		}
	}
	return nil
}

// appender writes the rooms of writer w through a store of its own
// (opened as a target process opens the embedded store: sync=1), one
// goroutine per room appending its messages in order; Append trims.
func appender(ctx context.Context, c config, url string, w int, written *atomic.Int64, _ func(uint64)) error {
	st, err := store.Open(ctx, url+"?sync=1", store.Options{Retention: c.retention})
	if err != nil {
		return err
	}
	defer st.Close()
	body := []byte("a message body of about fifty bytes, as in a chat")
	var wg sync.WaitGroup
	errs := make(chan error, c.rooms)
	for r := w; r < c.rooms; r += c.writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq := uint64(1); seq <= perRoom(c, r); seq++ {
				got, dup, err := st.Append(ctx, roomName(r), msgID(r, seq), body)
				if err == nil && (got != seq || dup) {
					err = fmt.Errorf("append %s seq %d: got %d dup %v", roomName(r), seq, got, dup)
				}
				if err != nil {
					errs <- err
					return
				}
				written.Add(1)
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// child is the writing process of -kill-after: it holds the embedded
// server and prints "acked W SEQ" each time writer W's rooms hold every
// seq through SEQ, acknowledged.
func child(c config) error {
	srv, err := jsstore.StartServer(c.dir)
	if err != nil {
		return err
	}
	defer srv.Close()
	out := bufio.NewWriter(os.Stdout)
	var mu sync.Mutex
	return write(c, srv.URL(), func(w int, seq uint64) {
		mu.Lock()
		fmt.Fprintf(out, "acked %d %d\n", w, seq)
		out.Flush()
		mu.Unlock()
	})
}

// writeAndKill runs the child, SIGKILLs it once killAfter messages are
// acknowledged and returns the last seq acknowledged per room.
func writeAndKill(c config) ([]uint64, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, "-child", "-n", strconv.Itoa(c.n), "-retention", strconv.Itoa(c.retention),
		"-cold", strconv.Itoa(c.cold), "-cold-msgs", strconv.Itoa(c.coldMsgs),
		"-rooms", strconv.Itoa(c.rooms), "-writers", strconv.Itoa(c.writers), "-window", strconv.Itoa(c.window), "-dir", c.dir)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	fmt.Printf("child %d writing; SIGKILL after %d acknowledged messages\n", cmd.Process.Pid, c.killAfter)
	ackedW := make([]uint64, c.writers)
	total := func() int {
		t := 0
		for r := 0; r < c.rooms; r++ {
			t += int(min(ackedW[r%c.writers], perRoom(c, r)))
		}
		return t
	}
	sc := bufio.NewScanner(stdout)
	killed := false
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 || f[0] != "acked" {
			continue
		}
		w, _ := strconv.Atoi(f[1])
		seq, _ := strconv.ParseUint(f[2], 10, 64)
		if w >= 0 && w < c.writers {
			ackedW[w] = seq
		}
		if total() >= c.killAfter {
			// Kill at once, mid-write: the other writers have publishes in
			// flight and may be purging.
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				return nil, err
			}
			killed = true
			break
		}
	}
	err = cmd.Wait()
	if !killed {
		return nil, fmt.Errorf("child ended before %d messages were acknowledged: %v", c.killAfter, err)
	}
	fmt.Printf("child killed (SIGKILL) with %d messages acknowledged (%v)\n", total(), err)
	acked := make([]uint64, c.rooms)
	for r := range acked {
		acked[r] = min(ackedW[r%c.writers], perRoom(c, r))
	}
	return acked, nil
}

// checkAcked reads back, for -check rooms spread over the writers, every
// acknowledged seq that retention keeps: those after head-retention, where
// head (at least the last acknowledged) is the room's head after recovery.
func checkAcked(ctx context.Context, c config, st store.Store, acked []uint64) error {
	n := min(c.check, c.rooms)
	checked := 0
	for i := 0; i < n; i++ {
		r := i * c.rooms / n
		room := roomName(r)
		head, err := st.Head(ctx, room)
		if err != nil {
			return err
		}
		a := acked[r]
		if head < a {
			return fmt.Errorf("LOST: %s head %d after recovery, %d were acknowledged", room, head, a)
		}
		from := uint64(1)
		if head > uint64(c.retention) {
			from = head - uint64(c.retention) + 1
		}
		if a < from {
			continue
		}
		msgs, _, _, err := st.Since(ctx, room, from-1, int(a-from+1))
		if err != nil {
			return err
		}
		for k := range int(a - from + 1) {
			want := from + uint64(k)
			if k >= len(msgs) || msgs[k].Seq != want || msgs[k].ID != msgID(r, want) {
				got := "nothing"
				if k < len(msgs) {
					got = fmt.Sprintf("seq %d id %q", msgs[k].Seq, msgs[k].ID)
				}
				return fmt.Errorf("LOST: %s acknowledged seq %d (id %s) not read back after recovery: %s (head %d, acked %d)", room, want, msgID(r, want), got, head, a)
			}
		}
		checked += int(a - from + 1)
		fmt.Printf("check: %s head %d, acknowledged %d, seqs %d..%d read back with their IDs\n", room, head, a, from, a)
	}
	fmt.Printf("check: %d acknowledged messages of %d rooms read back after the SIGKILL and recovery: none lost\n", checked, n)
	return nil
}

// dirSize is the bytes of the files under dir and how many are block
// files (.blk).
func dirSize(dir string) (int64, int) {
	var n int64
	blocks := 0
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			n += fi.Size()
			if strings.HasSuffix(p, ".blk") {
				blocks++
			}
		}
		return nil
	})
	return n, blocks
}
