package agent

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stampede-dev/stampede/spec"
	"github.com/stampede-dev/stampede/target"
)

// A target process without a store runs in the lean worker when it is
// installed beside the stampede binary; with a store, or without the
// worker, in `stampede agent`.
func TestServerCommand(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "stampede")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	agent := []string{"agent"}
	check := func(name string, cfg target.Config, wantExe string, wantArgs []string) {
		t.Helper()
		gotExe, gotArgs := serverCommand(exe, agent, cfg)
		if gotExe != wantExe || !slices.Equal(gotArgs, wantArgs) {
			t.Errorf("%s: %s %v, want %s %v", name, gotExe, gotArgs, wantExe, wantArgs)
		}
	}
	check("no worker installed", target.Config{}, exe, agent)
	lean := filepath.Join(dir, WorkerBinary)
	if err := os.WriteFile(lean, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	check("echo server", target.Config{}, lean, []string{})
	check("server with a store", target.Config{Server: spec.Server{Store: "redis://127.0.0.1:6379/0"}}, exe, agent)
	if err := os.Chmod(lean, 0o644); err != nil {
		t.Fatal(err)
	}
	check("worker not executable", target.Config{}, exe, agent)
}
