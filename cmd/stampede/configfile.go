package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/urfave/cli/v2"
	"gopkg.in/yaml.v3"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/chaos"
	"github.com/stampede-dev/stampede/internal/redact"
	"github.com/stampede-dev/stampede/results/slo"
	"github.com/stampede-dev/stampede/sim"
)

// configCommands take --config FILE: a storm kept in a file, as people keep
// k6 scripts or Artillery YAML in git (docs/cli.md "Config files").
var configCommands = []string{"bench", "drill", "http", "loadgen", "run", "simulate"}

// configFlagName is the flag that names the file.
const configFlagName = "config"

// twinFlags are flags that fill one list under two names (--header and
// -H): a value given under either is the command line's.
var twinFlags = map[string][]string{"header": {"H"}, "H": {"header"}}

// configChecks check, as the file is read, the values that the flag set
// takes as any string but the command parses later, so a bad policy or
// schedule in a file is reported at its line, before anything runs.
var configChecks = map[string]func(string) error{
	"policy":   func(s string) error { _, err := backoff.Parse(s); return err },
	"policies": func(s string) error { _, err := backoff.Parse(s); return err },
	"chaos": func(s string) error {
		if _, err := chaos.Parse(s); err != nil {
			return errors.New(strings.TrimPrefix(err.Error(), "chaos: ")) // the key says it
		}
		return nil
	},
	"slo": func(s string) error { _, err := slo.ParseSLO(s); return err },
	"cpu-costs": func(s string) error {
		if _, err := sim.ParseCPUCosts(s); err != nil {
			return errors.New(strings.TrimPrefix(flagError(err).Error(), "--cpu-costs: ")) // the key says it
		}
		return nil
	},
	"cpu-per-connect": func(s string) error {
		if s == "" {
			return nil // the default: not given
		}
		_, _, err := parseCPUPerConnect(s)
		return err
	},
}

// withConfigFile adds --config to cmd and reads the file before cmd's own
// Before, so a flag required there may come from the file. It is
// idempotent: newApp runs once per app, and tests build many apps over the
// same commands.
func withConfigFile(cmd *cli.Command) {
	for _, f := range cmd.Flags {
		if f.Names()[0] == configFlagName {
			return
		}
	}
	cmd.Flags = append(cmd.Flags, &cli.StringFlag{Name: configFlagName,
		Usage: "read flags from the YAML or TOML `FILE` (.yaml, .yml, .toml): keys are flag names, e.g. clients: 10000; repeatable flags take a list; the command line overrides the file"})
	before := cmd.Before
	cmd.Before = func(c *cli.Context) error {
		if err := applyConfigFile(c); err != nil {
			return err
		}
		if before != nil {
			return before(c)
		}
		return nil
	}
}

// configEntry is one key of a config file with its values and position.
type configEntry struct {
	key         string
	line, col   int // of the key
	vline, vcol int // of the value
	values      []string
	list        bool   // given as a list
	bad         string // why the value cannot be a flag's (a table, a null)
}

// valueAt is where e's value is, for an error about it.
func (e configEntry) valueAt(file string) string {
	return fmt.Sprintf("%s:%d:%d", file, e.vline, e.vcol)
}

// applyConfigFile sets every flag that the file names and the command line
// (or the environment) left unset. A key that names no flag, or a value
// its flag refuses, is one line FILE:LINE:COL: ... (exit 2).
func applyConfigFile(c *cli.Context) error {
	file := c.String(configFlagName)
	if file == "" {
		return nil
	}
	entries, err := readConfigFile(file)
	if err != nil {
		return err
	}
	flags := map[string]cli.Flag{}
	for _, f := range c.Command.Flags {
		if hidden(f) {
			continue
		}
		for _, n := range f.Names() {
			if n != configFlagName && n != "help" && n != "h" {
				flags[n] = f
			}
		}
	}
	seen := map[string]configEntry{}
	for _, e := range entries {
		at := fmt.Sprintf("%s:%d:%d", file, e.line, e.col)
		if _, fleet := flags["protocol"]; fleet && isSection(e.key) {
			continue // a protocol's section: fillSession reads it
		}
		f, ok := flags[e.key]
		if !ok {
			return fmt.Errorf("%s: unknown key %q (keys are the flag names of stampede %s --help)", at, e.key, c.Command.Name)
		}
		name := f.Names()[0]
		if first, dup := seen[name]; dup {
			return fmt.Errorf("%s: %s: given twice (first at line %d)", at, e.key, first.line)
		}
		seen[name] = e
		at = e.valueAt(file)
		switch {
		case e.bad != "":
			return fmt.Errorf("%s: %s: %s", at, e.key, e.bad)
		case e.list && !repeatable(f):
			return fmt.Errorf("%s: %s: want one value, not a list", at, e.key)
		}
		for _, v := range e.values {
			addSecrets(flagSecrets(e.key, v, nil)...)
			if strings.Contains(v, "://") {
				addSecrets(redact.Values(nil, nil, v)...)
			}
		}
		for _, v := range e.values {
			if err := checkFlagValue(f, v); err != nil {
				return fmt.Errorf("%s: %s: invalid value %q: %v", at, e.key, echoValue(e.key, v), err)
			}
		}
		if setOnCommandLine(c, f) {
			continue
		}
		for _, v := range e.values {
			if err := c.Set(name, v); err != nil {
				return fmt.Errorf("%s: %s: invalid value %q: %v", at, e.key, echoValue(e.key, v), err)
			}
		}
	}
	return nil
}

