package cluster

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// threadsEnv makes the test binary a child that holds several threads:
// the Go runtime's own, and busy goroutines each locked to one more.
const threadsEnv = "STAMPEDE_CLUSTER_TEST_THREADS"

func TestMain(m *testing.M) {
	if os.Getenv(threadsEnv) == "1" {
		for range 4 {
			go func() {
				runtime.LockOSThread()
				for {
					time.Sleep(time.Millisecond)
				}
			}()
		}
		time.Sleep(30 * time.Second)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// niceness returns thread tid's niceness.
func niceness(t *testing.T, tid int) int {
	t.Helper()
	prio, err := unix.Getpriority(unix.PRIO_PROCESS, tid)
	if err != nil {
		t.Fatal(err)
	}
	return 20 - prio
}

// TestRenice: renice raises a child's niceness, every thread of it, and
// keeps one already higher (a coordinator run under nice 15 does not
// lift its agents).
func TestRenice(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), threadsEnv+"=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	pid := cmd.Process.Pid
	var tids []int
	for deadline := time.Now().Add(10 * time.Second); len(tids) < 5; time.Sleep(10 * time.Millisecond) {
		var err error
		if tids, err = threads(pid); err != nil || time.Now().After(deadline) {
			t.Fatalf("the child has threads %v (%v), want at least 5", tids, err)
		}
	}
	base := niceness(t, pid)
	check := func(want int, what string) {
		t.Helper()
		tids, err := threads(pid)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, tid := range tids {
			if n := niceness(t, tid); n != want {
				got = append(got, fmt.Sprintf("thread %d at %d", tid, n))
			}
		}
		if len(got) > 0 {
			t.Errorf("%s: %v of %d threads; want every one at %d", what, got, len(tids), want)
		}
	}
	if err := renice(pid, base+3); err != nil {
		t.Fatal(err)
	}
	check(base+3, fmt.Sprintf("after renice to %d", base+3))
	if err := renice(pid, base+1); err != nil {
		t.Fatal(err)
	}
	check(base+3, fmt.Sprintf("after renice to %d, below it", base+1))
}
