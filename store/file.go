package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

// File is the embedded store: one append-only log file in a directory,
// with the rooms' state in memory.
//
// Group commit: appends are handed to one writer goroutine, which takes
// every request waiting (up to maxBatchBytes), assigns their seqs, writes
// their records with one write, fsyncs (fdatasync, into a preallocated
// file), and only then publishes them to
// Since and answers the callers. An Append that returned without error is
// therefore on disk: a SIGKILL, or a power cut on a disk that honours
// fsync, loses no ACKed message. What a crash can lose is a batch whose
// fsync had not returned, none of which was ACKed.
//
// On open the log is scanned, a torn tail (a record cut short by a crash,
// or whose checksum fails) is truncated away, and the rooms, retained
// messages and dedupe index are rebuilt. The log is never compacted: it
// grows with every message, and the dedupe index (every ID ever stored)
// lives in memory, about 100 bytes per message.
type File struct {
	opt  Options
	dir  string
	lock *os.File
	log  logFile

	reqs     chan *fileReq
	quit     chan struct{}
	done     chan struct{}
	closeMu  sync.RWMutex // held for reading while a request is being sent
	closed   bool
	closeErr error

	mu    sync.RWMutex // guards rooms for readers; the writer alone mutates
	rooms map[string]*roomIndex
	err   error // a failed write or fsync: the store refuses further appends

	size  int64 // log length (the valid records), writer-owned
	alloc int64 // file length: preallocated zeros after size; 0 once preallocation failed
}

// fileReq is one AppendBatch waiting for the writer.
type fileReq struct {
	room    string
	entries []Entry
	res     []Result
	done    chan error
}

const (
	logName       = "messages.log"
	lockName      = "LOCK"
	maxBatchBytes = 4 << 20
	// preallocChunk is how far ahead the log file is allocated: appends
	// inside it do not change the file's size, so fdatasync has no size to
	// commit to the journal (cheaper, steadier fsyncs). Recovery treats
	// the zeros after the last record as the end of the log.
	preallocChunk = 16 << 20
)

// OpenFile opens (creating if needed) the embedded store in dir. It takes
// an exclusive lock on dir: a second process gets ErrLocked.
func OpenFile(dir string, opt Options) (*File, error) {
	return openFile(dir, opt, openOSLog)
}

// openFile is OpenFile with the log opened by openLog.
func openFile(dir string, opt Options, openLog openLogFunc) (*File, error) {
	if err := opt.Validate(); err != nil {
		return nil, err
	}
	opt = opt.WithDefaults()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(dir, lockName), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		lock.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s", ErrLocked, dir)
		}
		return nil, fmt.Errorf("store: lock %s: %w", dir, err)
	}
	s := &File{
		opt:   opt,
		dir:   dir,
		lock:  lock,
		rooms: make(map[string]*roomIndex),
		reqs:  make(chan *fileReq, 1024),
		quit:  make(chan struct{}),
		done:  make(chan struct{}),
	}
	if err := s.recover(openLog); err != nil {
		lock.Close()
		return nil, err
	}
	go s.writer()
	return s, nil
}

// recover opens the log, rebuilds the state, truncates a torn tail and
// syncs the log.
//
// The sync matters for dedupe: the records read back may be the writes
// of a process killed before its fsync (the page cache outlives the
// process, not a power cut). A resend of such a message is answered as a
// dup, with the original seq; its ACK must mean durable like any other,
// so the log is synced before the store answers anything. After open,
// every record in the index was synced before it got there.
func (s *File) recover(openLog openLogFunc) error {
	path := filepath.Join(s.dir, logName)
	_, statErr := os.Stat(path)
	f, err := openLog(path)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	if os.IsNotExist(statErr) {
		// A new log: make its directory entry durable too.
		if err := syncDir(s.dir); err != nil {
			f.Close()
			return err
		}
	}
	end, err := f.Size()
	if err != nil {
		f.Close()
		return fmt.Errorf("store: %w", err)
	}
	valid, err := scanLog(io.NewSectionReader(f, 0, end), func(r record) error {
		room := s.room(r.room)
		if r.seq != room.head+1 {
			return errBadRecord
		}
		room.add(Message{Seq: r.seq, ID: r.id, Body: r.body}, !s.opt.NoDedupe, s.opt.Retention)
		return nil
	})
	if err != nil {
		f.Close()
		return fmt.Errorf("store: read %s: %w", path, err)
	}
	if end != valid {
		// A torn tail is the last write, never ACKed: cut it. A damaged
		// record that valid ones follow is not: refuse, keeping them.
		if at, err := validRecordAfter(f, valid, end); err != nil {
			f.Close()
			return fmt.Errorf("store: read %s: %w", path, err)
		} else if at >= 0 {
			f.Close()
			return fmt.Errorf("%w: %s: the record at offset %d is damaged and a valid record follows at %d; the store would drop it by truncating, so it refuses to open (move the log aside, or cut it at %d by hand to keep only what precedes)",
				ErrDamaged, path, valid, at, valid)
		}
		if err := f.Truncate(valid); err != nil {
			f.Close()
			return fmt.Errorf("store: truncate torn tail of %s: %w", path, err)
		}
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("store: sync %s: %w", path, err)
	}
	s.log, s.size, s.alloc = f, valid, valid
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("store: sync %s: %w", dir, err)
	}
	return nil
}

