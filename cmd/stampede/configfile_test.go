package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"
)

// settingsOf runs `stampede ARGS...` with the command's Action replaced by
// one that renders its settings, so nothing starts: what a run would
// record as summary.json "config".
func settingsOf(t *testing.T, args ...string) (string, error) {
	t.Helper()
	app := newApp(io.Discard, io.Discard)
	var got []byte
	cmds := make([]*cli.Command, len(app.Commands))
	for i, c := range app.Commands {
		cmds[i] = c
		if c.Name == args[0] {
			cp := *c
			cp.Action = func(c *cli.Context) error {
				var err error
				got, err = renderSettings(c).MarshalJSON()
				return err
			}
			cmds[i] = &cp
		}
	}
	app.Commands = cmds
	err := app.Run(flagsFirst(app, append([]string{"stampede"}, args...)))
	return string(got), err
}

// writeFile writes a test file and returns its path.
func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// runFlagValues gives every visible flag of `run` a value other than its
// default, as command-line words: valid where the command checks the
// value as it reads the file (policy, chaos, slo).
func runFlagValues(t *testing.T) (names []string, values map[string][]string) {
	t.Helper()
	special := map[string][]string{
		"policy":        {"exp:initial=2s,max=60s,jitter=0.25"},
		"chaos":         {"at 1s restart abrupt down=1s"},
		"slo":           {"r99<20s", "lost==0"},
		"store":         {"postgres://app:hunter2@127.0.0.1:5432/test"},
		"pushgateway":   {"http://127.0.0.1:9091"},
		"nats":          {"nats://agent:s3cret@127.0.0.1:4222"},
		"mode":          {"echo"},
		"on-agent-loss": {"continue"},
		"source-ips":    {"127.0.0.2-127.0.0.3"},
	}
	values = map[string][]string{}
	app := newApp(io.Discard, io.Discard)
	for _, f := range app.Command("run").Flags {
		name := f.Names()[0]
		// urfave/cli adds its help flag to a command's flags once the
		// command has shown its help (another test may have): not a knob.
		if hidden(f) || name == configFlagName || name == "help" {
			continue
		}
		names = append(names, name)
		if v, ok := special[name]; ok {
			values[name] = v
			continue
		}
		switch f.(type) {
		case *cli.IntFlag:
			values[name] = []string{"7"}
		case *cli.Uint64Flag:
			values[name] = []string{"9"}
		case *cli.Float64Flag:
			values[name] = []string{"2.5"}
		case *cli.DurationFlag:
			values[name] = []string{"1500ms"}
		case *cli.BoolFlag:
			values[name] = []string{"true"}
		case *cli.StringSliceFlag:
			values[name] = []string{"a-" + name, "b-" + name}
		case *cli.StringFlag:
			values[name] = []string{"v-" + name}
		default:
			t.Fatalf("run --%s: no test value for a %T", name, f)
		}
	}
	return names, values
}

