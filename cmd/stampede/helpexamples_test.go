package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/stampede-dev/stampede/childproc"
	"github.com/stampede-dev/stampede/results"
)

// shellWords splits a command line as sh does for the quoting help texts
// use: 'single', "double" and \-escapes; no expansion.
func shellWords(line string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(line); i++ {
		switch c := line[i]; {
		case c == ' ' || c == '\t':
			if inWord {
				words, inWord = append(words, cur.String()), false
				cur.Reset()
			}
		case c == '\'' || c == '"':
			end := strings.IndexByte(line[i+1:], c)
			if end < 0 {
				return nil, fmt.Errorf("unterminated %c in %q", c, line)
			}
			cur.WriteString(line[i+1 : i+1+end])
			i, inWord = i+1+end, true
		case c == '\\' && i+1 < len(line):
			cur.WriteByte(line[i+1])
			i, inWord = i+1, true
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// helpText is `stampede CMD --help`.
func helpText(t *testing.T, cmd string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := runApp([]string{"stampede", cmd, "--help"}, &stdout, &stderr); code != 0 {
		t.Fatalf("%s --help: exit %d: %s", cmd, code, stderr.String())
	}
	return stdout.String()
}

// exampleLabel starts an example's line: "Example: ", "Example (20 s on a
// laptop): ".
var exampleLabel = regexp.MustCompile(`^Example(?: \([^)]*\))?: `)

// helpExamples returns the example command lines of a help text: its
// lines (outside USAGE, whose synopses hold placeholders) that start with
// prog, or with "Example: " and prog, continued over lines ending in `\`
// and split at "; ".
func helpExamples(help, prog string) []string {
	var out []string
	var cont string
	section := ""
	for _, line := range strings.Split(help, "\n") {
		if !strings.HasPrefix(line, " ") && strings.HasSuffix(line, ":") {
			section = line
			continue
		}
		l := strings.TrimSpace(line)
		if cont != "" {
			l, cont = cont+" "+l, ""
		} else {
			l = exampleLabel.ReplaceAllString(l, "")
			if section == "NAME:" || section == "USAGE:" || !strings.HasPrefix(l, prog+" ") {
				continue
			}
		}
		if strings.HasSuffix(l, `\`) {
			cont = strings.TrimSpace(strings.TrimSuffix(l, `\`))
			continue
		}
		for _, ex := range strings.Split(l, "; ") {
			out = append(out, strings.TrimSpace(ex))
		}
	}
	return out
}

// parseOnly runs args (from "stampede") through the real app, flag
// parser, --config hook and checks before the action, with cmd's action
// replaced by one that only records it was reached.
func parseOnly(args []string) error {
	app := newApp(io.Discard, io.Discard)
	app.Commands = slices.Clone(app.Commands)
	reached := false
	for i, c := range app.Commands {
		if len(args) > 1 && c.Name == args[1] {
			cp := *c
			cp.Action = func(*cli.Context) error { reached = true; return nil }
			app.Commands[i] = &cp
		}
	}
	if err := app.Run(flagsFirst(app, args)); err != nil {
		return err
	}
	if !reached {
		return fmt.Errorf("no command ran")
	}
	return nil
}

// TestHelpExamples: every `stampede ...` example in every command's
// --help parses with the real flag parser as written; the cheap ones
// (hlog) also run, in a folder holding the files they name.
func TestHelpExamples(t *testing.T) {
	seen := 0
	for _, c := range newApp(io.Discard, io.Discard).Commands {
		examples := helpExamples(helpText(t, c.Name), "stampede")
		if len(examples) == 0 && !slices.Contains(noExample, c.Name) {
			t.Errorf("%s --help has no example", c.Name)
		}
		for _, ex := range examples {
			seen++
			args, err := shellWords(ex)
			if err != nil {
				t.Errorf("%s --help: %v", c.Name, err)
				continue
			}
			if err := parseOnly(args); err != nil {
				t.Errorf("%s --help: %q does not parse: %v", c.Name, ex, err)
			}
			if args[1] == "hlog" {
				runHlogExample(t, args)
			}
		}
	}
	if seen < 4 {
		t.Errorf("%d examples found in the help texts; want at least run, simulate, agent and hlog's", seen)
	}
}

// noExample are the commands whose --help shows no stampede command line:
// version takes nothing; target's and proxy's examples are curl lines
// (TestHelpCurlExamples).
var noExample = []string{"version", "target", "proxy", "help"}

// runHlogExample runs an hlog example in a folder where out/ is a
// simulation's results folder with one agent's copy, globs expanded as a
// shell would.
func runHlogExample(t *testing.T, args []string) {
	t.Helper()
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	if code, _, stderr := runSimulate(t, "--clients", "100", "--duration", "2s", "--out", out, "-q"); code != 0 {
		t.Fatalf("simulate: exit %d: %s", code, stderr)
	}
	if err := os.MkdirAll(filepath.Join(out, "agents", "loadgen-0"), 0o700); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(out, results.TTRLogFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, "agents", "loadgen-0", results.TTRLogFile), b, 0o600); err != nil {
		t.Fatal(err)
	}
	run := slices.Clone(args[:2])
	for _, a := range args[2:] {
		if m, _ := filepath.Glob(filepath.Join(dir, a)); len(m) > 0 {
			run = append(run, m...)
		} else {
			run = append(run, filepath.Join(dir, a))
		}
	}
	var stdout, stderr bytes.Buffer
	if code := runApp(run, &stdout, &stderr); code != 0 {
		t.Errorf("%q: exit %d: %s", strings.Join(args, " "), code, stderr.String())
	}
}

// TestHelpCurlExamples: the curl lines of target's and proxy's --help,
// with TOKEN and CPORT from the ready line, are answered 2xx by the
// process they describe (without the token they got 401).
func TestHelpCurlExamples(t *testing.T) {
	for _, cmd := range []string{"target", "proxy"} {
		t.Run(cmd, func(t *testing.T) {
			curls := helpExamples(helpText(t, cmd), "curl")
			if len(curls) == 0 {
				t.Fatalf("%s --help has no curl example", cmd)
			}
			args := []string{"stampede", "target"}
			if cmd == "proxy" { // it has no /shutdown: it ends after --duration
				args = []string{"stampede", "proxy", "--upstream", "127.0.0.1:1", "--duration", "3s"}
			}
			line := startReady(t, args)
			for _, c := range curls {
				c = strings.NewReplacer("TOKEN", line.Token, "127.0.0.1:CPORT", line.Control).Replace(c)
				if code, err := curl(c); err != nil || code/100 != 2 {
					t.Errorf("%s --help: %q: status %d, %v; want 2xx", cmd, c, code, err)
				}
			}
		})
	}
}

// startReady starts args in this process, returns its ready line, and
// when the test ends asks it to shut down (a target; a proxy ends after
// its --duration) and waits for it.
func startReady(t *testing.T, args []string) childproc.ReadyLine {
	t.Helper()
	pr, pw := io.Pipe()
	exit := make(chan int, 1)
	go func() {
		exit <- runApp(args, pw, io.Discard)
		pw.Close()
	}()
	raw, err := bufio.NewReader(pr).ReadBytes('\n')
	if err != nil {
		t.Fatalf("%s: no ready line: %v", args[1], err)
	}
	go io.Copy(io.Discard, pr)
	var line childproc.ReadyLine
	if err := json.Unmarshal(raw, &line); err != nil || !line.Ready || line.Token == "" {
		t.Fatalf("ready line %q: %v", raw, err)
	}
	t.Cleanup(func() {
		req, _ := http.NewRequest("POST", "http://"+line.Control+"/shutdown?mode=abrupt", nil)
		req.Header.Set("Authorization", "Bearer "+line.Token)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
		select {
		case <-exit:
		case <-time.After(10 * time.Second):
			t.Errorf("%s did not exit after /shutdown", args[1])
		}
	})
	return line
}

// curl sends the request a curl command line describes (-H, -X, the URL)
// and returns the answer's status.
func curl(line string) (int, error) {
	words, err := shellWords(line)
	if err != nil {
		return 0, err
	}
	method, url, header := "GET", "", http.Header{}
	for i := 1; i < len(words); i++ {
		switch w := words[i]; {
		case (w == "-H" || w == "-X") && i+1 < len(words):
			if w == "-X" {
				method = words[i+1]
			} else if k, v, ok := strings.Cut(words[i+1], ":"); ok {
				header.Add(k, strings.TrimSpace(v))
			}
			i++
		case strings.HasPrefix(w, "-"):
			return 0, fmt.Errorf("curl option %s: not understood by this test", w)
		default:
			url = w
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	if err != nil {
		return 0, err
	}
	req.Header = header
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// TestSimulateHelpTrue: simulate's --help names exactly the files a
// simulation writes, and no worker processes (it runs in one).
func TestSimulateHelpTrue(t *testing.T) {
	help := helpText(t, "simulate")
	if strings.Contains(help, "worker process") {
		t.Errorf("simulate --help speaks of worker processes:\n%s", help)
	}
	out := filepath.Join(t.TempDir(), "out")
	if code, _, stderr := runSimulate(t, "--clients", "100", "--duration", "2s", "--out", out, "-q"); code != 0 {
		t.Fatalf("simulate: exit %d: %s", code, stderr)
	}
	entries, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	var usage string
	for _, f := range flagsOf("simulate") {
		if f.Names()[0] == "out" {
			usage = f.(*cli.StringFlag).Usage
		}
	}
	listed, _, _ := strings.Cut(usage, "(") // what follows "no" is what it does not write
	written := map[string]bool{}
	for _, e := range entries {
		written[e.Name()] = true
		if !strings.Contains(listed, e.Name()) {
			t.Errorf("simulate writes %s; its --out help does not say so: %q", e.Name(), usage)
		}
	}
	for _, w := range strings.Split(strings.TrimPrefix(listed, "results folder `DIR`: "), ", ") {
		if w = strings.TrimSpace(w); !written[w] {
			t.Errorf("simulate --out help names %q; the folder has %v", w, written)
		}
	}
}
