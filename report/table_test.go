package report

import (
	"strings"
	"testing"

	"github.com/stampede-dev/stampede/internal/resultstest"

	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/results/summary"
)

func TestWorstRecovery(t *testing.T) {
	rec := func(n, back int, r100 *float64, wasted float64) summary.Recovery {
		return summary.Recovery{ConnectedBefore: n, Disconnected: n, Recovered: back, R100S: r100, WastedAttemptsPerClient: resultstest.F(wasted)}
	}
	for _, tc := range []struct {
		name string
		recs []summary.Recovery
		want int // index of the expected event; -1 for none
	}{
		{"none", nil, -1},
		{"nobody connected: the first", []summary.Recovery{rec(0, 0, resultstest.F(0), 0), rec(0, 0, resultstest.F(0), 0)}, 0},
		{"skips the empty event", []summary.Recovery{rec(0, 0, resultstest.F(0), 9), rec(10, 10, resultstest.F(1), 0)}, 1},
		{"lower share recovered", []summary.Recovery{rec(10, 10, resultstest.F(30), 5), rec(100, 99, nil, 0)}, 1},
		{"never is longest", []summary.Recovery{rec(10, 10, resultstest.F(30), 0), rec(10, 10, nil, 0)}, 1},
		{"longer R100", []summary.Recovery{rec(10, 10, resultstest.F(3), 0), rec(10, 10, resultstest.F(2), 0)}, 0},
		{"then wasted attempts", []summary.Recovery{rec(10, 10, resultstest.F(2), 1), rec(10, 10, resultstest.F(2), 2)}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for i := range tc.recs {
				tc.recs[i].Event = i
			}
			got, ok := (&summary.Summary{Recovery: tc.recs}).WorstRecovery()
			if !ok && tc.want != -1 || ok && got.Event != tc.want {
				t.Errorf("WorstRecovery = event %d (ok %v), want %d", got.Event, ok, tc.want)
			}
		})
	}
}

func TestWriteComparison(t *testing.T) {
	fixed := summary.Summarize(resultstest.SummaryInput()) // the restart of ten, ListenOverflows 249
	never := &summary.Summary{
		Events: []summary.EventSummary{{Kind: "restart"}},
		Recovery: []summary.Recovery{{ConnectedBefore: 10000, Disconnected: 10000, Recovered: 9990, R99S: resultstest.F(7.25), HerdPeakPer100ms: resultstest.U32(600), HerdPeakToMean: resultstest.F(3.04),
			WastedAttemptsPerClient: resultstest.F(0.015), OutageAttemptsPerClient: resultstest.F(2), OutageS: resultstest.F(2)}},
		Kernel: results.KernelDelta{ListenOverflows: 23000},
	}
	var b strings.Builder
	if err := WriteComparison(&b, []summary.Row{
		{Policy: "fixed:initial=1s", Summary: fixed},
		{Policy: "exp:initial=100ms,jitter=0.5", Summary: never},
		{Policy: "full", Summary: nil}, // the run failed: a row of dashes
	}); err != nil {
		t.Fatal(err)
	}
	want := `policy                        event      recovered   R99 s  R100 s  peak/100ms  peak:mean  wasted/client  outage/client  ListenOverflows
fixed:initial=1s              1:restart  10/10       5.00   5.00    10          9.3        4.50           1.40           249
exp:initial=100ms,jitter=0.5  0:restart  9990/10000  7.25   never   600         3.0        0.01           2.00           23000
full                          -          -           -      -       -           -          -              -              -
`
	if b.String() != want {
		t.Errorf("table:\n%s\nwant\n%s", b.String(), want)
	}
}

// TestSideBySideCounts: the printer that sets a simulated run beside a real
// one writes counts whole (herd peak 65, ListenOverflows 249), never 65.00;
// seconds and ratios keep their two decimals.
func TestSideBySideCounts(t *testing.T) {
	real := &summary.Summary{
		Events:   []summary.EventSummary{{Kind: "restart"}},
		Recovery: []summary.Recovery{{ConnectedBefore: 10, Disconnected: 10, Recovered: 10, R99S: resultstest.F(2), HerdPeakPer100ms: resultstest.U32(65), WastedAttemptsPerClient: resultstest.F(0.5)}},
		Kernel:   results.KernelDelta{ListenOverflows: 249},
	}
	sim := &summary.Summary{
		Events:   []summary.EventSummary{{Kind: "restart"}},
		Recovery: []summary.Recovery{{ConnectedBefore: 10, Disconnected: 10, Recovered: 10, R99S: resultstest.F(2.5), HerdPeakPer100ms: resultstest.U32(52), WastedAttemptsPerClient: resultstest.F(0.25)}},
		Kernel:   results.KernelDelta{ListenOverflows: 200},
	}
	var b strings.Builder
	if err := WriteSideBySide(&b, summary.Row{Policy: "real", Summary: real}, summary.Row{Policy: "sim", Summary: sim}); err != nil {
		t.Fatal(err)
	}
	// Columns are compared with their padding squeezed: the widths follow
	// the widest cell ("never").
	squeezed := strings.Join(strings.Fields(b.String()), " ")
	for _, want := range []string{"herd peak/100ms 65 52", "ListenOverflows 249 200", "R99 s 2.00 2.50", "wasted/client 0.50 0.25"} {
		if !strings.Contains(squeezed, want) {
			t.Errorf("side by side lacks %q:\n%s", want, b.String())
		}
	}
	for _, line := range strings.Split(b.String(), "\n") {
		if (strings.HasPrefix(line, "herd peak") || strings.HasPrefix(line, "ListenOverflows")) && strings.Contains(line, ".00") {
			t.Errorf("a count with decimals: %q", line)
		}
	}
}
