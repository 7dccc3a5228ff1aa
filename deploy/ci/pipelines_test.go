package ci

import (
	"bufio"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/internal/testenv"
	"gopkg.in/yaml.v3"
)

// githubWorkflow is the part of a GitHub Actions workflow the test runs.
type githubWorkflow struct {
	Jobs map[string]struct {
		Env   map[string]string `yaml:"env"`
		Steps []struct {
			Name string `yaml:"name"`
			Uses string `yaml:"uses"`
			Run  string `yaml:"run"`
		} `yaml:"steps"`
	} `yaml:"jobs"`
}

// gitlabJob is the part of a GitLab CI job the test runs.
type gitlabJob struct {
	Variables    map[string]string `yaml:"variables"`
	BeforeScript []string          `yaml:"before_script"`
	Script       []string          `yaml:"script"`
	Artifacts    struct {
		Paths   []string          `yaml:"paths"`
		Reports map[string]string `yaml:"reports"`
	} `yaml:"artifacts"`
}

func readYAML(t *testing.T, name string, v any) {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// githubCommands returns the shell of each run step of the drill job and
// the environment variables the job declares.
func githubCommands(t *testing.T) (cmds []string, env map[string]string) {
	var w githubWorkflow
	readYAML(t, "github-actions.yml", &w)
	job, ok := w.Jobs["drill"]
	if !ok {
		t.Fatal("github-actions.yml: no job drill")
	}
	for _, s := range job.Steps {
		if s.Run != "" {
			cmds = append(cmds, s.Run)
		}
	}
	return cmds, job.Env
}

// gitlabCommands returns the drill job's before_script and script as one
// shell script (GitLab runs them in one shell), and its variables.
func gitlabCommands(t *testing.T, file, name string) (cmds []string, vars map[string]string, job gitlabJob) {
	var f map[string]yaml.Node
	readYAML(t, file, &f)
	n, ok := f[name]
	if !ok {
		t.Fatalf("%s: no job %s", file, name)
	}
	if err := n.Decode(&job); err != nil {
		t.Fatalf("%s: %s: %v", file, name, err)
	}
	lines := append(append([]string{}, job.BeforeScript...), job.Script...)
	return []string{strings.Join(lines, "\n")}, job.Variables, job
}

// readyLine is the target's first line on stdout.
type readyLine struct {
	Ready bool   `json:"ready"`
	Addr  string `json:"addr"`
	PID   int    `json:"pid"`
}

// startTarget starts the bundled target on a free loopback port and
// returns its ready line once it accepts.
func startTarget(t *testing.T, exe string, args ...string) readyLine {
	t.Helper()
	cmd := exec.Command(exe, append([]string{"target"}, args...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	ready := make(chan readyLine, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var r readyLine
			if json.Unmarshal(sc.Bytes(), &r) == nil && r.Ready {
				ready <- r
			}
		}
		_ = cmd.Wait() // reaped at once, so the deploy's kill -0 sees it gone
		close(done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})
	select {
	case r := <-ready:
		return r
	case <-time.After(20 * time.Second):
		t.Fatal("target: no ready line")
		return readyLine{}
	}
}

// deployCmd is the staging deploy of the test: an abrupt restart of the
// target on the same port (its clients see 1006), returning when the new
// process accepts. It is run by the drill as sh -c, so POSIX sh.
func deployCmd(exe, dir, addr string, pid int) string {
	return fmt.Sprintf(`kill -USR1 %[4]d; while kill -0 %[4]d 2>/dev/null; do sleep 0.05; done
%[1]q target --addr %[3]s </dev/null >%[2]q/target2.out 2>&1 &
echo $! >%[2]q/target2.pid
i=0; until grep -q '"ready":true' %[2]q/target2.out; do i=$((i+1)); [ $i -lt 200 ] || exit 1; sleep 0.05; done`,
		exe, dir, addr, pid)
}

// junitReport is the part of a JUnit file the test checks.
type junitReport struct {
	XMLName xml.Name
	Suites  []struct {
		Tests int `xml:"tests,attr"`
	} `xml:"testsuite"`
	Tests int `xml:"tests,attr"`
}

// TestPipelines runs each example pipeline's commands, unchanged, with
// bash, as its CI would: the staging URL is a bundled target on
// 127.0.0.1, the deploy restarts it, and the drill must pass its SLOs and
// leave the JUnit file and the results folder the artifacts name.
func TestPipelines(t *testing.T) {
	if testing.Short() {
		t.Skip("builds stampede and runs two 10 s drills (-short skips)")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		testenv.SkipUnlessRequired(t, "bash not found: the jobs' commands are bash")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	exe := filepath.Join(bin, "stampede")
	if b, err := exec.Command("make", "-s", "-C", root, "release", "RELEASE_DIR="+bin).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}

	for _, ci := range []string{"github", "gitlab", "gitlab-template"} {
		t.Run(ci, func(t *testing.T) {
			dir := t.TempDir()
			first := startTarget(t, exe, "--addr", "127.0.0.1:0")
			addr := first.Addr
			// The deploy's own target: stopped by PID when the test ends.
			t.Cleanup(func() {
				if b, err := os.ReadFile(filepath.Join(dir, "target2.pid")); err == nil {
					var pid int
					if _, err := fmt.Sscan(string(b), &pid); err == nil && pid > 0 {
						if p, err := os.FindProcess(pid); err == nil {
							_ = p.Kill()
						}
					}
				}
			})

			env := map[string]string{
				"STAGING_URL":    "ws://" + addr + "/ws",
				"STAGING_HOST":   "127.0.0.1",
				"DEPLOY_CMD":     deployCmd(exe, dir, addr, first.PID),
				"DRILL_CLIENTS":  "50",
				"DRILL_AT":       "2s",
				"DRILL_DURATION": "10s",
			}
			var cmds []string
			var declared map[string]string
			var work string
			switch ci {
			case "github":
				cmds, declared = githubCommands(t)
				// actions/checkout: the workspace is a clone of this
				// repository.
				work = filepath.Join(dir, "workspace")
				if b, err := exec.Command("git", "clone", "-q", root, work).CombinedOutput(); err != nil {
					t.Fatalf("git clone: %v\n%s", err, b)
				}
			case "gitlab-template":
				// The template (gitlab-stampede.yml) as a job extending it
				// would run: its variables, the inputs set as a user would.
				var job gitlabJob
				cmds, declared, job = gitlabCommands(t, "gitlab-stampede.yml", ".stampede-drill")
				if job.Artifacts.Reports["junit"] != "$STAMPEDE_JUNIT" {
					t.Errorf("gitlab-stampede.yml: artifacts:reports:junit %q", job.Artifacts.Reports["junit"])
				}
				work = filepath.Join(dir, "project")
				if err := os.Mkdir(work, 0o755); err != nil {
					t.Fatal(err)
				}
				// STAMPEDE_REF names a branch of a clone of this tree.
				src := filepath.Join(dir, "src")
				if b, err := exec.Command("git", "clone", "-q", root, src).CombinedOutput(); err != nil {
					t.Fatalf("git clone: %v\n%s", err, b)
				}
				if b, err := exec.Command("git", "-C", src, "branch", "-f", "stampede-test-ref").CombinedOutput(); err != nil {
					t.Fatalf("git branch: %v\n%s", err, b)
				}
				env = map[string]string{"CI_PROJECT_DIR": work, "STAMPEDE_REPO": src, "STAMPEDE_REF": "stampede-test-ref",
					"STAMPEDE_URL": env["STAGING_URL"], "STAMPEDE_RESTART_CMD": env["DEPLOY_CMD"], "STAMPEDE_AT": "2s",
					"STAMPEDE_CLIENTS": "50", "STAMPEDE_DURATION": "10s", "STAMPEDE_POLICY": "exp:initial=100ms,max=1s,jitter=0.5"}
				for k, v := range declared {
					if _, ok := env[k]; !ok {
						env[k] = v
					}
				}
			case "gitlab":
				var job gitlabJob
				cmds, declared, job = gitlabCommands(t, "gitlab-ci.yml", "stampede-drill")
				if job.Artifacts.Reports["junit"] != "junit.xml" {
					t.Errorf("gitlab-ci.yml: artifacts:reports:junit %q, want junit.xml", job.Artifacts.Reports["junit"])
				}
				work = filepath.Join(dir, "project")
				if err := os.Mkdir(work, 0o755); err != nil {
					t.Fatal(err)
				}
				env["CI_PROJECT_DIR"] = work
				env["STAMPEDE_REPO"] = root
				// The job's own variables, as GitLab sets them, where the
				// test sets none (ours stand in for project variables).
				for k, v := range declared {
					if _, ok := env[k]; !ok {
						env[k] = v
					}
				}
			}
			// Every variable the pipeline declares is one the test gives.
			for k := range declared {
				if _, ok := env[k]; !ok {
					t.Errorf("%s declares %s, which the test does not set", ci, k)
				}
			}
			environ := os.Environ()
			for k, v := range env {
				environ = append(environ, k+"="+v)
			}
			for i, c := range cmds {
				if strings.Contains(c, "${{") {
					t.Fatalf("%s step %d uses a workflow expression: the commands must read environment variables only:\n%s", ci, i, c)
				}
				cmd := exec.Command("bash", "-e", "-o", "pipefail", "-c", c)
				cmd.Dir, cmd.Env = work, environ
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("%s step %d: %v\n%s\n--- output:\n%s", ci, i, err, c, tail(string(out), 4000))
				}
				t.Logf("%s step %d: ok", ci, i)
			}

			b, err := os.ReadFile(filepath.Join(work, "junit.xml"))
			if err != nil {
				t.Fatalf("%s: no JUnit file: %v", ci, err)
			}
			var r junitReport
			if err := xml.Unmarshal(b, &r); err != nil {
				t.Fatalf("%s: junit.xml: %v", ci, err)
			}
			tests := r.Tests
			for _, s := range r.Suites {
				tests += s.Tests
			}
			if tests < 3 { // two SLOs and the deploy
				t.Errorf("%s: junit.xml has %d tests, want at least 3:\n%s", ci, tests, b)
			}
			if _, err := os.Stat(filepath.Join(work, "stampede-results", "drill", "summary.json")); err != nil {
				t.Errorf("%s: results folder: %v", ci, err)
			}
		})
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}
