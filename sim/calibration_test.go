package sim

import (
	"testing"
	"time"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/spec"
)

// TestCalibrationNote: a fleet above the largest calibrated real run is
// said to be extrapolated, in the summary of its simulation; one at it is
// not.
func TestCalibrationNote(t *testing.T) {
	if n := CalibrationNote(MaxCalibratedClients); n != "" {
		t.Errorf("at the largest calibrated run: note %q, want none", n)
	}
	want := "10,000,000 clients is above the largest calibrated real run (1,000,000): figures extrapolated"
	if MaxCalibratedClients != 1_000_000 {
		want = "" // the calibration grew: only the shape is checked below
	}
	if n := CalibrationNote(10_000_000); n == "" || (want != "" && n != want) {
		t.Errorf("10,000,000 clients: note %q, want %q", n, want)
	}
	for _, c := range []struct {
		n    int
		want string
	}{{1, "1"}, {999, "999"}, {1000, "1,000"}, {50_001, "50,001"}, {1_000_000, "1,000,000"}} {
		if got := thousands(c.n); got != c.want {
			t.Errorf("thousands(%d) = %q, want %q", c.n, got, c.want)
		}
	}
	for _, clients := range []int{MaxCalibratedClients, MaxCalibratedClients + 1} {
		cfg := Config{Client: spec.Client{Clients: clients, Policy: backoff.MustParse("fixed:initial=1s"), Seed: 1},
			Duration: 2 * time.Second}
		_, sum := run(t, cfg)
		if got, want := sum.SimulatedNote, CalibrationNote(clients); got != want || (clients > MaxCalibratedClients) != (got != "") {
			t.Errorf("%d clients: simulated_note %q, want %q", clients, got, want)
		}
	}
}
