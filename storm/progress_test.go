package storm

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"sync"
	"testing"
	"testing/synctest"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/stampede-dev/stampede/agent"
	"github.com/stampede-dev/stampede/connerr"
	"github.com/stampede-dev/stampede/internal/testenv"
	"github.com/stampede-dev/stampede/loadgen"
)

// syncBuffer is a bytes.Buffer safe for the progress loop and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// step is what the test does at one offset from the start: feed workers'
// counters, change the chaos event, or write a log line.
type step struct {
	at      time.Duration
	worker  int
	stats   *loadgen.Stats
	event   *string
	logLine string
}

func str(s string) *string { return &s }

// play runs steps against p on synctest's virtual clock from a start at
// the bubble's epoch, then stops p at end.
func play(t *testing.T, p *Progress, steps []step, end time.Duration) {
	t.Helper()
	start := time.Now()
	var mu sync.Mutex
	event := ""
	p.Event = func() string {
		mu.Lock()
		defer mu.Unlock()
		return event
	}
	p.Start(start)
	for _, s := range steps {
		time.Sleep(time.Until(start.Add(s.at)))
		synctest.Wait()
		switch {
		case s.stats != nil:
			p.Update(s.worker, agent.Progress{At: time.Now(), Stats: *s.stats})
		case s.event != nil:
			mu.Lock()
			event = *s.event
			mu.Unlock()
		default:
			if _, err := io.WriteString(p.Log(), s.logLine); err != nil {
				t.Fatal(err)
			}
		}
	}
	time.Sleep(time.Until(start.Add(end)))
	synctest.Wait()
	p.Stop()
}

// storm is a 20-client fleet in two workers through a restart: both up by
// 1 s, the restart at 6 s drops them (refused, timeouts), they come back
// by 13 s; one gives up on a TLS error; messages flow at the end.
func stormSteps() []step {
	up := loadgen.Stats{Clients: 10, Connected: 10, Attempts: 10, Successes: 10}
	var down0, down1, back0, back1 loadgen.Stats
	down0 = loadgen.Stats{Clients: 10, Attempts: 40, Successes: 10}
	down0.Failures[connerr.Refused], down0.Disconnects[connerr.Closed1006] = 30, 10
	down1 = loadgen.Stats{Clients: 10, Attempts: 25, Successes: 10}
	down1.Failures[connerr.Refused], down1.Failures[connerr.Timeout], down1.Disconnects[connerr.Closed1006] = 10, 5, 10
	back0, back1 = down0, down1
	back0.Connected, back0.Attempts, back0.Successes, back0.MsgSent, back0.MsgAcked, back0.MsgDelivered = 10, 50, 20, 100, 90, 60
	back1.Connected, back1.Attempts, back1.Successes = 9, 36, 19
	back1.Failures[connerr.TLS], back1.Stopped[connerr.TLS] = 1, 1
	return []step{
		{at: time.Second, worker: 0, stats: &up},
		{at: time.Second, worker: 1, stats: &up},
		{at: 6 * time.Second, event: str("at 6s restart abrupt down=1s")},
		{at: 7 * time.Second, worker: 0, stats: &down0},
		{at: 7 * time.Second, worker: 1, stats: &down1},
		{at: 7500 * time.Millisecond, logLine: "chaos: at 6s restart abrupt down=1s done: ready at 7.400s\n"},
		{at: 12 * time.Second, event: str("")},
		{at: 13 * time.Second, worker: 0, stats: &back0},
		{at: 13 * time.Second, worker: 1, stats: &back1},
	}
}

