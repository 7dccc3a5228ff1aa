package store

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// childEnv makes the test binary run as a store-writing child (see
// TestMain) in the directory it names.
const childEnv = "STAMPEDE_STORE_CHILD_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(childEnv); dir != "" {
		os.Exit(runChild(dir, os.Getenv("STAMPEDE_STORE_CHILD_ROUND")))
	}
	os.Exit(m.Run())
}

// runChild appends to the store in dir from several goroutines, in
// batches, until killed, printing "room id seq" for every message once
// AppendBatch returned (the ACK), one write per batch.
func runChild(dir, round string) int {
	s, err := OpenFile(dir, Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	deadline := time.Now().Add(30 * time.Second) // bounded even if nobody kills it
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			room := "r" + strconv.Itoa(g%3)
			var line []byte
			for n := 0; n < 200_000 && time.Now().Before(deadline); {
				k := 1 + n%7
				entries := make([]Entry, k)
				for i := range entries {
					entries[i] = Entry{ID: fmt.Sprintf("%s-%d-%d", round, g, n+i), Body: []byte(strings.Repeat("b", 10+n%50))}
				}
				if n%11 == 0 && n > 0 {
					entries[0].ID = fmt.Sprintf("%s-%d-%d", round, g, n-1) // a resend
				}
				res, err := s.AppendBatch(context.Background(), room, entries)
				if err != nil {
					fmt.Fprintln(os.Stderr, err)
					return
				}
				line = line[:0]
				for i, r := range res {
					line = fmt.Appendf(line, "%s %s %d\n", room, entries[i].ID, r.Seq)
				}
				mu.Lock()
				os.Stdout.Write(line)
				mu.Unlock()
				n += k
			}
		}()
	}
	wg.Wait()
	s.Close()
	return 0
}

// TestSIGKILLLosesNoACKedMessage kills a child writing to the store at a
// random moment, 25 times on one directory, and checks after each kill
// that every message the child saw ACKed is there with its seq.
func TestSIGKILLLosesNoACKedMessage(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary 25 times")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(4, 2))
	acked := map[string]uint64{} // room \x00 id -> seq, over all rounds
	const rounds = 25
	for round := range rounds {
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"="+dir, "STAMPEDE_STORE_CHILD_ROUND="+strconv.Itoa(round))
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Kill after a random number of ACKs, mid-stream.
		killAfter := 20 + rng.IntN(400)
		sc := bufio.NewScanner(out)
		var lines []string
		killed := false
		timer := time.AfterFunc(20*time.Second, func() { cmd.Process.Kill() })
		for sc.Scan() {
			lines = append(lines, sc.Text())
			if !killed && len(lines) >= killAfter {
				cmd.Process.Signal(syscall.SIGKILL)
				killed = true
			}
		}
		timer.Stop()
		err = cmd.Wait()
		var ee *exec.ExitError
		if !killed || !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("round %d: child was not killed mid-write (%d lines, err %v)", round, len(lines), err)
		}
		for _, l := range lines {
			f := strings.Fields(l)
			if len(f) != 3 {
				t.Fatalf("round %d: bad child line %q", round, l)
			}
			seq, _ := strconv.ParseUint(f[2], 10, 64)
			key := f[0] + "\x00" + f[1]
			if old, ok := acked[key]; ok && old != seq {
				t.Fatalf("round %d: %s ACKed with seq %d, earlier %d", round, f[1], seq, old)
			}
			acked[key] = seq
		}
		checkStore(t, dir, round, acked)
	}
}

