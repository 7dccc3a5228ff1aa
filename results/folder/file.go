package folder

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// A results folder is for its user's eyes only: what a run records may
// hold what the server said, and its config what the user typed. Every
// folder is DirMode and every file FileMode from its creation, whatever
// the umask.
const (
	DirMode  os.FileMode = 0o700
	FileMode os.FileMode = 0o600
)

// ErrNotResults is CheckFolder's error for a folder that holds files, none
// of them a results folder's: stampede writes into it nothing, and changes
// nothing in it.
var ErrNotResults = errors.New("is not empty and not a results folder of stampede's")

// ErrShared is the error for a folder another user can write into, or
// that another user owns: a file planted there could be written through.
var ErrShared = errors.New("can be written by another user")

// WriteFile writes the file at path with write, the one way every file of
// a results folder is written: into a new temporary file beside it
// (created FileMode, never an existing one: no symlink is followed), then
// renamed over path, which replaces what was there (a symlink included,
// whose target is left untouched) in one step, so a reader never sees
// half a file.
func WriteFile(path string, write func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("results: %w", err)
	}
	err = f.Chmod(FileMode) // CreateTemp's 0600 already; the umask cannot widen it
	if err == nil {
		err = write(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("results: writing %s: %w", path, err)
	}
	return nil
}

// WriteBytes writes b as the file at path (WriteFile).
func WriteBytes(path string, b []byte) error {
	return WriteFile(path, func(w io.Writer) error {
		_, err := io.Copy(w, bytes.NewReader(b))
		return err
	})
}

// MakeDir makes dir a folder to write results into: it creates dir and
// its missing parents DirMode, or, when dir exists, makes sure it is the
// user's own and nobody else's to write (ErrShared) and makes it, and it
// alone, DirMode. Nothing inside it is touched.
func MakeDir(dir string) error {
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, DirMode); err != nil {
			return fmt.Errorf("results: %w", err)
		}
		fi, err = os.Stat(dir)
	}
	if err != nil {
		return fmt.Errorf("results: %w", err)
	}
	if err := checkOwn(dir, fi); err != nil {
		return err
	}
	if fi.Mode().Perm() != DirMode {
		if err := os.Chmod(dir, DirMode); err != nil {
			return fmt.Errorf("results: %w", err)
		}
	}
	return nil
}

// checkOwn refuses a folder that is not a folder, another user's, or one
// another user can write into.
func checkOwn(dir string, fi fs.FileInfo) error {
	if !fi.IsDir() {
		return fmt.Errorf("%s is a file, not a folder", dir)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if fi.Mode().Perm()&0o022 != 0 || (ok && int(st.Uid) != os.Getuid()) {
		return fmt.Errorf("%s %w", dir, ErrShared)
	}
	return nil
}

// isResults reports whether dir holds a results folder of stampede's: its
// SummaryFile or BenchFile, as a file.
func isResults(dir string) (string, bool) {
	for _, name := range []string{SummaryFile, BenchFile} {
		if fi, err := os.Lstat(filepath.Join(dir, name)); err == nil && fi.Mode().IsRegular() {
			return name, true
		}
	}
	return "", false
}

// Open opens the file name of the results folder dir for reading, the one
// way a folder's files are read (summary.json has ReadSummary, the
// histogram logs ReadHistogramLogFile).
func Open(dir, name string) (*os.File, error) {
	return os.Open(filepath.Join(dir, name))
}

// ReadFile reads the file name of the results folder dir whole (Open).
func ReadFile(dir, name string) ([]byte, error) {
	return os.ReadFile(filepath.Join(dir, name))
}
