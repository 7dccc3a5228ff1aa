package store

import (
	"errors"
	"io"
	"os"
	"sync"
)

// errPowerOff is what every call on a cut disk's files returns.
var errPowerOff = errors.New("powercut: the power is off")

// errKilled is what a killed process's file calls return.
var errKilled = errors.New("powercut: the process was killed")

// powerCutDisk is the log's disk as a power cut sees it. A write goes to
// a cache (memory: the page cache) and reaches the real file, the
// platter, only when the file is synced; Cut drops the cache, as a power
// cut does, and the real file is then exactly what was synced. A store
// opened on the same folder with OpenFile afterwards reads what survived.
//
// The cache belongs to the disk, not to an open file: a process that is
// killed (kill) leaves its unsynced writes in it, and the next open of
// the path reads them, as after a SIGKILL.
type powerCutDisk struct {
	mu     sync.Mutex
	cut    bool
	cache  map[string]*cached // path -> what the cache holds for it
	syncs  int                // Datasync and Sync calls that made data durable
	cutAt  int                // cut at this sync instead of doing it (0: never)
	failAt int                // fail this sync, doing nothing (0: never)
	lost   int                // bytes of writes a cut dropped
	open   []*powerCutFile
}

// cached is one file's writes that are not synced yet, and its length as
// the processes see it.
type cached struct {
	writes []pendingWrite
	size   int64
}

type pendingWrite struct {
	off int64
	b   []byte
}

func newPowerCutDisk() *powerCutDisk {
	return &powerCutDisk{cache: map[string]*cached{}}
}

// openLog is the store's openLogFunc on this disk.
func (d *powerCutDisk) openLog(path string) (logFile, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cut {
		return nil, errPowerOff
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	c := d.cache[path]
	if c == nil {
		st, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, err
		}
		c = &cached{size: st.Size()}
		d.cache[path] = c
	}
	pf := &powerCutFile{d: d, f: f, c: c}
	d.open = append(d.open, pf)
	return pf, nil
}

// Cut is the power cut: every write not synced is gone, and every file
// call fails from now on.
func (d *powerCutDisk) Cut() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.cutLocked()
}

func (d *powerCutDisk) cutLocked() {
	if d.cut {
		return
	}
	d.cut = true
	for _, c := range d.cache {
		for _, w := range c.writes {
			d.lost += len(w.b)
		}
		c.writes = nil
	}
}

// kill is a SIGKILL of the process that opened the files so far: their
// calls fail from now on, and what they wrote stays in the cache.
func (d *powerCutDisk) kill() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, f := range d.open {
		f.dead = true
	}
}

// Syncs returns how many syncs made data durable so far.
func (d *powerCutDisk) Syncs() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.syncs
}

// Lost returns how many bytes of written data the cut dropped.
func (d *powerCutDisk) Lost() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.lost
}

// powerCutFile is one open file of a powerCutDisk.
type powerCutFile struct {
	d    *powerCutDisk
	f    *os.File // the platter
	c    *cached
	dead bool
}

// check returns why a call must fail, with d.mu held.
func (f *powerCutFile) check() error {
	if f.d.cut {
		return errPowerOff
	}
	if f.dead {
		return errKilled
	}
	return nil
}

func (f *powerCutFile) WriteAt(b []byte, off int64) (int, error) {
	f.d.mu.Lock()
	defer f.d.mu.Unlock()
	if err := f.check(); err != nil {
		return 0, err
	}
	f.c.writes = append(f.c.writes, pendingWrite{off, append([]byte(nil), b...)})
	f.c.size = max(f.c.size, off+int64(len(b)))
	return len(b), nil
}

// ReadAt reads the platter with the cache over it.
func (f *powerCutFile) ReadAt(b []byte, off int64) (int, error) {
	f.d.mu.Lock()
	defer f.d.mu.Unlock()
	if err := f.check(); err != nil {
		return 0, err
	}
	if off >= f.c.size {
		return 0, io.EOF
	}
	n := int(min(int64(len(b)), f.c.size-off))
	clear(b[:n])
	if _, err := f.f.ReadAt(b[:n], off); err != nil && err != io.EOF {
		return 0, err
	}
	for _, w := range f.c.writes {
		lo, hi := max(off, w.off), min(off+int64(n), w.off+int64(len(w.b)))
		if lo < hi {
			copy(b[lo-off:hi-off], w.b[lo-w.off:hi-w.off])
		}
	}
	if n < len(b) {
		return n, io.EOF
	}
	return n, nil
}

func (f *powerCutFile) Size() (int64, error) {
	f.d.mu.Lock()
	defer f.d.mu.Unlock()
	if err := f.check(); err != nil {
		return 0, err
	}
	return f.c.size, nil
}

// Truncate reaches the platter at once (harsher than a real disk, which
// may keep the old length until a sync) and drops the cached writes
// beyond the new length.
func (f *powerCutFile) Truncate(size int64) error {
	f.d.mu.Lock()
	defer f.d.mu.Unlock()
	if err := f.check(); err != nil {
		return err
	}
	if err := f.f.Truncate(size); err != nil {
		return err
	}
	kept := f.c.writes[:0]
	for _, w := range f.c.writes {
		if w.off >= size {
			continue
		}
		if end := w.off + int64(len(w.b)); end > size {
			w.b = w.b[:size-w.off]
		}
		kept = append(kept, w)
	}
	f.c.writes = kept
	f.c.size = size
	return nil
}

// Allocate reserves zeros on the platter at once: they hold no data.
func (f *powerCutFile) Allocate(off, n int64) error {
	f.d.mu.Lock()
	defer f.d.mu.Unlock()
	if err := f.check(); err != nil {
		return err
	}
	if err := (osLog{f.f}).Allocate(off, n); err != nil {
		return err
	}
	f.c.size = max(f.c.size, off+n)
	return nil
}

func (f *powerCutFile) Datasync() error { return f.Sync() }

// Sync writes the cached writes to the platter, unless the
// disk was told to cut or fail at this sync.
func (f *powerCutFile) Sync() error {
	f.d.mu.Lock()
	defer f.d.mu.Unlock()
	if err := f.check(); err != nil {
		return err
	}
	n := f.d.syncs + 1
	if n == f.d.cutAt {
		f.d.cutLocked()
		return errPowerOff
	}
	if n == f.d.failAt {
		f.d.failAt = 0
		return errors.New("powercut: fsync failed")
	}
	// The platter is the real file as the next open reads it; the
	// machine's own page cache never loses power here, so no real fsync
	// is needed (and the test stays fast on a busy disk).
	for _, w := range f.c.writes {
		if _, err := f.f.WriteAt(w.b, w.off); err != nil {
			return err
		}
	}
	f.c.writes = nil
	f.d.syncs = n
	return nil
}

func (f *powerCutFile) Close() error {
	f.d.mu.Lock()
	defer f.d.mu.Unlock()
	return f.f.Close()
}
