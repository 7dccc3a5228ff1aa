package kubernetes

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/commands.json from the manifests")

// CommandsFile holds every agent's command line and environment as the
// manifests give them (JobCommand at each completion index), with the two
// values that differ off the cluster left as the placeholders TokenFileVar,
// NATSURLVar and NATSCAVar. Tests of the main module (storm's several-host test)
// start their agents from it without importing the Kubernetes API
// modules; TestCommandsFile keeps it equal to the manifests.
const CommandsFile = "testdata/commands.json"

// The placeholders of CommandsFile: a test replaces them by its token
// file and its coordinator's URL.
const (
	TokenFileVar = "{{token-file}}"
	NATSURLVar   = "{{nats-url}}"
	NATSCAVar    = "{{nats-ca}}"
)

// jobCommand is one agent's entry in CommandsFile.
type jobCommand struct {
	Args []string `json:"args"`
	Env  []string `json:"env"`
}

// TestCommandsFile: testdata/commands.json is what the manifests resolve
// to, index by index; go test -run TestCommandsFile -update rewrites it
// after a manifest changes.
func TestCommandsFile(t *testing.T) {
	f := load(t)
	all := map[string][]jobCommand{}
	for job := range agentJobs {
		for i := range int(*f.Jobs[job].Spec.Completions) {
			args, env, err := JobCommand(job, i, TokenFileVar, NATSURLVar, NATSCAVar)
			if err != nil {
				t.Fatal(err)
			}
			all[job] = append(all[job], jobCommand{Args: args, Env: env})
		}
	}
	want, err := json.MarshalIndent(all, "", "\t")
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, '\n')
	if *update {
		if err := os.WriteFile(CommandsFile, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(CommandsFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the manifests' commands (go test -run TestCommandsFile -update rewrites it):\n%s", CommandsFile, want)
	}
}
