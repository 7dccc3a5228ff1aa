package target

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stampede-dev/stampede/internal/testenv"
)

// fdTableChild makes this test binary run TestPresizeFDTable's check.
const fdTableChild = "STAMPEDE_FDTABLE_CHILD"

// After presizeFDTable the process's fd table holds the open-file limit's
// worth of fds (/proc/self/status FDSize), and no fd is left open. The
// check runs in a new process of this test binary: a server started by an
// earlier test has presized this one's table already, and the table never
// shrinks.
func TestPresizeFDTable(t *testing.T) {
	if os.Getenv(fdTableChild) == "1" {
		checkPresizeFDTable(t)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestPresizeFDTable$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), fdTableChild+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the check's process: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "--- SKIP") {
		testenv.SkipUnlessRequired(t, "%s", out)
	}
}

func checkPresizeFDTable(t *testing.T) {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	want := int(min(lim.Cur, maxPresize))
	fds := func() int { ents, _ := os.ReadDir("/proc/self/fd"); return len(ents) }
	if size, _ := strconv.Atoi(procStatus(os.Getpid(), "FDSize")); size >= want {
		t.Skipf("platform: the open-file limit (%d) is no larger than a new process's fd table (%d slots)", lim.Cur, size)
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

// procStatus returns one field of /proc/PID/status, e.g. "VmRSS".
func procStatus(pid int, field string) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
