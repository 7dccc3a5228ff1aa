package hoststat

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/internal/testenv"
	"github.com/stampede-dev/stampede/results"
)

// fakeProcs is a scripted process table: step i of the script is what a
// read of each pid gives at sample i; a missing pid has exited.
type fakeProcs struct {
	step   int
	script []map[int32]procSample
}

func (f *fakeProcs) read(pid int32) (procSample, error) {
	if p, ok := f.script[f.step][pid]; ok {
		return p, nil
	}
	return procSample{}, errors.New("no such process")
}

func TestSamplerAggregates(t *testing.T) {
	// The loadgen is pids 10 and 11; the target is pid 20, which restarts
	// as pid 21 between samples 1 and 2. Sample 2 also reuses pid 20 for a
	// new process (created later): a new process, not a CPU time going back.
	script := []map[int32]procSample{
		{10: {created: 1, rss: 100, anon: 40, cpu: 1, fds: 5, threads: 3}, 11: {created: 1, rss: 50, anon: 20, cpu: 0.5, fds: 4, threads: 2},
			20: {created: 1, rss: 300, anon: 200, cpu: 2, fds: 9, threads: 4}},
		{10: {created: 1, rss: 120, anon: 45, cpu: 1.5, fds: 6, threads: 3}, 11: {created: 1, rss: 60, anon: 30, cpu: 0.75, fds: 2, threads: 2},
			20: {created: 1, rss: 310, anon: 190, cpu: 3, fds: 10, threads: 4}},
		{10: {created: 1, rss: 90, anon: 80, cpu: 2, fds: 5, threads: 5}, // 11 exited
			21: {created: 2, rss: 200, anon: 150, cpu: 0.25, fds: 3, threads: 2}, 20: {created: 3, rss: 10, anon: 5, cpu: 0.1, fds: 1, threads: 1}},
	}
	pids := [][]int32{{20}, {20}, {21, 20}}
	f := &fakeProcs{script: script}
	step := 0
	s := NewSampler(time.Second, func() map[string][]int32 {
		return map[string][]int32{results.RoleLoadgen: {10, 11}, results.RoleTarget: pids[step]}
	})
	s.read = f.read
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	s.now = func() time.Time { return t0.Add(time.Duration(step) * 500 * time.Millisecond) }
	for step = range script {
		f.step = step
		s.Sample()
	}

	want := map[string]results.ResourceStats{
		// RSS 150, 180, 90; anonymous 60, 75, 80 (its peak at another
		// sample than the RSS's); fds 9, 8, 5; threads 5, 5, 5; CPU of 10
		// (2) and of 11 as last seen (0.75).
		results.RoleLoadgen: {PeakRSSBytes: 180, PeakAnonBytes: 80, CPUSeconds: 2.75, PeakFDs: 9, PeakThreads: 5, Processes: 2, ProcessesSeen: 2, Samples: 3},
		// RSS 300, 310, 210; anonymous 200, 190, 155; CPU: the first 20
		// last seen at 3, 21 at 0.25, the second 20 at 0.1.
		results.RoleTarget: {PeakRSSBytes: 310, PeakAnonBytes: 200, CPUSeconds: 3.35, PeakFDs: 10, PeakThreads: 4, Processes: 2, ProcessesSeen: 3, Samples: 3},
	}
	got := s.Stats()
	for r, w := range want {
		if !reflect.DeepEqual(got[r], w) {
			t.Errorf("%s: %+v\nwant %+v", r, got[r], w)
		}
	}

	// Latest is the last sample of each role, by role.
	latest := s.Latest()
	if len(latest) != 2 || latest[0].Role != results.RoleLoadgen || latest[0].RSSBytes != 90 || latest[0].CPUSeconds != 2.75 ||
		latest[1].Role != results.RoleTarget || latest[1].FDs != 4 || latest[1].Processes != 2 {
		t.Errorf("Latest: %+v", latest)
	}

	var b strings.Builder
	if err := WriteResourcesCSV(&b, t0, s.Samples()); err != nil {
		t.Fatal(err)
	}
	// No TCP states counted: their columns are empty.
	wantCSV := `t_s,role,processes,rss_bytes,cpu_s,fds,threads,anon_bytes,tcp_established,tcp_syn_sent,tcp_syn_recv,tcp_fin_wait1,tcp_fin_wait2,tcp_time_wait,tcp_close,tcp_close_wait,tcp_last_ack,tcp_listen,tcp_closing
0.000,loadgen,2,150,1.5,9,5,60,,,,,,,,,,,
0.000,target,1,300,2,9,4,200,,,,,,,,,,,
0.500,loadgen,2,180,2.25,8,5,75,,,,,,,,,,,
0.500,target,1,310,3,10,4,190,,,,,,,,,,,
1.000,loadgen,1,90,2.75,5,5,80,,,,,,,,,,,
1.000,target,2,210,3.35,4,3,155,,,,,,,,,,,
`
	if b.String() != wantCSV {
		t.Errorf("resources.csv:\n%s\nwant\n%s", b.String(), wantCSV)
	}
}

