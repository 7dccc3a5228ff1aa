package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// runIn runs the app in a fresh working folder and returns its exit
// status, its output and what it left in the folder.
func runIn(t *testing.T, args ...string) (code int, out string, left []string) {
	t.Helper()
	dir := t.TempDir()
	t.Chdir(dir)
	var o bytes.Buffer
	code = runApp(append([]string{"stampede"}, args...), &o, &o)
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		left = append(left, e.Name())
	}
	return code, o.String(), left
}

// TestErrorsHideSecrets: an error about a value that holds a secret
// quotes none of it: a header with a CR LF (on the command line and in a
// config file), a store URL that does not parse (password and user
// name), a libpq key=value store string (refused in one line saying to
// write a URL, and no folder made of it).
func TestErrorsHideSecrets(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "bad.yaml")
	yaml := "url: ws://127.0.0.1:1/\nclients: 1\nduration: 1s\nheader: [\"Authorization: Bearer " + secret + "\\r\\nX: y\"]\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"header CR LF", []string{"loadgen", "--url", "ws://127.0.0.1:1/", "--clients", "1", "--duration", "1s",
			"-H", "Authorization: Bearer " + secret + "\r\nX: y"}, `-H: invalid value "Authorization: <redacted>"`},
		{"header CR LF, not secret by name", []string{"loadgen", "--url", "ws://127.0.0.1:1/", "--clients", "1", "--duration", "1s",
			"-H", "X-Trace: 1\r\nAuthorization: " + secret}, `-H: invalid value "X-Trace: <redacted>"`},
		{"header in a config file", []string{"loadgen", "--config", cfg}, `bad.yaml:4:9: header: invalid value "Authorization: <redacted>"`},
		{"store URL that does not parse", []string{"run", "--clients", "5", "--duration", "1s", "--out", out,
			"--store", "redis://user9:" + secret + "/x@127.0.0.1:1/0"}, "--store: bad URL"},
		{"store URL refused", []string{"run", "--clients", "5", "--duration", "1s", "--out", out,
			"--store", "redis://user9:" + secret + "@127.0.0.1:1/0?x=%zz"}, "--store:"},
		{"libpq string", []string{"run", "--clients", "5", "--duration", "1s", "--out", out,
			"--store", "host=127.0.0.1 password=" + secret + " dbname=x"}, "--store: a key=value connection string is not taken: write a URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, got, left := runIn(t, tc.args...)
			if code == 0 || !strings.Contains(got, tc.want) || strings.Count(got, "\n") != 1 {
				t.Errorf("exit %d, output %q; want one line with %q", code, got, tc.want)
			}
			if strings.Contains(got, secret) || strings.Contains(got, "user9") {
				t.Errorf("the error shows a secret: %q", got)
			}
			if len(left) > 0 {
				t.Errorf("left %q in the working folder", left)
			}
		})
	}
}

// TestErrorLineScrubs: whatever a library quoted, the printed line holds
// none of the command line's secrets, no URL's user info, no field path
// a flag names, and no input of any size whole.
func TestErrorLineScrubs(t *testing.T) {
	resetSecrets()
	argSecrets([]string{"stampede", "drill", "--restart-cmd", "deploy --token tk-1234", "-H", "X-Api-Key: ak-5678",
		"--data", `{"password":{"value":"pw-9012"}}`, "--otlp-header", "X-Team=ot-3456"})
	defer resetSecrets()
	for _, tc := range []struct{ in, want string }{
		{"deploy: tk-1234 refused", "deploy: <redacted> refused"},
		{"Hub.TokenFile: open x: no such file", "--token-file: open x: no such file"},
		{"sending plan: Client.MsgSize: too big", "sending plan: --msg-size: too big"},
		{`dial "nats://u:pw@h:1": ak-5678 pw-9012 ot-3456`, `dial "nats://<redacted>@h:1": <redacted> <redacted> <redacted>`},
	} {
		if got := errorLine(errString(tc.in)); got != tc.want {
			t.Errorf("errorLine(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	long := errorLine(errString(`--chaos: bad "` + strings.Repeat("x", 1<<20) + `"`))
	if len(long) > 300 || !strings.Contains(long, "bytes)") {
		t.Errorf("a 1 MiB quoted value: %d bytes, %q...", len(long), long[:min(len(long), 80)])
	}
}

type errString string

func (e errString) Error() string { return string(e) }

// fieldLiteral is a field path given to spec.Errorf, spec.Wrap or a
// FieldError literal in the module's code.
var fieldLiteral = regexp.MustCompile(`(?:spec\.Errorf|spec\.Wrap|spec\.CheckURL|FieldError\{Field:)\(?\s*"([A-Z][A-Za-z0-9]*(?:\.[A-Z][A-Za-z0-9]*)+)"`)

// notFromFlags are field paths that no command line reaches: the program
// makes their values itself.
var notFromFlags = map[string]string{
	"GroupConfig.Spawn":  "the target group's spawn function, set by the program",
	"GroupConfig.Procs":  "the group's size, sized by the program from --procs (Server.Procs)",
	"Mitigation.Kind":    "the bench's mitigations, made by mitigation.All",
	"Mitigation.Window":  "the bench's mitigations, made by mitigation.All",
	"Mitigation.KeyFile": "the tickets-kept mitigation's key file, made by the bench in its folder",
}

// TestFieldErrorsNamedByFlag: every field a library reports an error on
// is named by a flag when it reaches the terminal (fieldFlag), found by
// reading the module's code; and the agent's missing token file is
// --token-file, not Hub.TokenFile.
func TestFieldErrorsNamedByFlag(t *testing.T) {
	seen := 0
	err := filepath.WalkDir("../..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "lab" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && path != "../.." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range fieldLiteral.FindAllStringSubmatch(string(b), -1) {
			seen++
			if _, ok := notFromFlags[m[1]]; !ok && fieldFlag(m[1]) == "" {
				t.Errorf("%s: field %s reaches the terminal under its Go name: no flag names it (knobs)", path, m[1])
			}
		}
		return nil
	})
	if err != nil || seen < 40 {
		t.Fatalf("read %d field errors (%v): the scan found too few", seen, err)
	}
	code, got, _ := runIn(t, "agent", "--nats", "nats://127.0.0.1:1", "--token-file", "nonexistent", "--name", "a")
	if code == 0 || !strings.HasPrefix(got, "stampede: --token-file: open nonexistent") {
		t.Errorf("agent: exit %d, %q; want the error to name --token-file", code, got)
	}
}
