package target

import (
	"os"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// After presizeFDTable the process's fd table holds the open-file limit's
// worth of fds (/proc/self/status FDSize), and no fd is left open.
func TestPresizeFDTable(t *testing.T) {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	want := int(min(lim.Cur, maxPresize))
	fds := func() int { ents, _ := os.ReadDir("/proc/self/fd"); return len(ents) }
	if size, _ := strconv.Atoi(procStatus(os.Getpid(), "FDSize")); size >= want {
		t.Skipf("the fd table already holds %d fds", size)
	}
	before := fds()
	presizeFDTable(0)
	size, _ := strconv.Atoi(procStatus(os.Getpid(), "FDSize"))
	if size < want {
		t.Errorf("FDSize %d after presizing, want at least %d (RLIMIT_NOFILE %d)", size, want, lim.Cur)
	}
	if after := fds(); after != before {
		t.Errorf("open fds %d -> %d: the copy was not closed", before, after)
	}
}
