package hoststat

import (
	"os"
	"os/exec"
	"strconv"
	"testing"
)

// countFDs counts a process's open files as /proc lists them: a child
// given 700 extra files (more than one getdents buffer of entries) holds
// exactly as many as the directory lists, at least 3+700. The child, not
// this process: other tests open files here meanwhile.
func TestCountFDs(t *testing.T) {
	const extra = 700
	cmd := exec.Command("sleep", "30")
	for range extra {
		f, err := os.Open(os.DevNull)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		cmd.ExtraFiles = append(cmd.ExtraFiles, f)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	pid := cmd.Process.Pid
	listed := func() int64 {
		ents, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
		if err != nil {
			t.Fatal(err)
		}
		return int64(len(ents))
	}
	// The child's loader opens a file or two for a moment as it starts:
	// count when /proc lists the same before and after.
	var got, before int64
	var err error
	for range 100 {
		before = listed()
		if got, err = countFDs(int32(pid)); err != nil {
			t.Fatal(err)
		}
		if listed() == before {
			break
		}
	}
	if got != before || got < 3+extra {
		t.Fatalf("countFDs = %d; /proc lists %d, and the child holds at least %d", got, before, 3+extra)
	}
	// The fallback of kernels before 6.2 (no count in the directory's
	// size) counts the same.
	if n, err := countDirFDs("/proc/" + strconv.Itoa(pid) + "/fd"); err != nil || n != got {
		t.Fatalf("countDirFDs = %d, %v; countFDs %d", n, err, got)
	}
	if _, err := countFDs(-1); err == nil {
		t.Fatal("countFDs of no process gave no error")
	}
}
