package storm

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/stampede-dev/stampede/advise"
	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/chaos"
	"github.com/stampede-dev/stampede/report"
	"github.com/stampede-dev/stampede/results/folder"
	"github.com/stampede-dev/stampede/sim"
)

// PredictMitigations simulates every mitigation of a bench of mitigations
// (bc.Mitigations, measured in runs, one each) with the simulator, writes
// its figures to w with whether the measured and the predicted order the
// mitigations alike, and writes them to bc.Out's MitigationsFile.
func PredictMitigations(ctx context.Context, bc BenchConfig, runs []BenchRun, w io.Writer) error {
	st := bc.Storm
	sc := sim.Config{Client: st.Fleet.Client, Server: st.Target.Server, Duration: st.Duration,
		Schedule: st.Schedule, ScheduleText: st.ScheduleText}
	p, err := backoff.Parse(bc.Policies[0])
	if err != nil {
		return err
	}
	sc.Policy = p
	if sc.Procs == 0 {
		sc.Procs = max(1, (sc.Clients+PerProcess-1)/PerProcess) // the run's layout
	}
	measured := make([]advise.MeasuredMitigation, len(runs))
	for i, r := range runs {
		measured[i] = advise.MeasuredMitigation{Mitigation: r.Mitigation, Summary: r.Summary}
	}
	comp, err := advise.CompareMitigations(ctx, advise.Config{Sim: sc}, bc.Mitigations, measured)
	if err != nil {
		return err
	}
	if err := writePredicted(w, comp); err != nil {
		return err
	}
	if bc.Out == "" {
		return nil
	}
	return folder.WriteMitigations(bc.Out, comp)
}

// writePredicted writes the simulator's figures for each mitigation and
// how its order compares with the measured one.
func writePredicted(w io.Writer, comp *advise.MitigationComparison) error {
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
	_, err := fmt.Fprintf(w, "order by wasted attempts, then R99: measured %s; predicted %s: %s\n",
		advise.OrderText(comp.MeasuredOrder), advise.OrderText(comp.PredictedOrder), same)
	return err
}

// FromSim returns the storm that a simulation models: its fleet, its
// server in the simulated layout of processes (sim.PerProcess clients
// each, when it names no Procs), its schedule and duration. advise
// --verify runs it.
func FromSim(sc sim.Config) Config {
	var cfg Config
	cfg.Fleet.Client = sc.Client
	cfg.Target.Server = sc.Server
	if cfg.Target.Procs == 0 {
		cfg.Target.Procs = max(1, (sc.Clients+sim.PerProcess-1)/sim.PerProcess)
	}
	cfg.Schedule, cfg.ScheduleText, cfg.Duration = sc.Schedule, sc.ScheduleText, sc.Duration
	if cfg.Schedule == nil && sc.ScheduleText != "" {
		cfg.Schedule, _ = chaos.Parse(sc.ScheduleText)
	}
	return cfg
}
