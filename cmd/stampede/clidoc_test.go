package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

const cliDocPath = "../../docs/cli.md"

// cliIndexSection is the anchor of docs/cli.md's table of every flag.
const cliIndexSection = "every-flag-and-the-commands-it-is-on"

// flagTokenRE finds the flags in a table cell's code spans: `--chaos
// SCHEDULE`, `-H`, `--tls-cert F --tls-key F --ca F`.
var flagTokenRE = regexp.MustCompile(`(?:^|\s)(--?[a-zA-Z][a-zA-Z0-9-]*)`)

// onRow is a row of a docs/cli.md table with an "on" column: the flags of
// its first cell and the commands it says they are on.
type onRow struct {
	section string
	line    int
	flags   []string // names without dashes
	on      []string
}

// readOnRows reads every row of every table of r with an "on" column.
func readOnRows(r io.Reader) ([]onRow, error) {
	var rows []onRow
	var section string
	onCol := -1
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if m := headingRE.FindStringSubmatch(line); m != nil {
			section, onCol = slug(m[1]), -1
			continue
		}
		if !strings.HasPrefix(line, "|") {
			onCol = -1
			continue
		}
		cells := splitRow(line)
		switch {
		case onCol < 0:
			onCol = slices.Index(cells, "on")
			if onCol < 0 {
				onCol = -2 // a table without one: skip its rows
			}
		case onCol == -2 || strings.HasPrefix(cells[0], "---"):
		default:
			row := onRow{section: section, line: n}
			for _, span := range backtickRE.FindAllStringSubmatch(cells[0], -1) {
				for _, m := range flagTokenRE.FindAllStringSubmatch(span[1], -1) {
					row.flags = append(row.flags, strings.TrimLeft(m[1], "-"))
				}
			}
			if len(row.flags) == 0 || onCol >= len(cells) {
				return nil, fmt.Errorf("line %d: no flag in %q, or no on cell", n, cells[0])
			}
			for _, c := range strings.Split(cells[onCol], ",") {
				c, _, _ = strings.Cut(strings.TrimSpace(c), " (") // "http (fleet)"
				row.on = append(row.on, c)
			}
			rows = append(rows, row)
		}
	}
	return rows, sc.Err()
}

// commandsOfFlags is, for every flag name and alias in the command tree,
// the commands that take it, in the tree's order; and each name's
// canonical (first) name.
func commandsOfFlags(cmds []*cli.Command) (on map[string][]string, canonical map[string]string, hidden map[string]bool) {
	on, canonical, hidden = map[string][]string{}, map[string]string{}, map[string]bool{}
	var walk func(prefix string, cs []*cli.Command)
	walk = func(prefix string, cs []*cli.Command) {
		for _, c := range cs {
			name := strings.TrimSpace(prefix + " " + c.Name)
			for _, f := range c.Flags {
				if f == cli.HelpFlag {
					// urfave/cli adds it to a command the first time an
					// app runs it (so after other tests); the doc says
					// once that --help is on every command.
					continue
				}
				for _, n := range f.Names() {
					on[n] = append(on[n], name)
					canonical[n] = f.Names()[0]
				}
				if v, ok := f.(cli.VisibleFlag); ok && !v.IsVisible() {
					hidden[f.Names()[0]] = true
				}
			}
			walk(name, c.Subcommands)
		}
	}
	walk("", cmds)
	return on, canonical, hidden
}

// TestCLIDocFlags: docs/cli.md's table of every flag has one row per
// visible flag of the command tree, naming exactly the commands it is on;
// no row names a flag the tree lacks; and every other table with an "on"
// column names only commands its flags are on.
func TestCLIDocFlags(t *testing.T) {
	newApp(io.Discard, io.Discard)
	on, canonical, hidden := commandsOfFlags(commands)
	f, err := os.Open(cliDocPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := readOnRows(f)
	if err != nil {
		t.Fatal(err)
	}
	indexed := map[string]int{} // rows of the index per canonical name
	for _, r := range rows {
		inRow := map[string]bool{}
		for _, fl := range r.flags {
			cmds, ok := on[fl]
			if !ok {
				t.Errorf("docs/cli.md:%d: --%s: no command has this flag", r.line, fl)
				continue
			}
			if r.section != cliIndexSection {
				for _, c := range r.on {
					if !slices.Contains(cmds, c) {
						t.Errorf("docs/cli.md:%d: --%s is not on %q (it is on %s)", r.line, fl, c, strings.Join(cmds, ", "))
					}
				}
				continue
			}
			if !slices.Equal(sortedCopy(r.on), sortedCopy(cmds)) {
				t.Errorf("docs/cli.md:%d: --%s on %s; the commands have it on %s", r.line, fl, strings.Join(r.on, ", "), strings.Join(cmds, ", "))
			}
			inRow[canonical[fl]] = true
		}
		for c := range inRow {
			indexed[c]++
		}
	}
	for name, c := range canonical {
		switch {
		case name != c || hidden[c]:
		case indexed[c] == 0:
			t.Errorf("docs/cli.md: --%s (on %s) is not in the table of every flag (#%s)", c, strings.Join(on[c], ", "), cliIndexSection)
		case indexed[c] > 1:
			t.Errorf("docs/cli.md: --%s is in %d rows of the table of every flag; want one", c, indexed[c])
		}
	}
}

func sortedCopy(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
