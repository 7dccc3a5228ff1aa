package hoststat

import (
	"os"
	"testing"
)

// countFDs counts this process's open files as /proc lists them: opening
// files adds exactly as many.
func TestCountFDs(t *testing.T) {
	pid := int32(os.Getpid())
	before, err := countFDs(pid)
	if err != nil || before < 3 {
		t.Fatalf("countFDs = %d, %v", before, err)
	}
	const extra = 700 // more than one getdents buffer of entries
	for range extra {
		f, err := os.Open(os.DevNull)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
	}
	after, err := countFDs(pid)
	if err != nil {
		t.Fatal(err)
	}
	if after-before != extra {
		t.Fatalf("countFDs went from %d to %d after opening %d files", before, after, extra)
	}
	if _, err := countFDs(-1); err == nil {
		t.Fatal("countFDs of no process gave no error")
	}
}
