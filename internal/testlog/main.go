// Command testlog runs `go test -json` with its arguments and prints what
// a CI log needs: the per-package lines of plain `go test` (ok, FAIL, ?),
// the whole output of every failed test and failed package, build errors
// as they come, and at the end every skipped test with its message:
//
//	go test -json ARGS --> events --> ok/FAIL/? lines, failed tests' output
//	                             \-> skipped: N tests, one line per skip
//
// Plain `go test` without -v never says that a test skipped, so a skip
// under STAMPEDE_REQUIRE_SERVICES=1 would pass unseen. testlog exits with
// the status of `go test` (1 if that was 0 but a test failed) and passes
// SIGINT and SIGTERM on to it and the test binaries it runs (its process
// group: go test does not pass SIGTERM on). $GO names the go command
// (default go).
//
// Usage, from a module's directory:
//
//	go run ./internal/testlog -race -shuffle=on ./...
package main

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"syscall"
)

func main() {
	os.Exit(run("", os.Args[1:], os.Stdout, os.Stderr))
}

// run runs `go test -json args` in dir ("" for the current one), prints
// its events to stdout and its stderr to stderr, and returns the exit
// status.
func run(dir string, args []string, stdout, stderr io.Writer) int {
	cmd := exec.Command(cmp.Or(os.Getenv("GO"), "go"), append([]string{"test", "-json"}, args...)...)
	cmd.Dir = dir
	cmd.Stderr = stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(stderr, "testlog:", err)
		return 1
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(stderr, "testlog:", err)
		return 1
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		for s := range sigs {
			_ = syscall.Kill(-cmd.Process.Pid, s.(syscall.Signal))
		}
	}()
	p := newPrinter(stdout)
	r := bufio.NewReader(pipe)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			p.handle(line)
		}
		if err != nil {
			break
		}
	}
	err = cmd.Wait()
	signal.Stop(sigs)
	close(sigs)
	p.summary()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit) && exit.ExitCode() > 0:
		return exit.ExitCode()
	case err != nil:
		fmt.Fprintln(stderr, "testlog: go test:", err)
		return 1
	case p.failed > 0:
		return 1
	}
	return 0
}

// event is what testlog reads of one `go test -json` line (see
// `go doc test2json`); ImportPath is set on build output instead of
// Package.
type event struct {
	Action     string
	Package    string
	Test       string
	Output     string
	ImportPath string
}

// output is one output event of a package: the test it belongs to ("" for
// the package itself) and its text.
type output struct{ test, text string }

// pkg is a package whose test binary has not finished: its output so far
// and how each test ended ("pass", "fail" or "skip"; none while it runs).
type pkg struct {
	out   []output
	ended map[string]string
}

// printer turns events into the log.
type printer struct {
	w      io.Writer
	pkgs   map[string]*pkg
	skips  []string // "pkg Test: message", in the order they came
	failed int      // failed tests and packages
}

func newPrinter(w io.Writer) *printer {
	return &printer{w: w, pkgs: map[string]*pkg{}}
}

// handle takes one line of the child's stdout. A line that is not an event
// (such as a build error printed by an older go) is printed as it is.
func (p *printer) handle(line []byte) {
	var e event
	if !bytes.HasPrefix(line, []byte("{")) || json.Unmarshal(line, &e) != nil {
		p.w.Write(line)
		return
	}
	if e.Action == "build-output" {
		io.WriteString(p.w, e.Output)
		return
	}
	if e.Package == "" {
		return
	}
	k := p.pkgs[e.Package]
	if k == nil {
		k = &pkg{ended: map[string]string{}}
		p.pkgs[e.Package] = k
	}
	switch {
	case e.Action == "output":
		k.out = append(k.out, output{e.Test, e.Output})
	case e.Test != "" && (e.Action == "pass" || e.Action == "fail" || e.Action == "skip"):
		k.ended[e.Test] = e.Action
		if e.Action == "fail" {
			p.failed++
		}
		if e.Action == "skip" {
			p.skips = append(p.skips, fmt.Sprintf("%s %s: %s", e.Package, e.Test, k.message(e.Test)))
		}
	case e.Test == "" && (e.Action == "pass" || e.Action == "skip" || e.Action == "fail"):
		p.finish(e.Package, k, e.Action == "fail")
	}
}

// finish prints a package whose test binary ended: its ok or ? line when
// it passed, else its own output and that of its tests that failed or
// never ended (a timeout's panic is the running test's), in order.
func (p *printer) finish(name string, k *pkg, failed bool) {
	delete(p.pkgs, name)
	if failed {
		p.failed++
	}
	for _, o := range k.out {
		status := o.test == "" && (strings.HasPrefix(o.text, "ok  ") || strings.HasPrefix(o.text, "?   "))
		shown := o.test == "" || k.ended[o.test] == "" || k.ended[o.test] == "fail"
		if failed && shown || status {
			io.WriteString(p.w, o.text)
		}
	}
}

// message is what test printed, without the === and --- lines go test
// frames it with: for a skipped test, why it skipped.
func (k *pkg) message(test string) string {
	var text strings.Builder
	for _, o := range k.out {
		if o.test == test {
			text.WriteString(o.text)
		}
	}
	var lines []string
	for l := range strings.Lines(text.String()) {
		l = strings.TrimSpace(l)
		if l != "" && !strings.HasPrefix(l, "=== ") && !strings.HasPrefix(l, "--- ") {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		return "(no message)"
	}
	return strings.Join(lines, "; ")
}

// summary prints each package that never finished (go test was killed)
// as failed, then the skipped tests.
func (p *printer) summary() {
	for _, name := range slices.Sorted(maps.Keys(p.pkgs)) {
		fmt.Fprintf(p.w, "testlog: %s did not finish\n", name)
		p.finish(name, p.pkgs[name], true)
	}
	fmt.Fprintf(p.w, "skipped: %d tests\n", len(p.skips))
	for _, s := range p.skips {
		fmt.Fprintln(p.w, s)
	}
}
