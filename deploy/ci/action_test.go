package ci

import (
	"encoding/xml"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stampede-dev/stampede/internal/testenv"
)

// action is the part of action.yml the test reads.
type action struct {
	Inputs map[string]struct {
		Required bool   `yaml:"required"`
		Default  string `yaml:"default"`
	} `yaml:"inputs"`
	Runs struct {
		Using string `yaml:"using"`
		Steps []struct {
			Name  string            `yaml:"name"`
			ID    string            `yaml:"id"`
			Uses  string            `yaml:"uses"`
			With  map[string]string `yaml:"with"`
			Shell string            `yaml:"shell"`
			Env   map[string]string `yaml:"env"`
			Run   string            `yaml:"run"`
		} `yaml:"steps"`
	} `yaml:"runs"`
}

var expr = regexp.MustCompile(`\$\{\{\s*([^}]*?)\s*\}\}`)

// expand replaces each ${{ NAME }} of s by ctx's value, as the runner
// does for the expressions the action uses; any other is an error.
func expand(t *testing.T, s string, ctx map[string]string) string {
	t.Helper()
	return expr.ReplaceAllStringFunc(s, func(m string) string {
		name := expr.FindStringSubmatch(m)[1]
		v, ok := ctx[name]
		if !ok {
			t.Fatalf("action.yml: expression %s is not one the test stands in for", m)
		}
		return v
	})
}

