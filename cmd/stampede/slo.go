package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/stampede-dev/stampede/results/slo"
	"github.com/stampede-dev/stampede/results/summary"
)

// sloFlag is --slo, which run, bench and loadgen take.
func sloFlag() cli.Flag {
	return &cli.StringSliceFlag{Name: "slo", Usage: "gate `EXPR` on a figure of summary.json, e.g. 'r99<20s', 'lost==0', " +
		"'herd_peak_to_mean<5', 'connect_p99<=250ms' (repeatable; exit status 1 when one fails; figures in docs/results.md)"}
}

// sloFlagValue parses every --slo of a WebSocket run, or of an HTTP fleet
// (http): a figure the run never measures is refused with the rest, and
// so is a recovery figure on run, bench or simulate without a chaos
// schedule (loadgen and drill detect outages from the clients' side).
func sloFlagValue(c *cli.Context, http bool) ([]slo.SLO, error) {
	slos, err := slo.ParseSLOs(c.StringSlice("slo"))
	if err == nil {
		err = slo.CheckSLOKind(slos, http)
	}
	if err == nil && !http && schedulesNoEvent(c) {
		if err = slo.CheckSLORecovery(slos); err != nil {
			return nil, fmt.Errorf("--slo: %w (give --chaos, e.g. 'at 5s restart abrupt down=2s')", err)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("--slo: %w", err)
	}
	return slos, nil
}

// schedulesNoEvent reports whether c is a run, bench or simulate with no
// chaos schedule: nothing in it disconnects the fleet.
func schedulesNoEvent(c *cli.Context) bool {
	switch c.Command.Name {
	case "run", "bench", "simulate":
		return strings.TrimSpace(c.String("chaos")) == "" && c.String("chaos-file") == ""
	}
	return false
}

// sloExit returns exit status 1 with a one-line reason when a summary
// failed one of its SLOs, nil when all passed. The SLO lines themselves
// are printed with the summary.
func sloExit(sums ...*summary.Summary) error {
	var failed []string
	n := 0
	for _, s := range sums {
		if s == nil {
			continue
		}
		n += len(s.SLO) + len(s.Checks)
		for _, r := range s.SLO {
			if !r.Pass {
				failed = append(failed, r.Expr)
			}
		}
		for _, c := range s.Checks {
			if !c.Pass {
				failed = append(failed, c.Name)
			}
		}
	}
	if len(failed) == 0 {
		return nil
	}
	what := "SLO(s)"
	for _, s := range sums {
		if s != nil && len(s.Checks) > 0 {
			what = "gate(s)" // SLOs and checks (a drill's deploy)
		}
	}
	return cli.Exit(fmt.Sprintf("%d of %d %s failed: %s", len(failed), n, what, strings.Join(failed, ", ")), 1)
}

// writeSLOLines prints a summary's SLO lines, each prefixed (a bench's
// policy), for a command that does not print the whole summary.
func writeSLOLines(w io.Writer, prefix string, s *summary.Summary) {
	if s == nil {
		return
	}
	for _, r := range s.SLO {
		fmt.Fprintf(w, "%s%s\n", prefix, r.Line())
	}
}