// setOnCommandLine reports whether the user gave f on the command line (or
// in its environment variable), under any of its names or its twin's.
func setOnCommandLine(c *cli.Context, f cli.Flag) bool {
	for _, n := range f.Names() {
		if c.IsSet(n) {
			return true
		}
		for _, t := range twinFlags[n] {
			if c.IsSet(t) {
				return true
			}
		}
	}
	return false
}

// checkFlagValue checks v as f's type parses it, in the words of a usage
// error on the command line (want), then as the command will parse it
// later (configChecks).
func checkFlagValue(f cli.Flag, v string) error {
	var err error
	switch f.(type) {
	case *cli.IntFlag, *cli.Int64Flag:
		_, err = strconv.ParseInt(v, 0, 64)
	case *cli.UintFlag, *cli.Uint64Flag:
		_, err = strconv.ParseUint(v, 0, 64)
	case *cli.Float64Flag:
		var x float64
		if x, err = strconv.ParseFloat(v, 64); err == nil && !isFinite(x) {
			return errors.New(finiteWant)
		}
	case *cli.DurationFlag:
		_, err = time.ParseDuration(v)
	case *cli.BoolFlag:
		if _, err := strconv.ParseBool(v); err != nil {
			return errors.New("want true or false")
		}
	}
	switch {
	case errors.Is(err, strconv.ErrRange):
		return errors.New("out of range")
	case err != nil:
		return errors.New(want(f))
	}
	if check := configChecks[f.Names()[0]]; check != nil {
		return check(v)
	}
	return nil
}

// repeatable reports whether f takes several values (a slice flag, or the
// header list).
func repeatable(f cli.Flag) bool {
	if m, ok := f.(interface{ IsSliceFlag() bool }); ok && m.IsSliceFlag() {
		return true
	}
	_, ok := f.(*headersFlag)
	return ok
}

// hidden reports whether f is left out of --help (and so out of the keys).
func hidden(f cli.Flag) bool {
	switch f := f.(type) {
	case *headersFlag:
		return f.Hidden
	case interface{ IsVisible() bool }:
		return !f.IsVisible()
	}
	return false
}

// readConfigFile reads a YAML or TOML config file, by its extension, into
// its top-level keys in file order.
func readConfigFile(file string) ([]configEntry, error) {
	b, err := readCapped(file, maxConfigSize)
	if err != nil {
		return nil, fmt.Errorf("--config: %w", err)
	}
	if err := checkNesting(file, b); err != nil {
		return nil, err
	}
	switch strings.ToLower(filepath.Ext(file)) {
	case ".yaml", ".yml":
		return readYAMLConfig(file, b)
	case ".toml":
		return readTOMLConfig(file, b)
	}
	return nil, fmt.Errorf("--config %s: want a .yaml, .yml or .toml file", file)
}

// maxConfigSize caps a config file: a storm's flags fit in a few KB.
const maxConfigSize = 1 << 20

// maxConfigDepth caps the nesting of a config file (brackets, TOML table
// names, YAML indentation levels): its keys are flags, one level, with
// lists of values. The TOML decoder is quadratic in a table's depth (a
// 20 KB file of 4,000 nested tables took 1.8 s and 725 MB).
const maxConfigDepth = 16

// readCapped reads a file of at most max bytes, refusing a bigger one
// without reading it whole.
func readCapped(file string, max int64) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s: larger than %d bytes: a config file holds flags", file, max)
	}
	return b, nil
}

// checkNesting refuses a config file nested deeper than maxConfigDepth,
// before a decoder reads it: open brackets ([ {) outside quotes and
// comments, the dots of a TOML table name, the indentation levels of a
// YAML block. The line named is where the depth is first passed.
func checkNesting(file string, b []byte) error {
	depth, quote := 0, byte(0)
	var indents []int // YAML: the indentation of each open level
	toml := strings.EqualFold(filepath.Ext(file), ".toml")
	n := 0
	deep := func() error {
		return fmt.Errorf("%s:%d:1: nested deeper than %d levels: a config file holds flags", file, n+1, maxConfigDepth)
	}
	for i, line := range strings.Split(string(b), "\n") {
		n = i
		if quote == 0 {
			trimmed := strings.TrimLeft(line, " ")
			if ind := len(line) - len(trimmed); trimmed != "" && !strings.HasPrefix(trimmed, "#") {
				for len(indents) > 0 && indents[len(indents)-1] >= ind {
					indents = indents[:len(indents)-1]
				}
				indents = append(indents, ind)
			}
			// A TOML table name or dotted key: a level per dot.
			key, _, _ := strings.Cut(strings.SplitN(trimmed, "]", 2)[0], "=")
			if toml && strings.Count(key, ".") >= maxConfigDepth {
				return deep()
			}
		}
		for i := 0; i < len(line); i++ {
			switch c := line[i]; {
			case quote != 0:
				if c == '\\' && quote == '"' {
					i++
				} else if c == quote {
					quote = 0
				}
			case c == '"' || c == '\'':
				quote = c
			case c == '#':
				i = len(line)
			case c == '[' || c == '{':
				if depth++; depth > maxConfigDepth {
					return deep()
				}
			case c == ']' || c == '}':
				depth--
			}
		}
		if len(indents) > maxConfigDepth {
			return deep()
		}
	}
	return nil
}

