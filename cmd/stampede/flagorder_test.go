package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/urfave/cli/v2"
)

// TestArgsFlagsFirst: flags after positional arguments are moved before
// them, with their values; bool flags take none; "--" ends the flags.
func TestArgsFlagsFirst(t *testing.T) {
	app := newApp(io.Discard, io.Discard)
	for _, tc := range []struct {
		name      string
		args, out string
	}{
		{"http retries after the URL", "http URL --retries 0", "http --retries 0 URL"},
		{"report out after the folders", "report A B --out x.html", "report --out x.html A B"},
		{"value with =", "http URL --retries=0", "http --retries=0 URL"},
		{"bool takes no value", "http URL --retry-post --retries 2", "http --retry-post --retries 2 URL"},
		{"bool with =false", "http URL --retry-after=false", "http --retry-after=false URL"},
		{"short flag with a value", "http URL -H X:1 -X POST", "http -H X:1 -X POST URL"},
		{"value that looks like a URL", "http --data URL2 URL", "http --data URL2 URL"},
		{"terminator", "http --retries 1 -- --not-a-flag", "http --retries 1 -- --not-a-flag"},
		{"args before the terminator", "report A --out x -- -B", "report --out x A -- -B"},
		{"already in order", "run --clients 5", "run --clients 5"},
		{"unknown command untouched", "nope A --x", "nope A --x"},
		{"stdin dash is an argument", "report - --out x", "report --out x -"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := append([]string{"stampede"}, strings.Fields(tc.args)...)
			got := strings.Join(flagsFirst(app, in)[1:], " ")
			if got != tc.out {
				t.Errorf("flagsFirst(%q) = %q, want %q", tc.args, got, tc.out)
			}
		})
	}
}

// TestArgsAfterURL: `stampede http URL --retries 0` sends one request, as
// the flag says, against a server that always answers 503.
func TestArgsAfterURL(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	var stdout, stderr bytes.Buffer
	code := runApp([]string{"stampede", "http", srv.URL, "--retries", "0", "--policy", "fixed:initial=1ms"}, &stdout, &stderr)
	if code != 1 || hits.Load() != 1 {
		t.Errorf("exit %d after %d requests, want exit 1 after 1\nstdout %s\nstderr %s", code, hits.Load(), stdout.String(), stderr.String())
	}
}

// TestVersion: stampede version prints the version, the commit and the Go
// version, one line each.
func TestVersion(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := runApp([]string{"stampede", "version"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	lines := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "stampede ") || !strings.HasPrefix(lines[1], "commit ") ||
		lines[2] != "go "+runtime.Version() {
		t.Errorf("stampede version printed %q", stdout.String())
	}

	for _, tc := range []struct {
		name string
		bi   *debug.BuildInfo
		want string
	}{
		{"stamped", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "4ec52bae"}, {Key: "vcs.modified", Value: "false"}}},
			"stampede v1.2.3\ncommit 4ec52bae\n"},
		{"modified tree", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "4ec52bae"}, {Key: "vcs.modified", Value: "true"}}},
			"stampede (devel)\ncommit 4ec52bae+modified\n"},
		{"installed at a commit", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20260101000000-0123456789ab"}},
			"stampede v0.0.0-20260101000000-0123456789ab\ncommit 0123456789ab\n"},
		{"a pre-release, no commit", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.0-rc-1"}}, "stampede v1.2.0-rc-1\ncommit unknown\n"},
		{"no vcs stamp", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "stampede (devel)\ncommit unknown\n"},
		{"no build info", nil, "stampede unknown\ncommit unknown\n"},
	} {
		var b bytes.Buffer
		writeVersion(&b, tc.bi)
		if want := tc.want + "go " + runtime.Version() + "\n"; b.String() != want {
			t.Errorf("%s: %q, want %q", tc.name, b.String(), want)
		}
	}
	if !slices.ContainsFunc(newApp(io.Discard, io.Discard).Commands, func(c *cli.Command) bool { return c.Name == "version" }) {
		t.Error("no version command")
	}
}