// TestAction runs the composite action's run steps from action.yml with
// bash, as a runner would: the inputs are given as the workflow's with:,
// the action's path is this repository, and the steps' env: is expanded.
// The drill runs against a bundled target on 127.0.0.1 that the restart
// command restarts abruptly, and must leave the JUnit file and the
// results folder the upload step names; the gate step fails the job on a
// drill's non-zero exit. The uses: steps (setup-go, upload-artifact) are
// checked, pinned to a major version, not run.
func TestAction(t *testing.T) {
	if testing.Short() {
		t.Skip("builds stampede and runs a 10 s drill (-short skips)")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		testenv.SkipUnlessRequired(t, "bash not found: the action's steps are bash")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	var a action
	readYAML(t, filepath.Join(root, "action.yml"), &a)
	if a.Runs.Using != "composite" {
		t.Fatalf("action.yml: runs.using %q, want composite", a.Runs.Using)
	}
	dir := t.TempDir()
	work, temp := filepath.Join(dir, "workspace"), filepath.Join(dir, "runner-temp")
	for _, d := range []string{work, temp} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	with := map[string]string{"at": "2s", "clients": "50", "duration": "10s", "policy": "exp:initial=100ms,max=1s,jitter=0.5"}
	ctx := map[string]string{"github.action_path": root, "runner.temp": temp}
	inputs := func(given bool) {
		for name, in := range a.Inputs {
			v, ok := with[name]
			if !ok {
				v = in.Default
			}
			if in.Required && !ok && given {
				t.Fatalf("input %s is required and the test gives none", name)
			}
			ctx["inputs."+name] = v
		}
	}
	inputs(false)
	outputs := filepath.Join(dir, "github_output")
	ran := 0
	for i, st := range a.Runs.Steps {
		if st.Uses != "" {
			if st.Uses == "actions/upload-artifact@v4" && ctx["inputs.url"] == "" {
				t.Error("the upload step comes before the drill")
			}
			if !regexp.MustCompile(`^actions/[a-z-]+@v\d+$`).MatchString(st.Uses) {
				t.Errorf("step %d uses %q: want an actions/ action pinned to its major version", i, st.Uses)
			}
			if strings.HasPrefix(st.Uses, "actions/upload-artifact@") {
				path := expand(t, st.With["path"], ctx)
				for _, want := range []string{ctx["inputs.junit"], ctx["inputs.results"]} {
					if !strings.Contains(path, want) {
						t.Errorf("the upload step's path %q does not name %s", path, want)
					}
				}
			}
			continue
		}
		if st.ID == "drill" {
			// The bundled target, from the stampede the action installed,
			// stands in for staging; the restart command restarts it
			// abruptly on its port.
			exe := filepath.Join(temp, "stampede-bin", "stampede")
			first := startTarget(t, exe, "--addr", "127.0.0.1:0")
			t.Cleanup(func() { killPIDFile(filepath.Join(dir, "target2.pid")) })
			with["url"] = "ws://" + first.Addr + "/ws"
			with["restart-command"] = deployCmd(exe, dir, first.Addr, first.PID)
			inputs(true)
		}
		if st.Shell != "bash" {
			t.Errorf("step %d (%s): shell %q, want bash", i, st.Name, st.Shell)
		}
		if strings.Contains(st.Run, "${{") {
			t.Fatalf("step %d (%s) has an expression in run: inputs must reach the shell through env:", i, st.Name)
		}
		os.WriteFile(outputs, nil, 0o600)
		env := append(os.Environ(), "GITHUB_OUTPUT="+outputs, "GITHUB_WORKSPACE="+work, "RUNNER_TEMP="+temp)
		for k, v := range st.Env {
			env = append(env, k+"="+expand(t, v, ctx))
		}
		err := runStep(work, env, st.Run)
		if st.Name == "Gate" {
			if err != nil {
				t.Fatalf("the gate failed a drill that passed: %v\ndrill exit-code %q", err, ctx["steps.drill.outputs.exit-code"])
			}
			// And it fails the job on a drill that did not pass.
			bad := append(env[:len(env):len(env)], "DRILL_EXIT=1")
			if runStep(work, bad, st.Run) == nil {
				t.Error("the gate step passed a drill that exited 1")
			}
			ran++
			continue
		}
		if err != nil {
			t.Fatalf("step %d (%s): %v", i, st.Name, err)
		}
		b, _ := os.ReadFile(outputs)
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, "="); ok && st.ID != "" {
				ctx["steps."+st.ID+".outputs."+k] = v
			}
		}
		ran++
	}
	if ran != 3 {
		t.Errorf("ran %d run steps, want 3 (install, drill, gate)", ran)
	}
	if got := ctx["steps.drill.outputs.exit-code"]; got != "0" {
		t.Errorf("the drill's exit-code output %q, want 0", got)
	}
	b, err := os.ReadFile(filepath.Join(work, "junit.xml"))
	if err != nil {
		t.Fatalf("no JUnit file: %v", err)
	}
	var r junitReport
	if err := xml.Unmarshal(b, &r); err != nil {
		t.Fatalf("junit.xml: %v", err)
	}
	tests := r.Tests
	for _, s := range r.Suites {
		tests += s.Tests
	}
	if tests < 3 { // the two default SLOs and the deploy
		t.Errorf("junit.xml has %d tests, want at least 3:\n%s", tests, b)
	}
	for _, f := range []string{"summary.json", "report.html"} {
		if _, err := os.Stat(filepath.Join(work, "stampede-results", "drill", f)); err != nil {
			t.Errorf("results folder: %v", err)
		}
	}
}

// runStep runs a step's script as the runner's bash shell does.
func runStep(dir string, env []string, script string) error {
	cmd := exec.Command("bash", "--noprofile", "--norc", "-e", "-o", "pipefail", "-c", script)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	if err != nil {
		return &stepError{err, tail(string(out), 4000)}
	}
	return nil
}

type stepError struct {
	err error
	out string
}

func (e *stepError) Error() string { return e.err.Error() + "\n--- output:\n" + e.out }

// killPIDFile kills the process whose PID the file holds, if any.
func killPIDFile(path string) {
	b, err := os.ReadFile(path)
	if err != nil {
		return
	}
	var pid int
	if _, err := fmt.Sscan(string(b), &pid); err == nil && pid > 0 {
		if p, err := os.FindProcess(pid); err == nil {
			p.Kill()
		}
	}
}
