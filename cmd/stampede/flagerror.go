package main

import (
	"fmt"
	"regexp"
	"strconv"

	"github.com/urfave/cli/v2"
)

// The parse errors of the standard flag package (and urfave/cli's one of
// its own), which usageError rewrites in stampede's words.
var (
	reUndefined  = regexp.MustCompile(`^flag provided but not defined: -+(.+)$`)
	reBadValue   = regexp.MustCompile(`^invalid value "(.*)" for flag -+([^:]+): (.*)$`)
	reBadBool    = regexp.MustCompile(`^invalid boolean value "(.*)" for -+([^:]+): .*$`)
	reNeedsValue = regexp.MustCompile(`^flag needs an argument: -+(.+)$`)
	reBadSyntax  = regexp.MustCompile(`^bad flag syntax: (.*)$`)
	reTwoForms   = regexp.MustCompile(`^Cannot use two forms of the same flag: (\S+) (\S+)$`)
)

// usageError is every command's OnUsageError: it turns a flag parse error
// into one line naming the flag (`--duration: invalid value "5": want a
// duration with a unit, e.g. 500ms, 30s or 2m`), which main prints with
// exit status 2 and no help text.
func usageError(c *cli.Context, err error, _ bool) error {
	msg := err.Error()
	cmd := "stampede"
	var flags []cli.Flag
	if c != nil && c.Command != nil {
		if n := c.Command.Name; n != "" && c.App != nil && n != c.App.Name {
			cmd += " " + n // not the root command
		}
		flags = c.Command.Flags
	}
	switch {
	case reUndefined.MatchString(msg):
		m := reUndefined.FindStringSubmatch(msg)
		return fmt.Errorf("%s: no such flag (%s --help lists them)", dashed(m[1]), cmd)
	case reBadValue.MatchString(msg):
		m := reBadValue.FindStringSubmatch(msg)
		reason := m[3]
		switch reason {
		case "parse error":
			reason = want(flagNamed(flags, m[2]))
		case "value out of range":
			reason = "out of range"
		}
		given := m[1]
		if u, err := strconv.Unquote(`"` + m[1] + `"`); err == nil {
			given = u
		}
		return fmt.Errorf("%s: invalid value %q: %s", dashed(m[2]), echoValue(m[2], given), reason)
	case reBadBool.MatchString(msg):
		m := reBadBool.FindStringSubmatch(msg)
		return fmt.Errorf("%s: invalid value %q: a switch takes no value, or =true / =false", dashed(m[2]), m[1])
	case reNeedsValue.MatchString(msg):
		m := reNeedsValue.FindStringSubmatch(msg)
		return fmt.Errorf("%s: needs a value (%s --help)", dashed(m[1]), cmd)
	case reBadSyntax.MatchString(msg):
		m := reBadSyntax.FindStringSubmatch(msg)
		return fmt.Errorf("%s: bad flag syntax; flags are written --name VALUE or --name=VALUE", m[1])
	case reTwoForms.MatchString(msg):
		m := reTwoForms.FindStringSubmatch(msg)
		return fmt.Errorf("%s and %s: the same flag given twice", dashed(m[2]), dashed(m[1]))
	}
	return err
}

// requireFlags is the Before of a command with required flags: one line
// naming the first one missing, not the help text urfave/cli prints for a
// flag marked Required.
func requireFlags(names ...string) cli.BeforeFunc {
	return func(c *cli.Context) error {
		for _, n := range names {
			if !c.IsSet(n) {
				return fmt.Errorf("--%s: required (stampede %s --help)", n, c.Command.Name)
			}
		}
		return nil
	}
}

// dashed writes a flag name as it is typed: -H, --duration.
func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// flagNamed returns the flag with the given name or alias; nil if none.
func flagNamed(flags []cli.Flag, name string) cli.Flag {
	for _, f := range flags {
		for _, n := range f.Names() {
			if n == name {
				return f
			}
		}
	}
	return nil
}

// want says what a flag of f's type takes.
func want(f cli.Flag) string {
	switch f.(type) {
	case *cli.DurationFlag:
		return "want a duration with a unit, e.g. 500ms, 30s or 2m"
	case *cli.IntFlag, *cli.Int64Flag:
		return "want a whole number"
	case *cli.UintFlag, *cli.Uint64Flag:
		return "want a whole number, 0 or more"
	case *cli.Float64Flag:
		return "want a number"
	}
	return "not a valid value"
}
