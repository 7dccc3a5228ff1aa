package supervisor

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stampede-dev/stampede/chaos"
	"github.com/stampede-dev/stampede/results"
)

// stepTarget restarts a group of procs processes one at a time in virtual
// time, and counts early retries per process id as a test tells it to.
type stepTarget struct {
	stubTarget
	procs int

	mu     sync.Mutex
	early  map[int]uint64 // by pid
	reject time.Duration  // the last chaos.Reject's window
}

func (t *stepTarget) RestartSteps(ctx context.Context, ev chaos.Event) (Restarted, error) {
	var res Restarted
	for i := range t.procs {
		if i > 0 {
			time.Sleep(ev.Interval)
		}
		st := Step{Proc: i, Stop: time.Now()}
		time.Sleep(ev.Down)
		st.Listening = time.Now()
		time.Sleep(10 * time.Millisecond) // the new process starts
		st.Ready = time.Now()
		res.Steps = append(res.Steps, st)
		res.Listening, res.Ready = st.Listening, st.Ready
	}
	return res, nil
}

func (t *stepTarget) Reject(_ context.Context, _ int, _, d time.Duration) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.reject = d
	return nil
}

func (t *stepTarget) EarlyRetries(context.Context) (map[int]uint64, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := map[int]uint64{}
	for pid, n := range t.early {
		out[pid] = n
	}
	return out, nil
}

func (t *stepTarget) count(pid int, n uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.early[pid] += n
}

// A rolling restart is recorded with one step per process on the run's
// time axis, its end and ready those of the last process.
func TestSupervisorRollingSteps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sched, err := chaos.Parse("at 1s restart rolling interval=2s down=500ms")
		if err != nil {
			t.Fatal(err)
		}
		s := &Supervisor{Schedule: sched, Target: &stepTarget{procs: 3}}
		if err := s.Run(context.Background(), time.Now(), time.Minute); err != nil {
			t.Fatal(err)
		}
		ev := s.Events()
		ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
		want := []results.Step{
			{Proc: 0, Start: ms(1000), End: ms(1500), Ready: ms(1510)},
			{Proc: 1, Start: ms(3510), End: ms(4010), Ready: ms(4020)},
			{Proc: 2, Start: ms(6020), End: ms(6520), Ready: ms(6530)},
		}
		if len(ev) != 1 || len(ev[0].Steps) != len(want) {
			t.Fatalf("events %+v; want one restart with %d steps", ev, len(want))
		}
		for i, st := range ev[0].Steps {
			if st != want[i] {
				t.Errorf("step %d = %+v; want %+v", i, st, want[i])
			}
		}
		if e := ev[0]; e.Start != ms(1000) || e.End != ms(6520) || e.Ready != ms(6530) || e.Mode != chaos.ModeAbrupt {
			t.Errorf("event %+v; want start 1s, end 6.52s, ready 6.53s, mode abrupt", e)
		}
	})
}

// The early retries of a reject are what the target counted from before
// the window to its end plus the Retry-After, a process restarted
// meanwhile counting from zero; late arrivals are not the event's.
func TestSupervisorRejectEarlyRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sched, err := chaos.Parse("at 1s reject 503 retry-after=2s for 3s; at 10s reject 429 for 1s")
		if err != nil {
			t.Fatal(err)
		}
		tg := &stepTarget{early: map[int]uint64{100: 7, 200: 1}} // counts from earlier events
		s := &Supervisor{Schedule: sched, Target: tg}
		start := time.Now()
		go func() {
			at := func(d time.Duration) { time.Sleep(time.Until(start.Add(d))) }
			at(2 * time.Second)
			tg.count(100, 3) // during the window
			at(5 * time.Second)
			tg.count(300, 2) // a respawned process, after the window, within the Retry-After
			at(7 * time.Second)
			tg.count(100, 50) // after end + Retry-After + margin: not this event's
		}()
		if err := s.Run(context.Background(), start, time.Minute); err != nil {
			t.Fatal(err)
		}
		ev := s.Events()
		if len(ev) != 2 {
			t.Fatalf("events %+v; want 2", ev)
		}
		if e := ev[0]; e.EarlyRetries == nil || *e.EarlyRetries != 5 || e.End != 4*time.Second || e.Ready != e.End {
			t.Errorf("first reject: early %v, end %v, ready %v; want 5 early retries, end and ready at 4s", e.EarlyRetries, e.End, e.Ready)
		}
		if e := ev[1]; e.EarlyRetries != nil {
			t.Errorf("a reject without Retry-After counted %d early retries; want none counted", *e.EarlyRetries)
		}
	})
}

// Current no longer names a reject once its window is over, while the
// supervisor waits out the Retry-After to count early retries.
func TestSupervisorRejectCurrent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sched, err := chaos.Parse("at 1s reject 503 retry-after=2s for 1s")
		if err != nil {
			t.Fatal(err)
		}
		s := &Supervisor{Schedule: sched, Target: &stepTarget{early: map[int]uint64{}}}
		start := time.Now()
		done := make(chan error)
		go func() { done <- s.Run(context.Background(), start, time.Minute) }()
		time.Sleep(time.Until(start.Add(1500 * time.Millisecond)))
		synctest.Wait()
		if s.Current() == "" {
			t.Error("Current() empty during the reject window")
		}
		time.Sleep(time.Until(start.Add(2500 * time.Millisecond)))
		synctest.Wait()
		if c := s.Current(); c != "" {
			t.Errorf("Current() = %q after the window; want empty", c)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

// An event under way when the run's ctx ends is recorded all the same,
// never ready again as far as the run saw; one not yet started is not.
func TestSupervisorKeepsEventUnderWay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sched, err := chaos.Parse("at 1s stall for 5s; at 10s backlog 5")
		if err != nil {
			t.Fatal(err)
		}
		s := &Supervisor{Schedule: sched, Target: &stepTarget{}}
		start := time.Now()
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(3*time.Second, cancel) // an interrupt mid-stall
		if err := s.Run(ctx, start, time.Minute); err != nil {
			t.Fatalf("Run: %v; an interrupt is no error of the schedule", err)
		}
		ev := s.Events()
		if len(ev) != 1 {
			t.Fatalf("events %+v; want the stall alone", ev)
		}
		if e := ev[0]; e.Kind != "stall" || e.Start != time.Second || !e.NeverReady || e.End != 0 || e.Ready != 0 {
			t.Errorf("event %+v; want the stall from 1s, never ready, no end", e)
		}
	})
}
