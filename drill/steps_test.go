package drill

import (
	"testing"
	"time"

	"github.com/stampede-dev/stampede/results"
)

// TestStepsOf: rolling-deploy.sh's step lines become the deploy event's
// steps on the run's time axis; other output is ignored.
func TestStepsOf(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	out := "stampede-event: deploy-start deploy 2026-12-01T10:00:10.000Z 2 backend(s)\n" +
		"stampede-event: drain s1 2026-12-01T10:00:10.100Z 3334 session(s)\n" +
		"some ordinary output\n" +
		"stampede-event: restart s1 2026-12-01T10:00:12.100Z 3334 session(s) left after the drain\n" +
		"stampede-event: up s1 2026-12-01T10:00:15.000Z pid 42\n" +
		"stampede-event: ready s1 2026-12-01T10:00:15.500Z\n" +
		"stampede-event: restart web-b 2026-12-01T10:00:16.000Z\n" +
		"stampede-event: up web-b 2026-12-01T10:00:18.000Z\n" +
		"stampede-event: ready web-b 2026-12-01T10:00:18.250Z\n" +
		"stampede-event: deploy-end deploy 2026-12-01T10:00:18.300Z\n"
	got := stepsOf(out, t0)
	want := []results.Step{
		{Proc: 1, Start: 10100 * time.Millisecond, End: 15 * time.Second, Ready: 15500 * time.Millisecond, Conns: 3334},
		{Proc: 2, Start: 16 * time.Second, End: 18 * time.Second, Ready: 18250 * time.Millisecond, Conns: -1},
	}
	if len(got) != len(want) {
		t.Fatalf("steps %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("step %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if s := stepsOf("no steps here\n", t0); s != nil {
		t.Errorf("steps of plain output: %+v, want none", s)
	}
}
