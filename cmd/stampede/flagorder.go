package main

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// flagsFirst moves the flags of a subcommand's arguments in front of its
// positional arguments, so `stampede http URL --retries 0` and `stampede
// report A B --out x.html` mean what they say: urfave/cli v2 (the flag
// package) stops at the first positional argument and would take the
// rest as arguments. A flag that takes a value keeps it (--out x.html,
// --out=x.html), a bool flag takes none, and everything after "--" stays
// positional, in its order. Commands with subcommands are left alone.
func flagsFirst(app *cli.App, args []string) []string {
	if len(args) < 3 {
		return args
	}
	cmd := app.Command(args[1])
	if cmd == nil || hasSubcommands(cmd) {
		return args
	}
	takesValue := map[string]bool{}
	for _, f := range cmd.Flags {
		v := true
		if t, ok := f.(interface{ TakesValue() bool }); ok {
			v = t.TakesValue()
		}
		for _, n := range f.Names() {
			takesValue[n] = v
		}
	}
	out := append(make([]string, 0, len(args)), args[:2]...)
	var positional []string
	rest := args[2:]
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		switch {
		case a == "--":
			out = append(out, positional...)
			return append(out, rest[i:]...)
		case len(a) < 2 || a[0] != '-':
			positional = append(positional, a)
		default:
			out = append(out, a)
			name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
			if !hasValue && takesValue[name] && i+1 < len(rest) {
				i++
				out = append(out, rest[i])
			}
		}
	}
	return append(out, positional...)
}

// hasSubcommands reports whether cmd has subcommands of its own; the help
// subcommand urfave/cli adds to a command once it has run does not count.
func hasSubcommands(cmd *cli.Command) bool {
	for _, s := range cmd.Subcommands {
		if s.Name != "help" {
			return true
		}
	}
	return false
}