// TestConfigFileEveryRunFlag is the acceptance of --config: a file giving
// every flag of run, in YAML and in TOML, renders the same summary.json
// config as the same flags on the command line, secrets redacted.
func TestConfigFileEveryRunFlag(t *testing.T) {
	names, values := runFlagValues(t)
	args := []string{"run"}
	var yml, tml strings.Builder
	for _, n := range names {
		vs := values[n]
		for _, v := range vs {
			args = append(args, "--"+n+"="+v) // a switch takes no separate value
		}
		quoted := make([]string, len(vs))
		for i, v := range vs {
			quoted[i] = strconv.Quote(v)
		}
		if len(vs) > 1 {
			fmt.Fprintf(&yml, "%s: [%s]\n", n, strings.Join(quoted, ", "))
			fmt.Fprintf(&tml, "%s = [%s]\n", n, strings.Join(quoted, ", "))
			continue
		}
		// Numbers and switches unquoted, as a person writes them.
		v := vs[0]
		if _, err := strconv.ParseFloat(v, 64); err == nil || v == "true" {
			fmt.Fprintf(&yml, "%s: %s\n", n, v)
			fmt.Fprintf(&tml, "%s = %s\n", n, v)
		} else {
			fmt.Fprintf(&yml, "%s: %s\n", n, quoted[0])
			fmt.Fprintf(&tml, "%s = %s\n", n, quoted[0])
		}
	}
	fromFlags, err := settingsOf(t, args...)
	if err != nil {
		t.Fatalf("flags: %v", err)
	}
	for _, file := range []string{writeFile(t, "storm.yaml", yml.String()), writeFile(t, "storm.toml", tml.String())} {
		fromFile, err := settingsOf(t, "run", "--config", file)
		if err != nil {
			t.Fatalf("%s: %v", filepath.Base(file), err)
		}
		if fromFile != fromFlags {
			t.Errorf("%s: config differs from the flags'\nfile:  %s\nflags: %s", filepath.Base(file), fromFile, fromFlags)
		}
	}

	var got map[string]any
	if err := json.Unmarshal([]byte(fromFlags), &got); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if _, ok := got[n]; !ok && !notSettings[n] {
			t.Errorf("config has no %q", n)
		}
	}
	for _, secret := range []string{"hunter2", "s3cret", "app:", "agent:"} {
		if strings.Contains(fromFlags, secret) {
			t.Errorf("config holds the secret %q: %s", secret, fromFlags)
		}
	}
	for key, want := range map[string]any{
		"policy":   "exp:initial=2s,max=60s,jitter=0.25",
		"duration": "1500ms",
		"clients":  7.0,
		"slo":      []any{"r99<20s", "lost==0"},
		"store":    "postgres://<redacted>@127.0.0.1:5432/test",
	} {
		if g, _ := json.Marshal(got[key]); string(g) != mustJSON(want) {
			t.Errorf("config %s = %s, want %s", key, g, mustJSON(want))
		}
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestConfigFileCommandLineWins: a flag on the command line overrides the
// file's value, a repeatable one replaces the file's list, and a flag
// neither gives keeps its default.
func TestConfigFileCommandLineWins(t *testing.T) {
	file := writeFile(t, "f.yml", "clients: 5\nslo:\n  - lost==0\n  - r99<20s\nduration: 2s\n")
	got, err := settingsOf(t, "run", "--config", file, "--clients", "9", "--slo", "r50<1s")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"clients":9,`, `"slo":["r50<1s"]`, `"duration":"2s"`, `"seed":1,`} {
		if !strings.Contains(got, want) {
			t.Errorf("config lacks %s: %s", want, got)
		}
	}
	// --header and -H are one list: either on the command line wins.
	file = writeFile(t, "h.toml", "url = \"ws://127.0.0.1:1/\"\nheader = [\"X-From: file\"]\n")
	got, err = settingsOf(t, "loadgen", "--config", file, "-H", "Authorization: Bearer abc")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got, `"header":["Authorization: <redacted>"]`) || !strings.Contains(got, `"url":"ws://127.0.0.1:1/"`) {
		t.Errorf("config %s: want the command line's header only, redacted, and the file's url", got)
	}
}

// TestConfigFileErrors: what a file gets wrong is one line naming the
// file, line and column, exit 2, before anything runs.
func TestConfigFileErrors(t *testing.T) {
	for _, tc := range []struct {
		name, file, text, cmd string
		want                  string // after "stampede: FILE"
	}{
		{"unknown key", "a.yaml", "clients: 10\n\nclientz: 3\n", "run", `:3:1: unknown key "clientz" (keys are the flag names of stampede run --help)`},
		{"bad int", "a.yaml", "clients: abc\n", "run", `:1:10: clients: invalid value "abc": want a whole number`},
		{"bad duration", "a.yml", "duration: 30\n", "simulate", `:1:11: duration: invalid value "30": want a duration with a unit, e.g. 500ms, 30s or 2m`},
		{"bad switch", "a.yaml", "proxy: yes\n", "run", `:1:8: proxy: invalid value "yes": want true or false`},
		{"list for one value", "a.yaml", "clients: [1, 2]\n", "run", `:1:10: clients: want one value, not a list`},
		{"mapping", "a.yaml", "clients:\n  n: 1\n", "run", `:2:3: clients: want a value or a list of values, not a mapping`},
		{"null", "a.yaml", "clients:\nseed: 2\n", "run", `:1:9: clients: no value`},
		{"twice", "a.yaml", "clients: 1\nq: true\nquiet: false\n", "run", `:3:1: quiet: given twice (first at line 2)`},
		{"bad policy", "a.yaml", "policy: exp:initial=-1s\n", "run", `:1:9: policy: invalid value "exp:initial=-1s": `},
		{"bad chaos", "a.yaml", "chaos: |\n  at 5s restart abrupt down=2x\n", "run", `:1:8: chaos: invalid value "at 5s restart abrupt down=2x\n": line 1, col 27: expected a duration after "down=", found "2x"`},
		{"not a mapping", "a.yaml", "- clients\n", "run", `:1:1: want a mapping of flag names to values, e.g. clients: 1000`},
		{"yaml syntax", "a.yaml", "clients: 1\n  seed: [\n", "run", `:2:1: `},
		{"toml unknown key", "a.toml", "clients = 10\n  bogus = 1\n", "bench", `:2:3: unknown key "bogus" (keys are the flag names of stampede bench --help)`},
		{"toml bad value", "a.toml", "clients = \"many\"\n", "loadgen", `:1:12: clients: invalid value "many": want a whole number`},
		{"toml table", "a.toml", "clients = 1\n[seed]\nx = 2\n", "run", `:2:2: seed: want a value or a list of values, not a table`},
		{"toml syntax", "a.toml", "clients = \n", "run", `:1:11: expected value but found '\n' instead`},
		{"hidden flag", "a.yaml", "H: 'X: y'\n", "drill", `:1:1: unknown key "H" (keys are the flag names of stampede drill --help)`},
		{"http", "a.yaml", "retries: many\n", "http", `:1:10: retries: invalid value "many": want a whole number`},
		{"bad cpu costs", "a.yaml", "cores: 2\ncpu-costs: attempt=44\n", "simulate", `:2:12: cpu-costs: invalid value "attempt=44": attempt: want a duration with a unit such as 44us, got "44"`},
		{"bad cpu per connect", "a.yaml", "cores: 2\ncpu-per-connect: 65us\n", "simulate", `:2:18: cpu-per-connect: invalid value "65us": want LOADGEN,TARGET, each end's CPU per first connect, two positive durations such as 65us,60us`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := writeFile(t, tc.file, tc.text)
			var stdout, stderr bytes.Buffer
			args := []string{"stampede", tc.cmd, "--config", file}
			if tc.cmd == "drill" || tc.cmd == "loadgen" {
				args = append(args, "--url", "ws://127.0.0.1:1/")
			}
			if tc.cmd == "http" {
				args = append(args, "http://127.0.0.1:1/")
			}
			code := runApp(args, &stdout, &stderr)
			want := "stampede: " + file + tc.want
			got := strings.TrimSuffix(stderr.String(), "\n")
			ok := got == want
			if strings.HasSuffix(tc.want, ": ") {
				ok = strings.HasPrefix(got, want)
			}
			if code != 2 || !ok || strings.Count(got, "\n") != strings.Count(want, "\n") {
				t.Errorf("exit %d, stderr %q\nwant exit 2 and %q", code, stderr.String(), want)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout %q, want nothing", stdout.String())
			}
		})
	}
	var stderr bytes.Buffer
	if code := runApp([]string{"stampede", "run", "--config", writeFile(t, "a.json", "{}")}, io.Discard, &stderr); code != 2 ||
		!strings.Contains(stderr.String(), "want a .yaml, .yml or .toml file") {
		t.Errorf("a .json file: exit %d, %q", code, stderr.String())
	}
}

