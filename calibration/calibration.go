// Package calibration holds the figures measured on real runs that the
// product uses as its defaults: the simulator's CPU costs, restart
// timing, SYN give-ups and calibrated range, the worker's GOGC. They are data, not code: calibration.json,
// embedded in the binary, carries each figure with where it came from
// (the command, the date, the machine), and lab/calibrate writes it from
// its measurements. The product reads Embedded.
package calibration

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// File is a calibration file: its figures, each named once.
type File struct {
	// Figures are the file's figures, in the order they are written.
	Figures []Figure `json:"figures"`
}

// Figure is one measured figure and where it came from.
type Figure struct {
	// Name names the figure where the product reads it:
	// "sim.cpu.attempt", "worker.gc_percent".
	Name string `json:"name"`
	// Value is the figure as text: a Go duration ("44µs"), an integer or
	// a decimal number, as the reader of its name takes it.
	Value string `json:"value"`
	// Source is where the value came from.
	Source Source `json:"source"`
}

// Source is where a figure came from: the command that measured it, when
// and on what machine.
type Source struct {
	// Command is the command line (or lines, "; " apart) that produced
	// the measurement the value is read from.
	Command string `json:"command"`
	// Date is the day of the measurement, 2006-01-02.
	Date string `json:"date"`
	// Machine is the machine it ran on.
	Machine Machine `json:"machine"`
	// Note says how the value was read off the measurement, when the
	// command alone does not.
	Note string `json:"note,omitempty"`
}

// Machine is the machine a figure was measured on.
type Machine struct {
	// Kind is what the machine is: "VM, 24 GiB".
	Kind string `json:"kind"`
	// Cores is how many CPUs it had.
	Cores int `json:"cores"`
	// Kernel is its kernel's release (uname -r), as far as it was
	// recorded.
	Kernel string `json:"kernel"`
}

//go:embed calibration.json
var embedded []byte

// Embedded is the calibration file built into the binary, the figures the
// product uses.
var Embedded = mustParse(embedded)

// mustParse returns the parsed file b; a malformed embedded file is a
// build that must not ship (TestEmbedded).
func mustParse(b []byte) File {
	f, err := Parse(b)
	if err != nil {
		panic("calibration.json: " + err.Error())
	}
	return f
}

// Parse reads a calibration file and checks that every figure has a name
// of its own, a value, and a source with a command, a date and a machine.
func Parse(b []byte) (File, error) {
	var f File
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&f); err != nil {
		return File{}, err
	}
	return f, f.Validate()
}

// Validate checks that every figure has a name of its own, a value, and
// a source with a command, a date and a machine with its cores.
func (f File) Validate() error {
	seen := map[string]bool{}
	for i, g := range f.Figures {
		if field, problem := g.invalid(seen); field != "" {
			where := fmt.Sprintf("Figures[%d] %s", i, g.Name)
			return fmt.Errorf("%s: %s: %s", where, field, problem)
		}
		seen[g.Name] = true
	}
	return nil
}

// invalid returns the field of g that is wrong and what is wrong with it,
// "" when none is; seen holds the names of the figures before it.
func (g Figure) invalid(seen map[string]bool) (field, problem string) {
	m := g.Source.Machine
	switch {
	case g.Name == "":
		return "Name", "empty"
	case seen[g.Name]:
		return "Name", "named twice"
	case g.Value == "":
		return "Value", "empty"
	case g.Source.Command == "":
		return "Source.Command", "empty"
	case m.Kind == "" || m.Kernel == "" || m.Cores <= 0:
		return "Source.Machine", "needs a kind, its cores and a kernel"
	}
	if _, err := time.Parse(time.DateOnly, g.Source.Date); err != nil {
		return "Source.Date", fmt.Sprintf("%q is not a day, 2006-01-02", g.Source.Date)
	}
	return "", ""
}

// Marshal writes f as calibration.json holds it: indented, one figure a
// block, ending in a newline.
func (f File) Marshal() ([]byte, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	e := json.NewEncoder(&buf)
	e.SetEscapeHTML(false)
	e.SetIndent("", "\t")
	if err := e.Encode(f); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Set puts g in f: in place of the figure of the same name, or last.
func (f *File) Set(g Figure) {
	for i := range f.Figures {
		if f.Figures[i].Name == g.Name {
			f.Figures[i] = g
			return
		}
	}
	f.Figures = append(f.Figures, g)
}

// Lookup returns the figure named name.
func (f File) Lookup(name string) (Figure, bool) {
	for _, g := range f.Figures {
		if g.Name == name {
			return g, true
		}
	}
	return Figure{}, false
}

// Duration returns the figure named name as a duration.
func (f File) Duration(name string) (time.Duration, error) {
	return parse(f, name, time.ParseDuration)
}

// Int returns the figure named name as an integer.
func (f File) Int(name string) (int, error) { return parse(f, name, strconv.Atoi) }

// Float returns the figure named name as a number.
func (f File) Float(name string) (float64, error) {
	return parse(f, name, func(v string) (float64, error) { return strconv.ParseFloat(v, 64) })
}

// Durations returns the figure named name as a list of durations, comma
// separated: "3s,7.1s,19.5s".
func (f File) Durations(name string) ([]time.Duration, error) {
	return parse(f, name, func(v string) ([]time.Duration, error) {
		var ds []time.Duration
		for _, p := range strings.Split(v, ",") {
			d, err := time.ParseDuration(strings.TrimSpace(p))
			if err != nil {
				return nil, err
			}
			ds = append(ds, d)
		}
		return ds, nil
	})
}

// parse returns the value of the figure of f named name, read by read;
// an error names the figure.
func parse[T any](f File, name string, read func(string) (T, error)) (T, error) {
	var zero T
	g, ok := f.Lookup(name)
	if !ok {
		return zero, fmt.Errorf("calibration: no figure %q", name)
	}
	v, err := read(g.Value)
	if err != nil {
		return zero, fmt.Errorf("calibration: %s: %w", name, err)
	}
	return v, nil
}

// MustDuration is Embedded's Duration, for a package's defaults: a figure
// missing from the embedded file is a build that must not ship, and every
// name the product reads is checked by TestEmbedded.
func MustDuration(name string) time.Duration { return must(Embedded.Duration(name)) }

// MustDurations is Embedded's Durations, as MustDuration.
func MustDurations(name string) []time.Duration { return must(Embedded.Durations(name)) }

// MustInt is Embedded's Int, as MustDuration.
func MustInt(name string) int { return must(Embedded.Int(name)) }

// MustFloat is Embedded's Float, as MustDuration.
func MustFloat(name string) float64 { return must(Embedded.Float(name)) }

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
