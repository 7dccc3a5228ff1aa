package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/stampede-dev/stampede/advise"
	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/chaos"
	"github.com/stampede-dev/stampede/mitigation"
	"github.com/stampede-dev/stampede/report"
	"github.com/stampede-dev/stampede/results/folder"
	"github.com/stampede-dev/stampede/sim"
	"github.com/stampede-dev/stampede/storm"
)

// benchMitigationPolicy is the policy a bench of mitigations runs without
// --policy: the fixed interval a fleet already in the field may have.
const benchMitigationPolicy = "fixed:initial=1s"

// benchMitigations sets a bench up to compare the mitigations: one
// policy, every kind with one window, checked before any socket opens.
func benchMitigations(c *cli.Context, bc *storm.BenchConfig) error {
	switch n := len(bc.Policies); {
	case n == 0:
		bc.Policies = []string{benchMitigationPolicy}
	case n > 1:
		return fmt.Errorf("--policy: --mitigations compares one policy, not %d", n)
	}
	if bc.Storm.Schedule == nil || !slices.ContainsFunc(bc.Storm.Schedule.Entries, isRestart) {
		return fmt.Errorf("--chaos: --mitigations needs a restart in the schedule (the mitigations act on one)")
	}
	window := mitigation.Window(bc.Storm.Fleet.Clients, bc.Storm.Target.AcceptRate)
	if c.IsSet("mitigation-window") {
		window = c.Duration("mitigation-window")
		if window < 1e9 {
			return fmt.Errorf("--mitigation-window: %v is below 1s (Retry-After carries whole seconds)", window)
		}
	}
	bc.Mitigations = mitigation.All(window)
	for _, m := range bc.Mitigations {
		if err := m.Check(bc.Storm.Target.Server); err != nil {
			return fmt.Errorf("--mitigations: %s: %w", m, flagError(err))
		}
	}
	return nil
}

// predictMitigations simulates every mitigation of the bench with the
// simulator, prints its figures under the measured table with whether
// both order the mitigations alike, and writes DIR/mitigations.json.
func predictMitigations(ctx context.Context, c *cli.Context, bc storm.BenchConfig, runs []storm.BenchRun) error {
	st := bc.Storm
	sc := sim.Config{Client: st.Fleet.Client, Server: st.Target.Server, Duration: st.Duration,
		Schedule: st.Schedule, ScheduleText: st.ScheduleText}
	p, err := backoff.Parse(bc.Policies[0])
	if err != nil {
		return err
	}
	sc.Policy = p
	if sc.Procs == 0 {
		sc.Procs = max(1, (sc.Clients+storm.PerProcess-1)/storm.PerProcess) // the run's layout
	}
	measured := make([]advise.MeasuredMitigation, len(runs))
	for i, r := range runs {
		measured[i] = advise.MeasuredMitigation{Mitigation: r.Mitigation, Summary: r.Summary}
	}
	comp, err := advise.CompareMitigations(ctx, advise.Config{Sim: sc}, bc.Mitigations, measured)
	if err != nil {
		return err
	}
	w := c.App.Writer
	fmt.Fprintf(w, "\npredicted by the simulator (%d simulations, %d seeds each):\n", comp.Simulations, advise.DefaultSeeds)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "mitigation\tR99 s\twasted/client\tpeak/100ms")
	for _, p := range comp.Predicted {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.Mitigation, report.FloatText(p.R99S, 2), report.FloatText(p.Wasted, 2), report.FloatText(p.Peak, 0))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	same := "the same order"
	if !comp.SameOrder {
		same = "a different order"
	}
	fmt.Fprintf(w, "order by wasted attempts, then R99: measured %s; predicted %s: %s\n",
		advise.OrderText(comp.MeasuredOrder), advise.OrderText(comp.PredictedOrder), same)
	if bc.Out == "" {
		return nil
	}
	b, err := json.MarshalIndent(comp, "", "  ")
	if err != nil {
		return err
	}
	return folder.WriteBytes(filepath.Join(bc.Out, folder.MitigationsFile), append(b, '\n'))
}

func isRestart(e chaos.Entry) bool { return e.Event.Kind == chaos.Restart }
