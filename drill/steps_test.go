package drill

import (
	"testing"
	"time"

	"github.com/stampede-dev/stampede/results"
)

// TestStepLinesOf: rolling-deploy.sh's step lines become the deploy
// event's steps on the run's time axis, with each backend's restart;
// other output is ignored.
func TestStepLinesOf(t *testing.T) {
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
	got := stepLinesOf(out, t0)
	want := []deployStep{
		{Step: results.Step{Proc: 1, Start: 10100 * time.Millisecond, End: 15 * time.Second, Ready: 15500 * time.Millisecond, Conns: 3334}, Name: "s1", Restart: 12100 * time.Millisecond},
		{Step: results.Step{Proc: 2, Start: 16 * time.Second, End: 18 * time.Second, Ready: 18250 * time.Millisecond, Conns: -1}, Name: "web-b", Restart: 16 * time.Second},
	}
	if len(got) != len(want) {
		t.Fatalf("steps %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("step %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if s := stepLinesOf("no steps here\n", t0); s != nil {
		t.Errorf("steps of plain output: %+v, want none", s)
	}
}

// TestBackendEvents: each restarted backend is a recovery event from its
// restart, ready at once while another backend is in rotation, else at
// the first ready line after it, never ready without one; each explains
// the outage its clients detect.
func TestBackendEvents(t *testing.T) {
	s := func(d float64) time.Duration { return time.Duration(d * float64(time.Second)) }
	step := func(name string, drain, restart, up, ready float64) deployStep {
		return deployStep{Step: results.Step{Start: s(drain), End: s(up), Ready: s(ready)}, Name: name, Restart: s(restart)}
	}
	for _, tc := range []struct {
		name  string
		steps []deployStep
		want  []results.Event
	}{
		{
			name: "rolling over three",
			steps: []deployStep{
				step("s1", 10, 12, 15, 15.5),
				step("s2", 16, 18, 21, 21.5),
				step("s3", 22, 24, 27, 27.5),
			},
			want: []results.Event{
				{Kind: "backend", Mode: "restart", Spec: "s1", Start: s(12), End: s(15), Ready: s(12)},
				{Kind: "backend", Mode: "restart", Spec: "s2", Start: s(18), End: s(21), Ready: s(18)},
				{Kind: "backend", Mode: "restart", Spec: "s3", Start: s(24), End: s(27), Ready: s(24)},
			},
		},
		{
			name:  "the only backend",
			steps: []deployStep{step("s1", 10, 12, 15, 15.5)},
			want:  []results.Event{{Kind: "backend", Mode: "restart", Spec: "s1", Start: s(12), End: s(15), Ready: s(15.5)}},
		},
		{
			// s2 was drained while s1 was still out: nobody in rotation at
			// s2's restart until s1's ready line.
			name: "overlapping steps",
			steps: []deployStep{
				step("s1", 10, 12, 15, 16),
				step("s2", 11, 13, 17, 18),
			},
			want: []results.Event{
				{Kind: "backend", Mode: "restart", Spec: "s1", Start: s(12), End: s(15), Ready: s(16)},
				{Kind: "backend", Mode: "restart", Spec: "s2", Start: s(13), End: s(17), Ready: s(16)},
			},
		},
		{
			name:  "never up again",
			steps: []deployStep{step("s1", 10, 12, 0, 0)},
			want:  []results.Event{{Kind: "backend", Mode: "restart", Spec: "s1", Start: s(12), NeverReady: true}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := backendEvents(tc.steps)
			if len(got) != len(tc.want) {
				t.Fatalf("events %+v, want %+v", got, tc.want)
			}
			for i := range tc.want {
				g, w := got[i], tc.want[i]
				if g.Kind != w.Kind || g.Mode != w.Mode || g.Spec != w.Spec || g.Start != w.Start || g.End != w.End || g.Ready != w.Ready || g.NeverReady != w.NeverReady || !g.Explains {
					t.Errorf("event %d: %+v, want %+v", i, g, w)
				}
			}
		})
	}
}
