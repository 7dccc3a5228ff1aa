package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestUsageErrors: every usage error is one line on stderr in stampede's
// own words, naming the flag (or the command) at fault, with exit status 2
// and nothing on stdout: no help text, no parse-error jargon of the flag
// package, no process started (run and bench check the target's and the
// fleet's configuration first, and name the flag as target and loadgen do).
func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string // the one line, or its start when it ends in ": "
	}{
		{"run backlog", []string{"run", "--backlog", "-1"}, "stampede: --backlog: "},
		{"run msg size", []string{"run", "--mode", "echo", "--msg-size", "3"}, "stampede: --msg-size: "},
		{"run chaos", []string{"run", "--chaos", "at 5s restart abrupt down=2x"}, "stampede: --chaos: "},
		{"bench backlog", []string{"bench", "--backlog", "-1"}, "stampede: --backlog: "},
		// A duration without a unit was `invalid value "5" for flag
		// -duration: parse error`.
		{"duration without unit", []string{"run", "--duration", "5"},
			"stampede: --duration: invalid value \"5\": want a duration with a unit, e.g. 500ms, 30s or 2m\n"},
		{"loadgen duration", []string{"loadgen", "--url", "ws://127.0.0.1:1/", "--duration", "5"},
			"stampede: --duration: invalid value \"5\": want a duration with a unit, e.g. 500ms, 30s or 2m\n"},
		{"not a number", []string{"bench", "--clients", "many"}, "stampede: --clients: invalid value \"many\": want a whole number\n"},
		{"negative seed", []string{"run", "--seed", "-1"}, "stampede: --seed: invalid value \"-1\": want a whole number, 0 or more\n"},
		{"not a float", []string{"target", "--accept-rate", "fast"}, "stampede: --accept-rate: invalid value \"fast\": want a number\n"},
		{"out of range", []string{"policy", "--clients", "99999999999999999999"},
			"stampede: --clients: invalid value \"99999999999999999999\": out of range\n"},
		{"switch with a value", []string{"run", "--tls=maybe"},
			"stampede: --tls: invalid value \"maybe\": a switch takes no value, or =true / =false\n"},
		{"unknown flag", []string{"run", "--bogus"}, "stampede: --bogus: no such flag (stampede run --help lists them)\n"},
		{"unknown flag before the command", []string{"--bogus", "run"}, "stampede: --bogus: no such flag (stampede --help lists them)\n"},
		{"missing value", []string{"loadgen", "--url"}, "stampede: --url: needs a value (stampede loadgen --help)\n"},
		{"header with a bad value", []string{"loadgen", "--url", "ws://127.0.0.1:1/", "-H", "nocolon"},
			"stampede: -H: invalid value \"nocolon\": want 'Name: value'\n"},
		// An unknown command exited 3 with "No help topic for 'nope'".
		{"unknown command", []string{"nope"}, "stampede: unknown command \"nope\" (stampede --help lists the commands)\n"},
		{"help on an unknown command", []string{"help", "nope"}, "stampede: help: unknown command \"nope\" (stampede --help lists the commands)\n"},
		// A missing required flag printed the whole help text first.
		{"proxy without flags", []string{"proxy"}, "stampede: --upstream: required (stampede proxy --help)\n"},
		{"loadgen without url", []string{"loadgen"}, "stampede: --url: required (stampede loadgen --help)\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := runApp(append([]string{"stampede"}, tc.args...), &stdout, &stderr)
			line := strings.TrimSuffix(stderr.String(), "\n")
			ok := line == strings.TrimSuffix(tc.want, "\n")
			if strings.HasSuffix(tc.want, ": ") {
				ok = strings.HasPrefix(line, tc.want)
			}
			if code != 2 || !ok || strings.Count(stderr.String(), "\n") != 1 {
				t.Errorf("exit %d, stderr %q\nwant exit 2 and one line %q", code, stderr.String(), tc.want)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout %q; want nothing", stdout.String())
			}
		})
	}
}

// TestHelp: `stampede help` and `stampede help COMMAND` print help and
// exit 0, as --help does (`stampede help` said "No help topic for 'help'"
// and exited 3).
func TestHelp(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{}, "COMMANDS:"},
		{[]string{"help"}, "COMMANDS:"},
		{[]string{"--help"}, "COMMANDS:"},
		{[]string{"help", "run"}, "stampede run [--clients N]"},
		{[]string{"run", "--help"}, "stampede run [--clients N]"},
		{[]string{"proxy", "--help"}, "--upstream HOST:PORT"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := runApp(append([]string{"stampede"}, tc.args...), &stdout, &stderr)
			if code != 0 || stderr.Len() != 0 || !strings.Contains(stdout.String(), tc.want) {
				t.Errorf("exit %d, stderr %q, stdout:\n%s\nwant exit 0 and %q", code, stderr.String(), stdout.String(), tc.want)
			}
		})
	}
}
