package drill

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDeploy: the command's output is kept and logged with secrets
// scrubbed, its exit status makes the event and the check, deploy.log is
// 0600; a command over its timeout is killed and fails.
func TestDeploy(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cmd     string
		timeout time.Duration
		ok      bool
		exit    string
	}{
		{"exit 0", "echo out; echo token=s3cr3t >&2", 0, true, "exit status 0"},
		{"exit 2", "echo failing; exit 2", 0, false, "exit status 2"},
		{"timeout", "echo slow; sleep 20", 300 * time.Millisecond, false, "killed: the restart timeout 300ms passed"},
		{"not found", "/nonexistent/deploy", 0, false, "exit status 127"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log bytes.Buffer
			d := &Deploy{Command: tc.cmd, At: 50 * time.Millisecond, Timeout: tc.timeout, Log: &syncWriter{w: &log}, Secrets: []string{"s3cr3t"}}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			start := time.Now()
			d.Run(ctx, start)
			if time.Since(start) > 8*time.Second {
				t.Errorf("Run took %s", time.Since(start))
			}
			ev := d.Events()
			if len(ev) != 1 || ev[0].Kind != "deploy" || ev[0].Exit != tc.exit || ev[0].Start < 50*time.Millisecond || ev[0].End < ev[0].Start || ev[0].Ready != ev[0].End {
				t.Errorf("events %+v; want one deploy, exit %q", ev, tc.exit)
			}
			if c := d.Checks(nil); len(c) != 1 || c[0].Pass != tc.ok || !strings.Contains(c[0].Detail, tc.exit) {
				t.Errorf("checks %+v; want pass %v", c, tc.ok)
			}
			dir := t.TempDir()
			if err := d.WriteFiles(dir); err != nil {
				t.Fatal(err)
			}
			fi, err := os.Stat(filepath.Join(dir, DeployLogFile))
			if err != nil || fi.Mode().Perm() != 0o600 {
				t.Fatalf("deploy.log: %v, %v", fi, err)
			}
			b, _ := os.ReadFile(filepath.Join(dir, DeployLogFile))
			for _, text := range []string{string(b), log.String()} {
				if strings.Contains(text, "s3cr3t") || !strings.Contains(text, tc.exit) {
					t.Errorf("output %q: want the exit status and no secret", text)
				}
			}
			if tc.name == "exit 0" && (!strings.Contains(log.String(), "deploy: token=<redacted>\n") || !strings.Contains(string(b), "out\n")) {
				t.Errorf("log %q file %q", log.String(), b)
			}
		})
	}
}

// TestDeployRunEndsFirst: a run that ends before --at never starts the
// command, and the check fails saying so.
func TestDeployRunEndsFirst(t *testing.T) {
	d := &Deploy{Command: "true", At: time.Hour}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	d.Run(ctx, time.Now())
	if len(d.Events()) != 0 {
		t.Errorf("events %+v; want none", d.Events())
	}
	if c := d.Checks(nil); c[0].Pass || !strings.Contains(c[0].Detail, "not started") {
		t.Errorf("check %+v", c)
	}
}

type syncWriter struct{ w *bytes.Buffer }

func (s *syncWriter) Write(p []byte) (int, error) { return s.w.Write(p) }

// TestDeployCommandNotInArgv: the shell that runs the deploy command gets
// it on a pipe, not in its arguments or environment: the command prints
// its own shell's /proc/PID/cmdline and environ, and neither holds the
// command's text (a token inside a command would be there otherwise).
func TestDeployCommandNotInArgv(t *testing.T) {
	var log bytes.Buffer
	cmd := ": marker-in-command; tr '\\0' ' ' </proc/$$/cmdline; echo; tr '\\0' ' ' </proc/$$/environ; echo; echo done"
	d := &Deploy{Command: cmd, Log: &syncWriter{w: &log}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d.Run(ctx, time.Now())
	out := log.String()
	if !strings.Contains(out, "/bin/sh -c") || !strings.Contains(out, "deploy: done") {
		t.Fatalf("the command did not print its shell's command line:\n%s", out)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "deploy: ") && strings.Contains(line, "marker-in-command") {
			t.Errorf("the command's text is in its shell's arguments or environment: %q", line)
		}
	}
}