// room returns the index of name, creating it. Writer (or recovery) only.
func (s *File) room(name string) *roomIndex {
	r := s.rooms[name]
	if r == nil {
		r = &roomIndex{ids: make(map[string]uint64)}
		s.mu.Lock()
		s.rooms[name] = r
		s.mu.Unlock()
	}
	return r
}

// Append implements Store.
func (s *File) Append(ctx context.Context, room, id string, body []byte) (uint64, bool, error) {
	return AppendOne(ctx, s, room, id, body)
}

// AppendBatch implements Store: it returns once the batch is fsynced.
func (s *File) AppendBatch(ctx context.Context, room string, entries []Entry) ([]Result, error) {
	if len(entries) == 0 {
		return nil, nil
	}
	// The writer may still be reading the batch after a cancelled ctx
	// returns, while the caller reuses its slice: it gets its own copy.
	req := &fileReq{room: room, entries: cloneEntries(entries), res: make([]Result, len(entries)), done: make(chan error, 1)}
	s.closeMu.RLock()
	if s.closed {
		s.closeMu.RUnlock()
		return nil, ErrClosed
	}
	select {
	case s.reqs <- req:
	case <-ctx.Done():
		s.closeMu.RUnlock()
		return nil, ctx.Err()
	}
	s.closeMu.RUnlock()
	select {
	case err := <-req.done:
		if err != nil {
			return nil, err
		}
		return req.res, nil
	case <-ctx.Done():
		// The batch may still be written; the caller resends with the
		// same IDs and dedupe sorts it out.
		return nil, ctx.Err()
	}
}

// cloneEntries copies entries and their bodies into one allocation.
func cloneEntries(entries []Entry) []Entry {
	n := 0
	for _, e := range entries {
		n += len(e.Body)
	}
	buf := make([]byte, 0, n)
	out := make([]Entry, len(entries))
	for i, e := range entries {
		start := len(buf)
		buf = append(buf, e.Body...)
		out[i] = Entry{ID: e.ID, Body: buf[start:len(buf):len(buf)]}
	}
	return out
}

// writer is the group-commit loop: gather, assign, write, fsync, publish,
// answer.
func (s *File) writer() {
	defer close(s.done)
	var batch []*fileReq
	var buf []byte
	for {
		batch = batch[:0]
		select {
		case r := <-s.reqs:
			batch = append(batch, r)
		case <-s.quit:
			// Close waits for senders to finish, so reqs holds the last
			// requests: serve them, then stop.
		drain:
			for {
				select {
				case r := <-s.reqs:
					batch = append(batch, r)
				default:
					break drain
				}
			}
			if len(batch) > 0 {
				s.commit(batch, &buf)
			}
			return
		}
		size := batchBytes(batch[0])
	gather:
		for size < maxBatchBytes {
			select {
			case r := <-s.reqs:
				batch = append(batch, r)
				size += batchBytes(r)
			default:
				break gather
			}
		}
		s.commit(batch, &buf)
	}
}

func batchBytes(r *fileReq) int {
	n := 0
	for _, e := range r.entries {
		n += len(r.room) + len(e.ID) + len(e.Body) + 32
	}
	return n
}

// pendingMsg is a message of the batch being committed.
type pendingMsg struct {
	room *roomIndex
	m    Message
}

// commit assigns seqs to batch, writes and fsyncs it, publishes it and
// answers its requests.
func (s *File) commit(batch []*fileReq, buf *[]byte) {
	if s.err != nil {
		for _, r := range batch {
			r.done <- s.err
		}
		return
	}
	dedupe := !s.opt.NoDedupe
	heads := make(map[*roomIndex]uint64) // room -> head including this batch
	seen := make(map[string]uint64)      // room \x00 id -> seq, within this batch
	var pend []pendingMsg
	b := (*buf)[:0]
	for _, r := range batch {
		room := s.room(r.room)
		head, ok := heads[room]
		if !ok {
			head = room.head
		}
		for i, e := range r.entries {
			key := r.room + "\x00" + e.ID
			if dedupe {
				if seq, ok := room.ids[e.ID]; ok {
					r.res[i] = Result{Seq: seq, Dup: true}
					continue
				}
				if seq, ok := seen[key]; ok {
					r.res[i] = Result{Seq: seq, Dup: true}
					continue
				}
			}
			head++
			seen[key] = head
			r.res[i] = Result{Seq: head}
			b = appendRecord(b, head, r.room, e.ID, e.Body)
			pend = append(pend, pendingMsg{room, Message{Seq: head, ID: e.ID, Body: e.Body}})
		}
		heads[room] = head
	}
	*buf = b
	if len(b) > 0 {
		if err := s.write(b); err != nil {
			s.err = err
			for _, r := range batch {
				r.done <- err
			}
			return
		}
	}
	// The callers own their bodies: copy the batch's into one allocation.
	arena := make([]byte, 0, bodyBytes(pend))
	for i := range pend {
		start := len(arena)
		arena = append(arena, pend[i].m.Body...)
		pend[i].m.Body = arena[start:len(arena):len(arena)]
	}
	s.mu.Lock()
	for _, p := range pend {
		p.room.add(p.m, dedupe, s.opt.Retention)
	}
	s.mu.Unlock()
	for _, r := range batch {
		r.done <- nil
	}
}