// readYAMLConfig reads a YAML mapping of flag names to scalars or lists of
// scalars.
func readYAMLConfig(file string, b []byte) ([]configEntry, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, yamlError(file, err)
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, nil // an empty file sets nothing
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s:%d:%d: want a mapping of flag names to values, e.g. clients: 1000", file, root.Line, root.Column)
	}
	var out []configEntry
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		e := configEntry{key: k.Value, line: k.Line, col: k.Column, vline: v.Line, vcol: v.Column}
		if v.Kind == yaml.AliasNode {
			v = v.Alias
		}
		switch v.Kind {
		case yaml.ScalarNode:
			if v.Tag == "!!null" {
				e.bad = "no value"
			} else {
				e.values = []string{v.Value}
			}
		case yaml.SequenceNode:
			e.list = true
			for _, item := range v.Content {
				if item.Kind != yaml.ScalarNode {
					e.bad, e.vline, e.vcol = "want a list of values, not of lists or mappings", item.Line, item.Column
					break
				}
				e.values = append(e.values, item.Value)
			}
		default:
			e.bad = "want a value or a list of values, not a mapping"
		}
		out = append(out, e)
	}
	return out, nil
}

// yamlError turns a yaml.v3 error ("yaml: line 3: ...") into FILE:LINE:COL.
func yamlError(file string, err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if n, tail, ok := strings.Cut(rest, ": "); ok {
			if _, err := strconv.Atoi(n); err == nil {
				return fmt.Errorf("%s:%s:1: %s", file, n, tail)
			}
		}
	}
	return fmt.Errorf("%s: %s", file, msg)
}

// errPosition is what positionProbe returns so that the toml package
// reports the position of the key it was decoding.
var errPosition = errors.New("position")

// positionProbe decodes any TOML value by keeping it, then fails, so that
// MetaData.PrimitiveDecode answers with a toml.ParseError carrying the
// key's position: BurntSushi/toml keeps each key's position but exports
// it only through its errors.
type positionProbe struct{ data any }

func (p *positionProbe) UnmarshalTOML(data any) error {
	p.data = data
	return errPosition
}

// readTOMLConfig reads a TOML document of top-level flag names.
func readTOMLConfig(file string, b []byte) ([]configEntry, error) {
	var doc map[string]toml.Primitive
	md, err := toml.NewDecoder(strings.NewReader(string(b))).Decode(&doc)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("%s:%d:%d: %s", file, pe.Position.Line, pe.Position.Col, pe.Message)
		}
		return nil, fmt.Errorf("%s: %v", file, err)
	}
	lines := strings.Split(string(b), "\n")
	var out []configEntry
	for _, key := range md.Keys() {
		if len(key) != 1 {
			continue // inside a table: the table itself is reported
		}
		var probe positionProbe
		e := configEntry{key: key[0], line: 1, col: 1, vline: 1, vcol: 1}
		var pe toml.ParseError
		if err := md.PrimitiveDecode(doc[key[0]], &probe); errors.As(err, &pe) {
			// The position is the value's; the key is before it on its line.
			e.line, e.col, e.vline, e.vcol = pe.Position.Line, pe.Position.Col, pe.Position.Line, pe.Position.Col
			if n := e.line - 1; n < len(lines) {
				if i := strings.Index(lines[n], key[0]); i >= 0 && i+1 < e.col {
					e.col = i + 1
				}
				if e.vcol > len(lines[n]) { // a table's header: past its end
					e.vcol = e.col
				}
			}
		}
		switch v := probe.data.(type) {
		case []any:
			e.list = true
			for _, item := range v {
				s, ok := tomlScalar(item)
				if !ok {
					e.bad = "want a list of values, not of lists or tables"
					break
				}
				e.values = append(e.values, s)
			}
		case map[string]any, []map[string]any:
			e.bad = "want a value or a list of values, not a table"
		default:
			s, ok := tomlScalar(v)
			if !ok {
				e.bad = fmt.Sprintf("want a string, number or boolean, not %T", v)
			}
			e.values = []string{s}
		}
		out = append(out, e)
	}
	return out, nil
}

// tomlScalar writes a TOML scalar as it would be typed after the flag.
func tomlScalar(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case int64:
		return strconv.FormatInt(v, 10), true
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64), true
	case bool:
		return strconv.FormatBool(v), true
	}
	return "", false
}