// burnCPU spins until this process has used some CPU time, at most 2 s.
func burnCPU(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for x := 0; time.Now().Before(deadline); x++ {
		if p, err := readProc(int32(os.Getpid())); err == nil && p.cpu >= 0.02 {
			return
		}
		for i := 0; i < 1e6; i++ {
			x ^= i
		}
	}
}

// rssAnon reads this process's RssAnon from /proc/self/status, in bytes.
func rssAnon(t *testing.T) uint64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "RssAnon:" {
			kb, err := strconv.ParseUint(f[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no RssAnon in /proc/self/status")
	return 0
}

func TestSamplerLive(t *testing.T) {
	child := exec.Command("sleep", "5")
	if err := child.Start(); err != nil {
		testenv.SkipUnlessRequired(t, "cannot start sleep: %v", err)
	}
	t.Cleanup(func() { child.Process.Kill(); child.Wait() })
	burnCPU(t)

	self, kid := int32(os.Getpid()), int32(child.Process.Pid)
	s := NewSampler(time.Hour, func() map[string][]int32 {
		return map[string][]int32{results.RoleLoadgen: {self}, results.RoleTarget: {kid}}
	})
	s.Sample()
	before := s.Stats()[results.RoleTarget]
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	child.Wait() // reaped: its pid is gone, not a zombie
	s.Sample()

	lg, tg := s.Stats()[results.RoleLoadgen], s.Stats()[results.RoleTarget]
	if lg.Processes != 1 || lg.ProcessesSeen != 1 || lg.Samples != 2 {
		t.Errorf("loadgen processes %d seen %d samples %d, want 1 1 2", lg.Processes, lg.ProcessesSeen, lg.Samples)
	}
	if lg.PeakRSSBytes < 1<<20 || lg.PeakFDs < 3 || lg.PeakThreads < 2 || lg.CPUSeconds < 0.02 {
		t.Errorf("loadgen (this test) implausible: %+v", lg)
	}
	// The child was alive for one sample, then exited: it still counts.
	if tg.Processes != 1 || tg.ProcessesSeen != 1 || tg.PeakRSSBytes == 0 || tg.PeakFDs < 1 || tg.CPUSeconds != before.CPUSeconds {
		t.Errorf("target (sleep) = %+v, before exit %+v", tg, before)
	}
	// The anonymous memory is the kernel's RssAnon (statm's resident less
	// shared): not the whole RSS, which holds this binary's mapped pages.
	if p, err := readProc(self); err != nil {
		t.Fatal(err)
	} else if want := rssAnon(t); p.anon == 0 || p.anon >= p.rss || p.anon < want*9/10 || p.anon > want*11/10 {
		t.Errorf("anonymous memory %d B, RSS %d B: want about RssAnon %d B, under the RSS", p.anon, p.rss, want)
	}
	rows := s.Samples()
	if last := rows[len(rows)-1]; last.Role != results.RoleTarget || last.Processes != 0 || last.RSSBytes != 0 {
		t.Errorf("sample after exit = %+v, want no target process", last)
	}
}

func TestSamplerRunSamplesAtStartAndEnd(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // done before it starts: one sample at start, one at the end
	self := int32(os.Getpid())
	s := NewSampler(time.Hour, func() map[string][]int32 { return map[string][]int32{results.RoleLoadgen: {self}} })
	s.Run(ctx)
	if n := s.Stats()[results.RoleLoadgen].Samples; n != 2 {
		t.Errorf("samples = %d, want 2", n)
	}
}

// TestSamplerTCPBudget: a TCP count that takes long is followed by the
// next no sooner than its cost / TCPBudget later; the samples between
// carry no TCP figures, and a cheap count runs at every sample.
func TestSamplerTCPBudget(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	now := t0
	s := NewSampler(time.Second, func() map[string][]int32 { return map[string][]int32{results.RoleTarget: {1}} })
	s.read = func(int32) (procSample, error) { return procSample{created: 1}, nil }
	s.now = func() time.Time { return now }
	cost := 500 * time.Millisecond // a dump of about 800,000 sockets
	counts := 0
	s.tcp = func() map[string]PortSockets {
		counts++
		now = now.Add(cost)
		var st PortSockets
		st.States[1] = counts
		return map[string]PortSockets{results.RoleTarget: st}
	}
	var with []int
	for i := range 25 {
		now = t0.Add(time.Duration(i) * time.Second)
		s.Sample()
		if row := s.Samples()[i]; row.TCP != nil {
			with = append(with, i)
		}
	}
	// 0.5 s at 5 %: one count per 10 s, the first at once.
	if fmt.Sprint(with) != "[0 10 20]" || counts != 3 {
		t.Errorf("TCP counted at samples %v (%d counts), want [0 10 20]", with, counts)
	}

	cost = 10 * time.Millisecond // 20,000 sockets: 0.2 s later, before the next sample
	s.tcpNext = time.Time{}
	counts = 0
	for i := range 5 {
		now = t0.Add(time.Minute + time.Duration(i)*time.Second)
		s.Sample()
	}
	if counts != 5 {
		t.Errorf("a 10 ms count ran %d times in 5 samples, want every sample", counts)
	}
}

// TestSamplerRunDoesNotWaitForTCP: while a TCP count is under way (one of
// two million sockets took 100 s on a starved coordinator), Run goes on
// sampling the processes, and the count lands in the first sample after it
// finished, once.
func TestSamplerRunDoesNotWaitForTCP(t *testing.T) {
	s := NewSampler(5*time.Millisecond, func() map[string][]int32 { return map[string][]int32{results.RoleTarget: {1}} })
	s.read = func(int32) (procSample, error) { return procSample{created: 1}, nil }
	release := make(chan struct{})
	calls := 0
	s.tcp = func() map[string]PortSockets {
		calls++
		if calls == 2 { // the first is Run's own, at the start
			<-release
		}
		var st PortSockets
		st.States[1] = calls
		return map[string]PortSockets{results.RoleTarget: st}
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); s.Run(ctx) }()
	deadline := time.Now().Add(30 * time.Second)
	for len(s.Samples()) < 20 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := len(s.Samples()); n < 20 {
		t.Fatalf("%d samples while a TCP count was under way, want Run to go on sampling", n)
	}
	close(release)
	var got []int
	for time.Now().Before(deadline) && len(got) < 2 {
		got = got[:0]
		for _, row := range s.Samples() {
			if row.TCP != nil {
				got = append(got, row.TCP[1])
			}
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-ran
	if len(got) < 2 || got[0] != 1 || got[1] != 2 || slices.Index(got[2:], 2) >= 0 {
		t.Errorf("TCP counts in the samples %v, want the start's (1), then the slow one (2) once", got)
	}
}
