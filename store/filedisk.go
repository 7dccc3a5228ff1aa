package store

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// logFile is the embedded store's log file as the store uses it: the
// calls whose order makes an ACK durable. It is a seam: the store's tests
// open the log through a disk that keeps every write in a cache until it
// is synced and drops the cache at a power cut, which is what proves
// that nothing is ACKed before it is synced.
type logFile interface {
	io.ReaderAt
	io.WriterAt
	// Size is the file's length.
	Size() (int64, error)
	// Truncate sets the file's length.
	Truncate(size int64) error
	// Allocate reserves [off, off+n) as zeros (fallocate), so later
	// writes inside it do not change the file's size.
	Allocate(off, n int64) error
	// Datasync makes the written data durable (fdatasync).
	Datasync() error
	// Sync makes the data and the file's size durable (fsync).
	Sync() error
	Close() error
}

// openLogFunc opens (creating if needed) the log file at path.
type openLogFunc func(path string) (logFile, error)

// osLog is the log on the real file system.
type osLog struct{ *os.File }

func openOSLog(path string) (logFile, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	return osLog{f}, nil
}

func (f osLog) Size() (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

func (f osLog) Allocate(off, n int64) error { return unix.Fallocate(int(f.Fd()), 0, off, n) }

func (f osLog) Datasync() error { return unix.Fdatasync(int(f.Fd())) }
