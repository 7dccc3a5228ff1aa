package procgroup

import (
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/childproc"
)

// TestMain doubles as a member: with STAMPEDE_PROCGROUP_TEST set it prints
// a ready line and then acts as told.
func TestMain(m *testing.M) {
	switch mode := os.Getenv("STAMPEDE_PROCGROUP_TEST"); mode {
	case "":
		os.Exit(m.Run())
	default:
		var plan struct{}
		childproc.ReadPlan(os.Stdin, &plan)
		if mode == "stubborn" { // ignores SIGTERM: only a kill ends it
			signal.Ignore(syscall.SIGTERM)
		}
		childproc.WriteReady(os.Stdout, childproc.ReadyLine{Ready: true, Addr: "127.0.0.1:1", PID: os.Getpid()})
		if mode == "crash" {
			os.Exit(7)
		}
		time.Sleep(time.Minute)
		os.Exit(0)
	}
}

func spawn(t *testing.T, mode string) Spawn {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return func() (*childproc.Child, childproc.ReadyLine, error) {
		cmd := exec.Command(exe)
		cmd.Env = append(os.Environ(), "STAMPEDE_PROCGROUP_TEST="+mode)
		var l childproc.ReadyLine
		c, err := childproc.Start(t.Context(), "member", cmd, struct{}{}, &l, 10*time.Second)
		return c, l, err
	}
}

// A member's ready line is kept, with the token it was given when the line
// has none; a crash is reported, a stop the group asked for is not.
func TestWatchTellsCrashFromStop(t *testing.T) {
	crashed, err := Start(spawn(t, "crash"), "tok")
	if err != nil {
		t.Fatal(err)
	}
	if crashed.Line.Addr != "127.0.0.1:1" || crashed.Line.Token != "tok" {
		t.Errorf("ready line %+v; want addr 127.0.0.1:1 and token tok", crashed.Line)
	}
	got := make(chan error, 1)
	crashed.Watch(func(err error) { got <- err })
	select {
	case err := <-got:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 7 {
			t.Errorf("crash reported with %v; want exit status 7", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a crash was not reported")
	}

	stopped, err := Start(spawn(t, "sleep"), "")
	if err != nil {
		t.Fatal(err)
	}
	var reported atomic.Bool
	stopped.Watch(func(error) { reported.Store(true) })
	StopAll([]*Member{stopped}, syscall.SIGTERM, 5*time.Second)
	time.Sleep(100 * time.Millisecond) // room for a wrong report to land
	if reported.Load() {
		t.Error("a member the group stopped was reported as a crash")
	}
}

// StopAll kills a member that outlives the grace, and returns only when
// every member has exited.
func TestStopAllKillsAfterGrace(t *testing.T) {
	var ms []*Member
	for _, mode := range []string{"sleep", "stubborn"} {
		m, err := Start(spawn(t, mode), "")
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	StopAll(ms, syscall.SIGTERM, 200*time.Millisecond)
	for i, m := range ms {
		if !m.Exited() {
			t.Errorf("member %d still running after StopAll", i)
		}
	}
	var ee *exec.ExitError
	if err := ms[1].Wait(); !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Errorf("the stubborn member ended with %v; want SIGKILL", err)
	}
}

// Each reaches every member and joins their errors.
func TestEach(t *testing.T) {
	var n atomic.Int32
	boom := errors.New("boom")
	err := Each([]int{1, 2, 3}, func(i int) error {
		n.Add(1)
		if i == 2 {
			return boom
		}
		return nil
	})
	if n.Load() != 3 || !errors.Is(err, boom) {
		t.Errorf("Each ran %d, returned %v; want 3 and boom", n.Load(), err)
	}
}
