package supervisor

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stampede-dev/stampede/chaos"
)

// stubTarget accepts every action at once.
type stubTarget struct{}

func (stubTarget) Restart(ctx context.Context, ev chaos.Event) (time.Time, time.Time, error) {
	time.Sleep(ev.Down)
	return time.Now(), time.Now(), nil
}
func (stubTarget) Stall(context.Context, time.Duration) error                      { return nil }
func (stubTarget) SetBacklog(context.Context, int) error                           { return nil }
func (stubTarget) SetAcceptRate(context.Context, float64) error                    { return nil }
func (stubTarget) Reject(context.Context, int, time.Duration, time.Duration) error { return nil }
func (stubTarget) Backlog() int                                                    { return 128 }
func (stubTarget) AcceptRate() float64                                             { return 0 }

// TestSupervisorCurrent checks that Current names the events under way,
// overlapping ones joined, and nothing between them.
func TestSupervisorCurrent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sched, err := chaos.Parse("at 1s stall 2s; at 2s backlog 16 for 2s")
		if err != nil {
			t.Fatal(err)
		}
		plan := sched.Plan(10 * time.Second)
		stall, backlog := plan[0].Text, plan[1].Text
		s := &Supervisor{Schedule: sched, Target: stubTarget{}}
		done := make(chan error)
		start := time.Now()
		go func() { done <- s.Run(context.Background(), start, 10*time.Second) }()
		for _, c := range []struct {
			at   time.Duration // offset from start
			want string
		}{
			{500 * time.Millisecond, ""},
			{1500 * time.Millisecond, stall},
			{2500 * time.Millisecond, stall + " + " + backlog},
			{3500 * time.Millisecond, backlog},
			{4500 * time.Millisecond, ""},
		} {
			time.Sleep(time.Until(start.Add(c.at)))
			synctest.Wait()
			if got := s.Current(); got != c.want {
				t.Errorf("at %s: Current() = %q, want %q", c.at, got, c.want)
			}
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}