// TestConfigFileRequiredFlag: a flag the command requires may come from
// the file.
func TestConfigFileRequiredFlag(t *testing.T) {
	got, err := settingsOf(t, "drill", "--config", writeFile(t, "d.yaml",
		"url: wss://u:p@127.0.0.1:9/x?token=abc&tenant=t1&x-client=k9\nwait-for-outage: true\nsecret-header: [X-Client]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got, `"url":"wss://<redacted>@127.0.0.1:9/x?`) || !strings.Contains(got, `"wait-for-outage":true`) ||
		!strings.Contains(got, "tenant=t1") {
		t.Errorf("config %s", got)
	}
	// A secret-looking query parameter and one named by --secret-header.
	for _, secret := range []string{"abc", "k9"} {
		if strings.Contains(got, secret) {
			t.Errorf("config holds the secret %q: %s", secret, got)
		}
	}
}

// TestConfigFormatDuration: durations are written as a person types them
// and parse back to the same value.
func TestConfigFormatDuration(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"},
		{time.Second, "1s"},
		{60 * time.Second, "60s"},
		{90 * time.Second, "90s"},
		{2 * time.Hour, "2h"},
		{1500 * time.Millisecond, "1500ms"},
		{250 * time.Microsecond, "250us"},
		{7, "7ns"},
		{-2 * time.Second, "-2s"},
	} {
		got := formatDuration(tc.d)
		back, err := time.ParseDuration(got)
		if got != tc.want || err != nil || back != tc.d {
			t.Errorf("formatDuration(%d) = %q (parses to %v, %v), want %q", tc.d, got, back, err, tc.want)
		}
	}
}

// TestConfigFileExamples: the example storms parse, and the YAML and the
// TOML one say the same.
func TestConfigFileExamples(t *testing.T) {
	yml, err := settingsOf(t, "run", "--config", "../../examples/storm.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tml, err := settingsOf(t, "run", "--config", "../../examples/storm.toml")
	if err != nil {
		t.Fatal(err)
	}
	if yml != tml || !strings.Contains(yml, `"clients":2000,`) {
		t.Errorf("examples differ or lack clients\nyaml: %s\ntoml: %s", yml, tml)
	}
}