// TestProgressPlain checks the plain lines, exactly, for a fed sequence of
// counters on a virtual clock: one every Interval, rates since the
// previous line, failures by class (largest first), messages, clients
// stopped, the event under way, log lines passed through whole. The fed
// workers report only when their counts change, so a line more than
// staleAfter after their last report says how old its counts are.
func TestProgressPlain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out syncBuffer
		p := &Progress{W: &out, Mode: ProgressPlain, Interval: 5 * time.Second, Clients: 20}
		play(t, p, stormSteps(), 16*time.Second)
		want := "" +
			"   5.0s  connected 20/20  attempts 4/s  (counts from 4s ago)\n" +
			"chaos: at 6s restart abrupt down=1s done: ready at 7.400s\n" +
			"  10.0s  connected 0/20  attempts 9/s  failures/s refused=8 timeout=1  [at 6s restart abrupt down=1s]  (counts from 3s ago)\n" +
			"  15.0s  connected 19/20  attempts 4.2/s  failures/s tls=0.2  msg/s sent 20 acked 18 delivered 12  stopped 1\n"
		if got := out.String(); got != want {
			t.Errorf("output:\n%s\nwant:\n%s", got, want)
		}
	})
}

// TestProgressTerminal checks the control sequences of the terminal form:
// the status rewritten in place every second (carriage return, clear to
// end of line), cut to the width, a log line printed on its own line with
// the status redrawn under it, incomplete lines held back, and the status
// cleared at Stop.
func TestProgressTerminal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out syncBuffer
		p := &Progress{W: &out, Mode: ProgressTerminal, Width: 40, Clients: 10}
		up := loadgen.Stats{Clients: 10, Connected: 5, Attempts: 6, Successes: 5}
		up.Failures[connerr.Refused] = 1
		play(t, p, []step{
			{at: 200 * time.Millisecond, logLine: "target: 1 process(es)\n"}, // no status yet: as is
			{at: 500 * time.Millisecond, worker: 0, stats: &up},
			{at: 1500 * time.Millisecond, logLine: "[worker 0] part"},
			{at: 1600 * time.Millisecond, logLine: "ial line\nchaos: x\n"},
			{at: 1700 * time.Millisecond, event: str("at 1s stall 5s")},
		}, 2500*time.Millisecond)
		status1 := "   1.0s  connected 5/10  attempts 6/s  " // 39 columns: never wraps
		status2 := "   2.0s  connected 5/10  attempts 3/s  "
		want := "target: 1 process(es)\n" +
			clearLine + status1 +
			clearLine + "[worker 0] partial line\nchaos: x\n" + status1 +
			clearLine + status2 +
			clearLine
		if got := out.String(); got != want {
			t.Errorf("output:\n%q\nwant:\n%q", got, want)
		}
	})
}

// TestProgressLine checks a whole terminal line beyond the cut: the rates
// over the last rateWindow and the event.
func TestProgressLine(t *testing.T) {
	start := time.Unix(1000, 0)
	p := &Progress{Clients: 10, term: true, Event: func() string { return "at 1s stall 5s" }}
	p.Start(start) // W nil: no loop
	s := loadgen.Stats{Clients: 10, Connected: 5, Attempts: 6}
	s.Failures[connerr.Refused], s.Failures[connerr.Timeout] = 1, 2
	p.Update(0, agent.Progress{At: start.Add(time.Second), Stats: s})
	for i, want := range []string{
		"   1.0s  connected 5/10  attempts 6/s  failures/s timeout=2 refused=1  [at 1s stall 5s]",
		"   2.0s  connected 5/10  attempts 3/s  failures/s timeout=1 refused=0.5  [at 1s stall 5s]",
		"   3.0s  connected 5/10  attempts 2/s  failures/s timeout=0.7 refused=0.3  [at 1s stall 5s]",
		"   4.0s  connected 5/10  attempts 2/s  failures/s timeout=0.7 refused=0.3  [at 1s stall 5s]", // over 1..4 s
	} {
		if i == 3 {
			s.Attempts, s.Failures[connerr.Refused], s.Failures[connerr.Timeout] = 12, 2, 4
			p.Update(0, agent.Progress{At: start.Add(3500 * time.Millisecond), Stats: s})
		}
		if got := p.line(start.Add(time.Duration(i+1) * time.Second)); got != want {
			t.Errorf("line %d:\n got %q\nwant %q", i, got, want)
		}
	}
}

