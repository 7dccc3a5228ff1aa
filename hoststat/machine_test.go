package hoststat

import (
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/results"
)

func TestParseProcStat(t *testing.T) {
	in := "cpu  1000 200 300 4000 50 10 40 100 7 0\ncpu0 500 100 150 2000 25 5 20 50 7 0\ncpu1 500 100 150 2000 25 5 20 50 0 0\nintr 1 2 3\nctxt 9\n"
	c, err := ParseProcStat(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	// Busy: user 10 + nice 2 + system 3 + irq 0.1 + softirq 0.4 (guest
	// is inside user); steal 1; total adds idle 40 and iowait 0.5.
	want := CPUTimes{Busy: 15.5, Steal: 1, Total: 57, Cores: 2}
	if c != want {
		t.Errorf("got %+v, want %+v", c, want)
	}
	for _, bad := range []string{"", "cpu 1 2 3\n", "cpu 1 2 3 x 5 6 7 8\n"} {
		if _, err := ParseProcStat(strings.NewReader(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	if l, err := ParseLoadAvg(strings.NewReader("1.25 0.80 0.40 3/200 123\n")); err != nil || l != 1.25 {
		t.Errorf("load %v, %v", l, err)
	}
}

// fakeMachine is a scripted /proc/stat and /proc/loadavg: reading i gives
// step i.
type fakeMachine struct {
	step  *int
	cpu   []CPUTimes
	load1 []float64
}

func (f fakeMachine) read() (CPUTimes, float64, error) { return f.cpu[*f.step], f.load1[*f.step], nil }

// TestMachineLoadJudged: with an injected clock and scripted readings,
// what the machine did beyond the run's own processes is the other
// processes' share, and the busy flag follows the thresholds exactly.
func TestMachineLoadJudged(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 7, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name       string
		busy, own  float64 // machine busy CPU seconds and the run's over the 10 s
		steal      float64
		wantOther  float64
		wantBusy   bool
		wantReason string
	}{
		// The run took 12 of the 20 core-seconds and nothing else ran.
		{name: "quiet", busy: 12, own: 12, wantOther: 0},
		// Other processes took exactly a quarter: not over the line.
		{name: "at the line", busy: 17, own: 12, wantOther: 0.25},
		// Other processes took 8 of 20 core-seconds.
		{name: "busy", busy: 20, own: 12, wantOther: 0.4, wantBusy: true, wantReason: "other processes took 40 % of the CPU (more than 25 %)"},
		// A hypervisor stole 3 of 20.
		{name: "steal", busy: 12, own: 12, steal: 3, wantBusy: true, wantReason: "the hypervisor stole 15 % of the CPU (more than 10 %)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			step := 0
			m := fakeMachine{step: &step,
				cpu:   []CPUTimes{{Busy: 100, Total: 1000, Cores: 2}, {Busy: 100 + tc.busy, Steal: tc.steal, Total: 1020, Cores: 2}},
				load1: []float64{0.5, 1.75}}
			f := &fakeProcs{script: []map[int32]procSample{{7: {created: 1, cpu: 3}}, {7: {created: 1, cpu: 3 + tc.own}}}}
			s := NewSampler(time.Second, func() map[string][]int32 { return map[string][]int32{results.RoleLoadgen: {7}} })
			s.read, s.machine = f.read, m.read
			s.now = func() time.Time { return t0.Add(time.Duration(step) * 10 * time.Second) }
			if s.Machine() != nil {
				t.Error("a load before any sample")
			}
			for step = range 2 {
				f.step = step
				s.Sample()
			}
			got := s.Machine()
			want := &results.MachineLoad{Cores: 2, WindowS: 10, Samples: 2, Load1Start: 0.5, Load1Max: 1.75,
				OwnCPUShare: tc.own / 20, OtherCPUShare: tc.wantOther, StealShare: tc.steal / 20, Busy: tc.wantBusy, BusyReason: tc.wantReason}
			if got == nil || *got != *want {
				t.Errorf("got %+v\nwant %+v", got, want)
			}
		})
	}
}

// burnEnv makes the test binary a busy loop: it spins on every core for
// the duration the variable gives, then waits for its stdin to close (so
// a sampler can still read its CPU time).
const burnEnv = "STAMPEDE_TEST_BURN"

func TestMain(m *testing.M) {
	if d, err := time.ParseDuration(os.Getenv(burnEnv)); err == nil {
		burn(d)
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// burn spins on every core until d has passed.
func burn(d time.Duration) {
	end := time.Now().Add(d)
	done := make(chan struct{})
	for range runtime.NumCPU() {
		go func() {
			for time.Now().Before(end) {
			}
			done <- struct{}{}
		}()
	}
	for range runtime.NumCPU() {
		<-done
	}
}

// startBurner starts a real busy loop of d in a process of its own and
// returns it with the pipe that ends it.
func startBurner(t *testing.T, d time.Duration) (*exec.Cmd, io.WriteCloser) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), burnEnv+"="+d.String())
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); cmd.Process.Kill(); cmd.Wait() })
	return cmd, in
}

// TestMachineLoadRealBusyLoop: a real busy loop in another process, for
// 2 s on every core, is counted as other processes' CPU and flags the
// machine busy; the same loop in one of the run's own processes is
// counted as the run's. The assertions are on CPU time, which the kernel
// counts, never on how fast anything ran: on a loaded 2-core machine the
// loop gets less CPU, and the figures shrink with it.
func TestMachineLoadRealBusyLoop(t *testing.T) {
	const burnFor = 2 * time.Second
	for _, own := range []bool{false, true} {
		name := "other process"
		if own {
			name = "own process"
		}
		t.Run(name, func(t *testing.T) {
			cmd, stop := startBurner(t, burnFor)
			pid := int32(cmd.Process.Pid)
			s := NewSampler(time.Second, func() map[string][]int32 {
				if own {
					return map[string][]int32{results.RoleTarget: {pid}}
				}
				return map[string][]int32{results.RoleTarget: {}}
			})
			s.Sample()
			time.Sleep(burnFor + 200*time.Millisecond)
			s.Sample() // the loop has ended; its process still lives
			stop.Close()
			if err := cmd.Wait(); err != nil {
				t.Fatal(err)
			}
			burned := (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
			m := s.Machine()
			if m == nil {
				t.Fatal("no machine load")
			}
			// The share's denominator is every core's time in the window.
			total := m.WindowS * float64(m.Cores)
			other, ownS := m.OtherCPUShare*total, m.OwnCPUShare*total
			t.Logf("burned %.2f CPU s; window %.2f s on %d cores: own %.2f s, other %.2f s; %s", burned, m.WindowS, m.Cores, ownS, other, m.Text())
			// Jiffies of 10 ms, read at slightly different instants.
			margin := 0.15 + 0.05*burned
			if burned < 0.1 {
				t.Fatalf("the loop burned only %.2f CPU s", burned)
			}
			if !own {
				if other < burned-margin {
					t.Errorf("other processes' CPU %.2f s, the loop alone burned %.2f s", other, burned)
				}
				if burned/total > results.BusyOtherCPUShare+0.05 && !m.Busy {
					t.Errorf("the loop took %.0f %% of the CPU and the machine is not busy: %+v", 100*burned/total, m)
				}
				return
			}
			if ownS < burned-margin {
				t.Errorf("the run's own CPU %.2f s, its process burned %.2f s", ownS, burned)
			}
		})
	}
}