// checkStore reopens dir and checks every ACKed message is stored with its
// seq, and that every room's seqs are dense.
func checkStore(t *testing.T, dir string, round int, acked map[string]uint64) {
	t.Helper()
	s, err := OpenFile(dir, Options{})
	if err != nil {
		t.Fatalf("round %d: reopen: %v", round, err)
	}
	defer s.Close()
	stored := map[string]uint64{}
	for _, room := range []string{"r0", "r1", "r2"} {
		msgs, through, gap, err := s.Since(context.Background(), room, 0, 0)
		if err != nil || gap {
			t.Fatalf("round %d: Since(%s) gap %v err %v", round, room, gap, err)
		}
		for i, m := range msgs {
			if m.Seq != uint64(i+1) {
				t.Fatalf("round %d: room %s seq %d at position %d", round, room, m.Seq, i)
			}
			stored[room+"\x00"+m.ID] = m.Seq
		}
		if len(msgs) > 0 && through != msgs[len(msgs)-1].Seq {
			t.Fatalf("round %d: through %d, last %d", round, through, msgs[len(msgs)-1].Seq)
		}
	}
	for key, seq := range acked {
		if got, ok := stored[key]; !ok || got != seq {
			t.Fatalf("round %d: ACKed message %q seq %d: stored %v seq %d", round, strings.Replace(key, "\x00", "/", 1), seq, ok, got)
		}
	}
}