// TestProgressLineStale: a line whose counts are older than staleAfter
// says how old, so a starved coordinator's late figures are not read as
// the fleet's state now.
func TestProgressLineStale(t *testing.T) {
	start := time.Unix(1000, 0)
	p := &Progress{Clients: 10}
	p.Start(start)
	p.Update(0, agent.Progress{At: start.Add(time.Second), Stats: loadgen.Stats{Clients: 5, Connected: 5}})
	p.Update(1, agent.Progress{At: start.Add(9 * time.Second), Stats: loadgen.Stats{Clients: 5, Connected: 5}})
	if got, want := p.line(start.Add(10*time.Second)), "  10.0s  connected 10/10  attempts 0/s  (counts from 9s ago)"; got != want {
		t.Errorf("stale line:\n got %q\nwant %q", got, want)
	}
	p.Update(0, agent.Progress{At: start.Add(10 * time.Second), Stats: loadgen.Stats{Clients: 5, Connected: 5}})
	if got, want := p.line(start.Add(11*time.Second)), "  11.0s  connected 10/10  attempts 0/s"; got != want {
		t.Errorf("fresh line:\n got %q\nwant %q", got, want)
	}
}

// TestProgressObserve checks what the metrics are fed: the summed counters
// and each worker's attempt rate per 100 ms over its own last interval,
// summed.
func TestProgressObserve(t *testing.T) {
	start := time.Unix(1000, 0)
	type obs struct {
		at       time.Duration
		attempts uint64
		per100   float64
	}
	var got []obs
	p := &Progress{Observe: func(at time.Duration, s loadgen.Stats, per100 float64) {
		got = append(got, obs{at, s.Attempts, per100})
	}}
	p.Start(start)
	for _, u := range []struct {
		worker   int
		at       time.Duration
		attempts uint64
	}{
		{0, time.Second, 30},             // 30 in 1 s: 3 per 100 ms
		{1, time.Second, 10},             // 10 in 1 s: 1
		{0, 2 * time.Second, 30},         // none since: 0
		{1, 1500 * time.Millisecond, 30}, // 20 in 0.5 s: 4
	} {
		p.Update(u.worker, agent.Progress{At: start.Add(u.at), Stats: loadgen.Stats{Attempts: u.attempts}})
	}
	want := []obs{{time.Second, 30, 3}, {time.Second, 40, 4}, {2 * time.Second, 40, 1}, {1500 * time.Millisecond, 60, 4}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("observed %v, want %v", got, want)
	}
}

// TestIsTerminal checks the terminal check on a pipe, a buffer and, where
// the machine has one, a pseudo-terminal.
func TestIsTerminal(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if isTerminal(w) || isTerminal(&bytes.Buffer{}) {
		t.Error("a pipe or a buffer taken for a terminal")
	}
	pts := openPTY(t)
	if !isTerminal(pts) {
		t.Errorf("%s not taken for a terminal", pts.Name())
	}
	if err := unix.IoctlSetWinsize(int(pts.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: 77}); err != nil {
		t.Fatal(err)
	}
	if got := terminalWidth(pts); got != 77 {
		t.Errorf("terminalWidth = %d, want 77", got)
	}
}

// openPTY opens a pseudo-terminal's follower side, or skips (fails when
// testenv.Required).
func openPTY(t *testing.T) *os.File {
	t.Helper()
	ptm, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		testenv.SkipUnlessRequired(t, "no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { ptm.Close() })
	var unlock int32
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, ptm.Fd(), unix.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		testenv.SkipUnlessRequired(t, "unlockpt: %v", e)
	}
	n, err := unix.IoctlGetInt(int(ptm.Fd()), unix.TIOCGPTN)
	if err != nil {
		testenv.SkipUnlessRequired(t, "ptsname: %v", err)
	}
	pts, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		testenv.SkipUnlessRequired(t, "opening the pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { pts.Close() })
	return pts
}
