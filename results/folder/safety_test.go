package folder

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/results/summary"
)

// aRun is a run of two clients with a connect and a TTR recorded, so
// that every histogram log of a folder is written.
func aRun() (*summary.Summary, *results.Report) {
	rep := results.NewReport(time.Unix(1_700_000_000, 0), 2)
	results.RecordLatency(rep.Connect, time.Millisecond)
	results.RecordLatency(rep.TTR, time.Second)
	return summary.Summarize(summary.Input{RunID: "r", Report: rep, End: time.Second}), rep
}

// outside is a file of the user's that no results folder holds: its
// content and mode are what the tests check nothing changed.
func outside(t *testing.T, mode os.FileMode) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "precious")
	if err := os.WriteFile(path, []byte("keep me\n"), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
	return path
}

// unchanged fails t when the file at path no longer holds "keep me" with
// mode.
func unchanged(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != "keep me\n" || fi.Mode().Perm() != mode {
		t.Errorf("%s changed: %q, mode %v (was mode %v)", path, b, fi.Mode().Perm(), mode)
	}
}

// TestWriteSymlinkPlanted: a symlink planted in an existing results
// folder, named as a file the folder gets (ttr.hlog, summary.json), is
// replaced by the file; the file it pointed to is not written through.
func TestWriteSymlinkPlanted(t *testing.T) {
	sum, rep := aRun()
	dir := t.TempDir()
	if err := Write(dir, Folder{Summary: sum}); err != nil { // an earlier run's folder
		t.Fatal(err)
	}
	target := outside(t, 0o600)
	for _, name := range []string{results.TTRLogFile, SummaryFile, TimelineFile} {
		os.Remove(filepath.Join(dir, name))
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := Write(dir, Folder{Summary: sum, Report: rep}); err != nil {
		t.Fatal(err)
	}
	unchanged(t, target, 0o600)
	for _, name := range []string{results.TTRLogFile, SummaryFile, TimelineFile} {
		if fi, err := os.Lstat(filepath.Join(dir, name)); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != FileMode {
			t.Errorf("%s: %v, %v; want a file of mode %v", name, fi.Mode(), err, FileMode)
		}
	}
	// A folder holding nothing but the planted link is no results folder:
	// refused before a run, with or without overwrite.
	planted := t.TempDir()
	if err := os.Symlink(target, filepath.Join(planted, results.TTRLogFile)); err != nil {
		t.Fatal(err)
	}
	for _, overwrite := range []bool{false, true} {
		if err := CheckFolder(planted, overwrite); !errors.Is(err, ErrNotResults) {
			t.Errorf("CheckFolder(planted, %v) = %v, want ErrNotResults", overwrite, err)
		}
	}
}

// TestCheckFolderNotResults: an --out that holds files of another kind
// (a script) is refused whatever overwrite says, and nothing in it
// changes; an empty folder of the user's, as from mktemp -d, is taken.
func TestCheckFolderNotResults(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "script.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(script, 0o755)
	for _, overwrite := range []bool{false, true} {
		if err := CheckFolder(dir, overwrite); !errors.Is(err, ErrNotResults) {
			t.Errorf("CheckFolder(a folder with a script, %v) = %v, want ErrNotResults", overwrite, err)
		}
	}
	if fi, _ := os.Stat(script); fi.Mode().Perm() != 0o755 {
		t.Errorf("script.sh mode %v, want 0755", fi.Mode().Perm())
	}
	if err := CheckFolder(t.TempDir(), false); err != nil {
		t.Errorf("CheckFolder(an empty folder of the user's) = %v", err)
	}
}

// TestCheckFolderShared: a folder another user can write into is
// refused, empty or not: a file could be planted in it meanwhile.
func TestCheckFolderShared(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	dir := filepath.Join(t.TempDir(), "shared")
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := CheckFolder(dir, true); !errors.Is(err, ErrShared) {
		t.Errorf("CheckFolder(0777) = %v, want ErrShared", err)
	}
	sum, _ := aRun()
	if err := Write(dir, Folder{Summary: sum}); !errors.Is(err, ErrShared) {
		t.Errorf("Write(0777) = %v, want ErrShared", err)
	}
}

// TestWriteChangesOnlyItsOwn: writing a results folder that holds a file
// of the user's (a script beside summary.json) leaves that file's mode
// alone: only what Write wrote is made private.
func TestWriteChangesOnlyItsOwn(t *testing.T) {
	sum, rep := aRun()
	dir := t.TempDir()
	if err := Write(dir, Folder{Summary: sum}); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "script.sh")
	if err := os.WriteFile(script, []byte("keep me\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(script, 0o755)
	sub := filepath.Join(dir, "notes")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(sub, 0o755)
	if err := Write(dir, Folder{Summary: sum, Report: rep}); err != nil {
		t.Fatal(err)
	}
	unchanged(t, script, 0o755)
	if fi, _ := os.Stat(sub); fi.Mode().Perm() != 0o755 {
		t.Errorf("notes/ mode %v, want 0755", fi.Mode().Perm())
	}
}

// TestWriteFileModeFromCreation: WriteFile's file is FileMode while it is
// being written, under a permissive umask, not only once it is done.
func TestWriteFileModeFromCreation(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	path := filepath.Join(t.TempDir(), "f")
	err := WriteFile(path, func(w io.Writer) error {
		fi, err := w.(*os.File).Stat()
		if err != nil {
			return err
		}
		if fi.Mode().Perm() != FileMode {
			t.Errorf("mode while written %v, want %v", fi.Mode().Perm(), FileMode)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
