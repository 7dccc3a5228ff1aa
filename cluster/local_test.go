package cluster

import (
	"os/exec"
	"testing"

	"golang.org/x/sys/unix"
)

// TestRenice: renice raises a child's niceness, and keeps one already
// higher (a coordinator run under nice 15 does not lift its agents).
func TestRenice(t *testing.T) {
	nice := func(pid int) int {
		prio, err := unix.Getpriority(unix.PRIO_PROCESS, pid)
		if err != nil {
			t.Fatal(err)
		}
		return 20 - prio
	}
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	pid := cmd.Process.Pid
	base := nice(pid)
	if err := renice(pid, base+3); err != nil {
		t.Fatal(err)
	}
	if got := nice(pid); got != base+3 {
		t.Fatalf("niceness %d after renice to %d", got, base+3)
	}
	if err := renice(pid, base+1); err != nil {
		t.Fatal(err)
	}
	if got := nice(pid); got != base+3 {
		t.Errorf("niceness %d after renice to %d below it; want %d kept", got, base+1, base+3)
	}
}