// TestRecoverTruncatesTornTail cuts the log inside its last record and
// appends garbage: reopening keeps every whole record before it.
func TestRecoverTruncatesTornTail(t *testing.T) {
	for _, tc := range []struct {
		name    string
		corrupt func(t *testing.T, path string, size int64)
		kept    uint64
	}{
		{"cut inside the last record", func(t *testing.T, path string, size int64) {
			if err := os.Truncate(path, size-3); err != nil {
				t.Fatal(err)
			}
		}, 2},
		{"garbage after the last record", func(t *testing.T, path string, _ int64) {
			appendBytes(t, path, []byte{0x10, 0, 0, 0, 1, 2, 3, 4, 'x'})
		}, 3},
		{"half a header", func(t *testing.T, path string, _ int64) { appendBytes(t, path, []byte{5, 0}) }, 3},
		{"absurd length", func(t *testing.T, path string, _ int64) {
			appendBytes(t, path, []byte{0xff, 0xff, 0xff, 0x7f, 0, 0, 0, 0})
		}, 3},
		{"checksum mismatch in the last record", func(t *testing.T, path string, size int64) {
			f, err := os.OpenFile(path, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteAt([]byte{'#'}, size-1)
			f.Close()
		}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, path := threeRecords(t)
			st, _ := os.Stat(path)
			tc.corrupt(t, path, st.Size())
			s, err := OpenFile(dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if h, _ := s.Head(context.Background(), "r"); h != tc.kept {
				t.Fatalf("head after recovery = %d, want %d", h, tc.kept)
			}
			if seq, dup := mustAppend(t, s, "r", "new", "b"); seq != tc.kept+1 || dup {
				t.Fatalf("append after recovery = %d %v, want %d", seq, dup, tc.kept+1)
			}
			s.Close()
			s2, err := OpenFile(dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer s2.Close()
			if h, _ := s2.Head(context.Background(), "r"); h != tc.kept+1 {
				t.Fatalf("head after second reopen = %d, want %d", h, tc.kept+1)
			}
		})
	}
}

func appendBytes(t *testing.T, path string, b []byte) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.Write(b)
}

func TestFileLockedByAnotherOpen(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenFile(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := OpenFile(dir, Options{}); !errors.Is(err, ErrLocked) {
		t.Fatalf("second OpenFile = %v, want ErrLocked", err)
	}
}

func TestOpenURLs(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		url     string
		wantErr string
	}{
		{"file://" + filepath.Join(dir, "a"), ""},
		{filepath.Join(dir, "b"), ""},
		{"", "empty URL"},
		{"file://host/x", "host must be empty"},
		{"ftp://x/y", "unknown scheme"},
	} {
		s, err := Open(context.Background(), tc.url, Options{})
		if tc.wantErr == "" {
			if err != nil {
				t.Fatalf("Open(%q): %v", tc.url, err)
			}
			s.Close()
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Fatalf("Open(%q) = %v, want an error with %q", tc.url, err, tc.wantErr)
		}
	}
	if _, err := Open(context.Background(), dir, Options{Retention: -1}); err == nil {
		t.Fatal("negative retention accepted")
	}
}

// TestPreallocatedTail: while open, the log is preallocated past its
// records; a copy taken then (what a crash leaves) reopens with every
// record and the zeros cut away; Close leaves no zeros behind.
func TestPreallocatedTail(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenFile(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 50; i++ {
		mustAppend(t, s, "r", fmt.Sprint("id", i), "body")
	}
	path := filepath.Join(dir, logName)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if s.alloc > 0 && int64(len(b)) != s.alloc {
		t.Fatalf("log file is %d bytes, want the preallocated %d", len(b), s.alloc)
	}
	crash := t.TempDir()
	if err := os.WriteFile(filepath.Join(crash, logName), b, 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := OpenFile(crash, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if h, _ := c.Head(context.Background(), "r"); h != 50 {
		t.Fatalf("head of the crash copy = %d, want 50", h)
	}
	if seq, dup := mustAppend(t, c, "r", "id51", "b"); seq != 51 || dup {
		t.Fatalf("append to the crash copy = %d %v", seq, dup)
	}
	c.Close()
	size := s.size
	s.Close()
	if st, _ := os.Stat(path); st.Size() != size {
		t.Fatalf("after Close the log is %d bytes, want its records' %d", st.Size(), size)
	}
}

// TestFileAppendBatchOwnsEntries: a caller whose context is cancelled gets
// its error at once and may reuse its slice; the batch the writer goes on
// to store is the one that was given, never the reused memory.
func TestFileAppendBatchOwnsEntries(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(context.Background(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	entries := []Entry{{ID: "m1", Body: []byte("hello")}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _ = s.AppendBatch(ctx, "r", entries)
	entries[0].Body[0] = 'X'
	clear(entries)
	if _, err := s.AppendBatch(context.Background(), "r", []Entry{{ID: "m2", Body: []byte("two")}}); err != nil {
		t.Fatal(err)
	}
	msgs, _, _, err := s.Since(context.Background(), "r", 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if m.ID == "" || (m.ID == "m1" && string(m.Body) != "hello") {
			t.Errorf("stored %+v: the caller's reused memory leaked into the log", m)
		}
	}
	s.Close()
}

// ctxT returns a context that ends after 30 s or when t ends.
func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// mustAppend appends one message, failing t on an error.
// threeRecords writes a log of three records (ids id1..id3 in room r) in
// a new folder and closes it; it returns the folder and the log's path.
func threeRecords(t *testing.T) (dir, path string) {
	t.Helper()
	dir = t.TempDir()
	s, err := OpenFile(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		mustAppend(t, s, "r", fmt.Sprint("id", i), "body")
	}
	s.Close()
	return dir, filepath.Join(dir, logName)
}

func mustAppend(t *testing.T, s Store, room, id, body string) (uint64, bool) {
	t.Helper()
	seq, dup, err := s.Append(ctxT(t), room, id, []byte(body))
	if err != nil {
		t.Fatalf("Append(%s, %s): %v", room, id, err)
	}
	return seq, dup
}

// TestRecoverRefusesDamageBeforeValidRecords flips a byte in the first of
// three records: truncating there would drop the two valid ones after it,
// so opening fails with ErrDamaged and leaves the log as it was.
func TestRecoverRefusesDamageBeforeValidRecords(t *testing.T) {
	dir, path := threeRecords(t)
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte{before[recHeader+2] ^ 0xff}, recHeader+2) // inside record 1's payload
	f.Close()
	if s, err := OpenFile(dir, Options{}); !errors.Is(err, ErrDamaged) {
		if s != nil {
			s.Close()
		}
		t.Fatalf("OpenFile with a damaged first record = %v, want ErrDamaged", err)
	}
	after, _ := os.ReadFile(path)
	if len(after) != len(before) {
		t.Fatalf("the refused log was changed: %d bytes, was %d", len(after), len(before))
	}
}
