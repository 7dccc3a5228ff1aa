package main

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gobwas/ws"
)

// docCommand is one stampede command line of a document's code block.
type docCommand struct {
	doc  string // the document's path from the module root
	line int    // where the command starts
	text string // continuation lines joined, comment dropped, "bin/" dropped
}

func (c docCommand) String() string { return c.doc + ":" + itoa(c.line) + ": " + c.text }

// shellFences are the code blocks whose lines are commands.
var shellFences = map[string]bool{"": true, "sh": true, "bash": true, "shell": true, "console": true}

// docCommands returns the stampede command lines of the code blocks of a
// Markdown file: lines of sh blocks (or blocks without a language, unless
// they are a diagram) that start with `stampede` or `bin/stampede`,
// continued over lines ending in `\`, without their trailing comment,
// with the variables of docVars expanded.
func docCommands(t *testing.T, doc string) []docCommand {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", doc))
	if err != nil {
		t.Fatal(err)
	}
	var out []docCommand
	var block []string // the open block's lines; nil outside one
	lang, first := "", 0
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		fence, ok := strings.CutPrefix(strings.TrimSpace(line), "```")
		switch {
		case ok && block == nil:
			block, lang, first = []string{}, strings.TrimSpace(fence), n+1
		case ok:
			if shellFences[lang] && !(lang == "" && isDiagram(block)) {
				out = append(out, blockCommands(doc, first, block)...)
			}
			block = nil
		case block != nil:
			block = append(block, line)
		}
	}
	return out
}

// isDiagram reports whether a block's lines draw boxes or arrows.
func isDiagram(lines []string) bool {
	for _, l := range lines {
		if strings.ContainsAny(l, "─│├└┌┐┘▶") || strings.Contains(l, "->") {
			return true
		}
	}
	return false
}

// docVars are the values of the variables examples use, as the documents
// give them (docs/ci.md's table).
var docVars = strings.NewReplacer(
	"$STAGING_URL", "wss://staging.example.com/ws", "$STAGING_HOST", "staging.example.com",
	"$DEPLOY_CMD", "./deploy.sh", "$DRILL_CLIENTS", "500", "$DRILL_AT", "15s", "$DRILL_DURATION", "90s")

// blockCommands are the stampede commands of one code block whose first
// line is line first of doc.
func blockCommands(doc string, first int, lines []string) []docCommand {
	var out []docCommand
	var cur *docCommand
	for i, line := range lines {
		l := strings.TrimSpace(dropComment(line))
		if cur != nil {
			cur.text += " " + strings.TrimSuffix(l, `\`)
		} else if w := strings.TrimPrefix(strings.TrimPrefix(l, "$ "), "bin/"); strings.HasPrefix(w, "stampede ") {
			out = append(out, docCommand{doc: doc, line: first + i, text: strings.TrimSuffix(w, `\`)})
			cur = &out[len(out)-1]
		}
		if cur != nil && !strings.HasSuffix(l, `\`) {
			cur.text = docVars.Replace(strings.Join(strings.Fields(cur.text), " "))
			cur = nil
		}
	}
	return out
}

// dropComment cuts a shell line's comment: a # after a blank, outside
// quotes.
func dropComment(line string) string {
	var quote byte
	for i := 0; i < len(line); i++ {
		switch c := line[i]; {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '#' && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t'):
			return line[:i]
		}
	}
	return line
}

// documents are the user's documents whose examples are checked.
func documents(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := []string{"README.md"}
	for _, d := range docs {
		out = append(out, filepath.Join("docs", filepath.Base(d)))
	}
	return out
}

// TestDocExamplesParse: every stampede command in a code block of the
// README and of docs/ parses with the real flag parser and the checks
// before the command's action, as written.
func TestDocExamplesParse(t *testing.T) {
	seen := 0
	for _, doc := range documents(t) {
		for _, c := range docCommands(t, doc) {
			seen++
			args, err := shellWords(c.text)
			if err != nil {
				t.Errorf("%s: %v", c, err)
				continue
			}
			if err := parseOnly(args); err != nil {
				t.Errorf("%s: does not parse: %v", c, err)
			}
		}
	}
	t.Logf("%d commands parsed", seen)
	if seen < 20 {
		t.Errorf("%d commands found in the documents; the extraction is broken", seen)
	}
}

// readmeToken stands for the README drill example's "Bearer ...".
const readmeToken = "readme-example-token"

// TestReadmeCommands runs the README's commands as written, in order, in
// an empty folder: the quickstart (version, policy, a small storm with its
// SLOs, its report) and the drill example against a local server that
// answers 401 without the bearer token, with only the URL, the token and
// the deploy command substituted. Cloning, make and opening a browser are
// left out.
func TestReadmeCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 2,000-client storm and a drill: not with -short")
	}
	srv := newDrillServer(t)
	srv.token = "Bearer " + readmeToken
	if _, _, _, err := ws.Dial(t.Context(), srv.url); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("the server answered an upgrade without the token: %v; want 401", err)
	}
	t.Setenv(testMainEnv, "1")              // the storm's agents are this binary
	commands := docCommands(t, "README.md") // before leaving the package's folder
	dir := t.TempDir()
	t.Chdir(dir)
	trigger := filepath.Join(dir, "deployed")
	onFile(t, trigger, func() { srv.restart(1012, time.Second, "1") })
	ran := map[string]bool{}
	for _, c := range commands {
		args, err := shellWords(c.text)
		if err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		if args[1] == "drill" {
			args = substitute(args, map[string]string{
				"--url":         srv.url,
				"-H":            "Authorization: Bearer " + readmeToken,
				"--restart-cmd": "touch " + trigger + "; sleep 1.5", // the server is down 1 s
			})
		}
		var stdout, stderr lockedBuffer // the progress and the deploy's lines come from two goroutines
		if code := runApp(args, &stdout, &stderr); code != 0 {
			t.Errorf("%s: exit %d\n%s%s", c, code, stdout.String(), stderr.String())
		}
		ran[args[1]] = true
	}
	for _, cmd := range []string{"version", "policy", "run", "report", "drill"} {
		if !ran[cmd] {
			t.Errorf("the README has no %s command in a code block", cmd)
		}
	}
	if srv.auth != "Bearer "+readmeToken {
		t.Errorf("the drill sent Authorization %q", srv.auth)
	}
}

// substitute replaces the value of each flag of with's keys in args.
func substitute(args []string, with map[string]string) []string {
	out := append([]string(nil), args...)
	for i := 0; i+1 < len(out); i++ {
		if v, ok := with[out[i]]; ok {
			out[i+1] = v
			i++
		}
	}
	return out
}

// lockedBuffer is a bytes.Buffer that several goroutines may write, as
// they may write a process's stderr.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