func bodyBytes(pend []pendingMsg) int {
	n := 0
	for _, p := range pend {
		n += len(p.m.Body)
	}
	return n
}

// write appends b to the log and syncs it (fdatasync). On a failed write
// the next one starts at the same offset, so no partial record stays ahead
// of later ones.
func (s *File) write(b []byte) error {
	end := s.size + int64(len(b))
	if s.alloc > 0 && end > s.alloc {
		s.prealloc(end)
	}
	if _, err := s.log.WriteAt(b, s.size); err != nil {
		if s.alloc == 0 {
			s.log.Truncate(s.size)
		}
		return fmt.Errorf("store: write log: %w", err)
	}
	if err := s.log.Datasync(); err != nil {
		// After a failed fsync the page cache state is unknown: refuse
		// further appends rather than ACK on a log that may have holes.
		return fmt.Errorf("store: fsync log: %w", err)
	}
	s.size = end
	return nil
}

// prealloc extends the file with zeros past end (fallocate) and commits
// the new size. Where fallocate is unsupported it is not tried again:
// appends then grow the file one write at a time.
func (s *File) prealloc(end int64) {
	n := (end - s.size + preallocChunk - 1) / preallocChunk * preallocChunk
	if err := s.log.Allocate(s.size, n); err != nil {
		s.alloc = 0
		return
	}
	if err := s.log.Sync(); err != nil {
		s.alloc = 0
		return
	}
	s.alloc = s.size + n
}

// Since implements Store.
func (s *File) Since(_ context.Context, room string, afterSeq uint64, limit int) ([]Message, uint64, bool, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.rooms == nil {
		return nil, 0, false, ErrClosed
	}
	r := s.rooms[room]
	if r == nil {
		return nil, 0, false, nil
	}
	msgs, through, gap := r.since(afterSeq, limit, s.opt.Retention)
	return msgs, through, gap, nil
}

// Head implements Store.
func (s *File) Head(_ context.Context, room string) (uint64, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.rooms == nil {
		return 0, ErrClosed
	}
	if r := s.rooms[room]; r != nil {
		return r.head, nil
	}
	return 0, nil
}

// Close implements Store: it finishes the appends already handed to the
// writer, closes the log and releases the directory.
func (s *File) Close() error {
	s.closeMu.Lock()
	if s.closed {
		s.closeMu.Unlock()
		return s.closeErr
	}
	s.closed = true
	s.closeMu.Unlock()
	close(s.quit)
	<-s.done
	// Leave no preallocated zeros behind at rest.
	err := s.log.Truncate(s.size)
	if err == nil {
		err = s.log.Sync()
	}
	if cerr := s.log.Close(); err == nil {
		err = cerr
	}
	s.lock.Close()
	s.mu.Lock()
	s.rooms = nil
	s.mu.Unlock()
	s.closeErr = err
	return err
}

// validRecordAfter returns the offset of the first valid record that
// starts after offset from (and before end), or -1 if there is none: the
// bytes after the end of the valid log are then a torn tail or the
// preallocated zeros.
func validRecordAfter(f io.ReaderAt, from, end int64) (int64, error) {
	if end-from > 1<<30 {
		end = from + 1<<30
	}
	b := make([]byte, end-from)
	if _, err := f.ReadAt(b, from); err != nil && err != io.EOF {
		return -1, err
	}
	for off := 1; off+recHeader <= len(b); off++ {
		n := binary.LittleEndian.Uint32(b[off:])
		if n == 0 || n > maxRecord || off+recHeader+int(n) > len(b) {
			continue
		}
		payload := b[off+recHeader : off+recHeader+int(n)]
		if crc32.Checksum(payload, castagnoli) != binary.LittleEndian.Uint32(b[off+4:]) {
			continue
		}
		if _, err := parseRecord(payload); err == nil {
			return from + int64(off), nil
		}
	}
	return -1, nil
}
