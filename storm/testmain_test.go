package storm_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// stampedeExe is the stampede binary TestMain builds once: storm.Run starts
// it as target and loadgen worker processes (storm.Config.Exe).
var stampedeExe string

// TestMain builds ./cmd/stampede once into a temporary folder (without the
// race detector: the children are real processes, not the code under test
// of this package), runs the tests and removes the folder.
func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "storm-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "storm tests:", err)
		return 2
	}
	defer os.RemoveAll(dir)
	stampedeExe = filepath.Join(dir, "stampede")
	build := exec.Command("go", "build", "-o", stampedeExe, "github.com/stampede-dev/stampede/cmd/stampede")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "storm tests: building the stampede binary:", err)
		return 2
	}
	return m.Run()
}
