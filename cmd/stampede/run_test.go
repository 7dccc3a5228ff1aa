package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestRunBadFlags: run and bench check the target's and the fleet's
// configuration before any process starts, and name the flag at fault in
// one line, as target and loadgen do.
func TestRunBadFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"run backlog", []string{"run", "--backlog", "-1"}, "stampede: --backlog: "},
		{"run msg size", []string{"run", "--mode", "echo", "--msg-size", "3"}, "stampede: --msg-size: "},
		{"run chaos", []string{"run", "--chaos", "at 5s restart abrupt down=2x"}, "stampede: --chaos: "},
		{"bench backlog", []string{"bench", "--backlog", "-1"}, "stampede: --backlog: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := runApp(append([]string{"stampede"}, tc.args...), &stdout, &stderr)
			if code != 2 || !strings.HasPrefix(stderr.String(), tc.want) || strings.Count(stderr.String(), "\n") != 1 {
				t.Errorf("exit %d, stderr %q; want 2 and one line starting %q", code, stderr.String(), tc.want)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout %q: nothing should have run", stdout.String())
			}
		})
	}
}
