package main

import (
	"fmt"
	"math"
	"strconv"

	"github.com/urfave/cli/v2"
)

// finiteChecked holds the commands whose Before checks their number flags
// already: newApp runs once per app, and tests build many apps over the
// same commands.
var finiteChecked = map[*cli.Command]bool{}

// checkFinite makes cmd refuse NaN and infinities in every number flag it
// has, set on the command line or by its config file, before its own
// Before and Action: strconv takes "NaN", "+Inf" and "Infinity", and a NaN
// passes every `< 0` check a spec makes. One check for every float flag,
// defined by the knob table or by hand, rather than one per field.
func checkFinite(cmd *cli.Command) {
	if finiteChecked[cmd] {
		return
	}
	finiteChecked[cmd] = true
	before := cmd.Before
	cmd.Before = func(c *cli.Context) error {
		for _, f := range cmd.Flags {
			if _, ok := f.(*cli.Float64Flag); !ok {
				continue
			}
			name := f.Names()[0]
			if v := c.Float64(name); c.IsSet(name) && !isFinite(v) {
				return fmt.Errorf("%s: invalid value %q: %s", dashed(name), strconv.FormatFloat(v, 'g', -1, 64), finiteWant)
			}
		}
		if before != nil {
			return before(c)
		}
		return nil
	}
}

// finiteWant says what a number flag takes, when given NaN or infinity.
const finiteWant = "want a finite number"

func isFinite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
