package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/stampede-dev/stampede/internal/redact"
	"github.com/stampede-dev/stampede/loadgen"
)

// setting is one flag of a rendered config: its name and its effective
// value as the user would write it.
type setting struct {
	name  string
	value any
}

// settings is a command's effective configuration, keyed by flag name in
// the order of the command's flags: what summary.json records as "config",
// so that the keys read as the flags and a config file (--config) that
// gives them back reproduces the run. Secrets are redacted.
type settings []setting

// MarshalJSON writes the settings as one JSON object in their order.
func (s settings) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, kv := range s {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(kv.name)
		b.Write(k)
		b.WriteByte(':')
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false) // <redacted>, not \u003credacted\u003e
		if err := enc.Encode(kv.value); err != nil {
			return nil, err
		}
		b.Truncate(b.Len() - 1) // Encode's newline
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// notSettings are flags that say where things go or come from rather than
// how the run behaves: --config (the file's values are recorded instead)
// and --out (the folder that holds the summary).
var notSettings = map[string]bool{configFlagName: true, "out": true, "help": true}

// renderSettings renders every visible flag of the running command with
// its effective value: durations as 1s or 250ms, policies and schedules
// as given, repeatable flags as lists, header values that carry
// credentials and the user info and secret query parameters of URLs as
// redact.Mark. Positional arguments (the URL of stampede http) are
// recorded as "args".
func renderSettings(c *cli.Context) settings {
	secretHeaders := []string(nil)
	if hasFlag(c, "secret-header") {
		secretHeaders = c.StringSlice("secret-header")
	}
	var out settings
	for _, f := range c.Command.Flags {
		name := f.Names()[0]
		if hidden(f) || notSettings[name] {
			continue
		}
		out = append(out, setting{name, flagSetting(c, f, secretHeaders)})
	}
	if c.NArg() > 0 {
		args := make([]string, c.NArg())
		for i, a := range c.Args().Slice() {
			args[i] = redactText(a, secretHeaders)
		}
		out = append(out, setting{"args", args})
	}
	return out
}

// fleetSettings is renderSettings for a command that runs fleet: a
// --ping-interval left unset is recorded as the interval the fleet used
// (the spec's default by the fleet's size: 100s at a million clients), so
// that the config read back reproduces the run.
func fleetSettings(c *cli.Context, fleet loadgen.Config) settings {
	s := renderSettings(c)
	if hasFlag(c, "ping-interval") && !c.IsSet("ping-interval") {
		s = s.with("ping-interval", formatDuration(fleet.Client.WithDefaults().PingInterval), "")
	}
	if name, v, ok := sessionSetting(fleet.Session); ok {
		s = append(s, setting{name: name, value: v})
	}
	return s
}

// flagSetting is the value of f as the user would write it.
func flagSetting(c *cli.Context, f cli.Flag, secretHeaders []string) any {
	name := f.Names()[0]
	if _, ok := f.(*headersFlag); ok {
		list := []string{}
		if h, ok := c.Generic(name).(*headerFlag); ok {
			for _, kv := range h.fields {
				v := kv[1]
				if redact.IsSecretHeader(kv[0], secretHeaders) {
					v = redact.Mark
				}
				list = append(list, kv[0]+": "+v)
			}
		}
		return list
	}
	if name == "otlp-header" { // every OTLP header's value is secret
		list := []string{}
		for _, h := range c.StringSlice(name) {
			k, _, _ := strings.Cut(h, "=")
			list = append(list, k+"="+redact.Mark)
		}
		return list
	}
	switch v := flagValue(c, name).(type) {
	case time.Duration:
		return formatDuration(v)
	case string:
		if name == "data" {
			return redact.Body(v, secretHeaders)
		}
		if name == "restart-cmd" && v != "" { // as its words, the secret ones hidden
			return redact.Command(v, secretHeaders)
		}
		return redactText(v, secretHeaders)
	case cli.StringSlice:
		return redactList(v.Value(), secretHeaders)
	case *cli.StringSlice:
		return redactList(v.Value(), secretHeaders)
	case []string:
		return redactList(v, secretHeaders)
	case int, int64, uint, uint64, float64, bool:
		return v
	case fmt.Stringer:
		return redactText(v.String(), secretHeaders)
	case nil:
		return nil
	default:
		return redactText(fmt.Sprint(v), secretHeaders)
	}
}

// flagValue is the flag's value as its flag.Getter gives it; a value that
// is no Getter gives its text.
func flagValue(c *cli.Context, name string) (v any) {
	defer func() {
		if recover() != nil {
			v = fmt.Sprint(c.Generic(name))
		}
	}()
	return c.Value(name)
}

// redactText hides the user info and secret query parameters of a value
// that is a URL: those named like a secret and those named by
// --secret-header (extra).
func redactText(s string, extra []string) string {
	if strings.Contains(s, "://") {
		return redact.URLWith(s, extra)
	}
	return s
}

func redactList(in, extra []string) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = redactText(s, extra)
	}
	return out
}

// hasFlag reports whether the running command has a flag of that name.
func hasFlag(c *cli.Context, name string) bool {
	for _, f := range c.Command.Flags {
		for _, n := range f.Names() {
			if n == name {
				return true
			}
		}
	}
	return false
}

// formatDuration writes d as a user types it, in one unit: 2h, 90s,
// 250ms, 1500us; time.Duration.String's 1m30s reads as a Go value. The
// result parses back to d with time.ParseDuration.
func formatDuration(d time.Duration) string {
	units := []struct {
		unit time.Duration
		name string
	}{{time.Hour, "h"}, {time.Second, "s"}, {time.Millisecond, "ms"}, {time.Microsecond, "us"}}
	if d == 0 {
		return "0s"
	}
	for _, u := range units {
		if d%u.unit == 0 {
			return fmt.Sprintf("%d%s", d/u.unit, u.name)
		}
	}
	return fmt.Sprintf("%dns", int64(d))
}

// with returns a copy of s with name set to value: in place when s has it,
// else before the setting named before (at the end when there is none).
// A bench records each run's own policy this way.
func (s settings) with(name string, value any, before string) settings {
	out := make(settings, 0, len(s)+1)
	done := false
	for _, kv := range s {
		switch {
		case kv.name == name:
			kv.value, done = value, true
		case kv.name == before && !done:
			out, done = append(out, setting{name, value}), true
		}
		out = append(out, kv)
	}
	if !done {
		out = append(out, setting{name, value})
	}
	return out
}
