package report

import (
	"strings"
	"testing"

	"github.com/stampede-dev/stampede/internal/resultstest"

	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/results/summary"
)

// A run taken on a busy machine says so in its text summary and under a
// bench comparison; a quiet one says only its load.
func TestBusyMachineSaid(t *testing.T) {
	quiet := &results.MachineLoad{Cores: 2, Load1Start: 0.4, Load1Max: 1.9, OwnCPUShare: 0.62, OtherCPUShare: 0.03}
	busy := &results.MachineLoad{Cores: 2, Load1Start: 2.5, Load1Max: 3, OwnCPUShare: 0.5, OtherCPUShare: 0.41}
	quiet.Judge()
	busy.Judge()
	if quiet.Busy || !busy.Busy {
		t.Fatalf("quiet %+v, busy %+v", quiet, busy)
	}
	a, b := summary.Summarize(resultstest.SummaryInput()), summary.Summarize(resultstest.SummaryInput())
	a.Machine, b.Machine = quiet, busy
	var text strings.Builder
	if err := WriteText(&text, b); err != nil {
		t.Fatal(err)
	}
	want := "machine: 2 cores, load 2.50 at the start (max 3.00), this run 50 % of the CPU, other processes 41 %, steal 0 %; BUSY: other processes took 41 % of the CPU (more than 25 %): the figures may differ on a quiet machine\n"
	if !strings.Contains(text.String(), want) {
		t.Errorf("text lacks %q:\n%s", want, text.String())
	}
	text.Reset()
	WriteText(&text, a)
	if !strings.Contains(text.String(), "machine: 2 cores, load 0.40 at the start (max 1.90), this run 62 % of the CPU, other processes 3 %, steal 0 %\n") {
		t.Errorf("quiet run's text:\n%s", text.String())
	}
	var cmp strings.Builder
	if err := WriteComparison(&cmp, []summary.Row{{Policy: "fixed", Summary: a}, {Policy: "full", Summary: b}, {Policy: "failed"}}); err != nil {
		t.Fatal(err)
	}
	if got := cmp.String(); !strings.HasSuffix(got, "\nbusy machine: full: other processes took 41 % of the CPU (more than 25 %); its figures may differ on a quiet machine\n") ||
		strings.Contains(got, "busy machine: fixed") {
		t.Errorf("comparison:\n%s", got)
	}
}

// The simulator's error table prints counts as integers and an R figure
// never reached as "never", as every other table does.
func TestSideBySideText(t *testing.T) {
	real, sim := summary.Summarize(resultstest.SummaryInput()), summary.Summarize(resultstest.SummaryInput())
	for i := range real.Recovery {
		real.Recovery[i].R99S, real.Recovery[i].R100S = nil, nil // not all back
	}
	sim.Kernel.ListenOverflows = 2 * real.Kernel.ListenOverflows
	var b strings.Builder
	if err := WriteSideBySide(&b, summary.Row{Policy: "real", Summary: real}, summary.Row{Policy: "sim", Summary: sim}); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	for _, want := range []string{"R99 s            never  5.00  -\n", "herd peak/100ms  10     10    +0 %\n",
		"ListenOverflows  249    498   +100 %\n"} { // integers, and never, as the other tables
		if !strings.Contains(got, want) {
			t.Errorf("side by side lacks %q:\n%s", want, got)
		}
	}
}
