package agent

import (
	"fmt"
	"os"
	"path/filepath"
)

// WorkerBinary is the lean loadgen agent looked for beside the stampede
// binary (cmd/stampede-worker).
const WorkerBinary = "stampede-worker"

// Command returns how to start an agent of role on this machine: exe (the
// stampede binary; empty means this executable) with its hidden "agent"
// subcommand, or for a loadgen share the lean worker: lean when it is
// executable, or, with no lean given, WorkerBinary beside exe when it is
// there.
func Command(exe, lean string, role Role) (string, []string, error) {
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return "", nil, fmt.Errorf("agent: finding the stampede binary: %w", err)
		}
	}
	if role != RoleLoadgen {
		return exe, []string{"agent"}, nil
	}
	if lean != "" {
		if isExecutable(lean) {
			return lean, []string{}, nil
		}
	} else if lean, ok := leanBeside(exe); ok {
		return lean, []string{}, nil
	}
	return exe, []string{"agent"}, nil
}

// leanBeside returns the lean worker binary installed beside exe, if any.
func leanBeside(exe string) (string, bool) {
	lean := filepath.Join(filepath.Dir(exe), WorkerBinary)
	return lean, isExecutable(lean)
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}
