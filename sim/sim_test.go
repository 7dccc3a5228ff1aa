package sim

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/chaos"
	"github.com/stampede-dev/stampede/connerr"
	"github.com/stampede-dev/stampede/loadgen"
	"github.com/stampede-dev/stampede/results/folder"
	"github.com/stampede-dev/stampede/results/summary"
	"github.com/stampede-dev/stampede/spec"
)

func mustSchedule(t *testing.T, text string) *chaos.Schedule {
	t.Helper()
	s, err := chaos.Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// storm is the bench's storm at a small scale: backlog 128, 2,000
// accepts/s, an abrupt restart with 2 s down.
func storm(t *testing.T, clients int, policy string, seed uint64) Config {
	return Config{Client: spec.Client{Clients: clients, Policy: backoff.MustParse(policy), Seed: seed,

		Ramp: 1800, SynRetries: 2, HandshakeTimeout: 5 * time.Second}, Server: spec.Server{Backlog: 128, AcceptRate: 2000}, Duration: 40 * time.Second, Schedule: mustSchedule(t, "at 5s restart abrupt down=2s"), ScheduleText: "at 5s restart abrupt down=2s",
		IssueRate: 40000,
	}
}

func run(t *testing.T, cfg Config) (*Result, *summary.Summary) {
	t.Helper()
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return res, Summarize(res, nil)
}

// TestSameSeedSameFiles runs one simulation twice into the same folder
// (report.html is titled with the folder's name): every file is the same,
// byte for byte. Another seed changes summary.json.
func TestSameSeedSameFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sim")
	write := func(seed uint64) map[string][]byte {
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		res, sum := run(t, storm(t, 3000, "exp:initial=1s,max=60s,jitter=0.5,spread=100ms-500ms", seed))
		if err := WriteResults(dir, sum, res.Report); err != nil {
			t.Fatal(err)
		}
		files, _ := filepath.Glob(filepath.Join(dir, "*"))
		out := map[string][]byte{}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			out[filepath.Base(f)] = b
		}
		return out
	}
	a, b, c := write(1), write(1), write(2)
	if len(a) < 4 {
		t.Fatalf("results folder holds %d files, want summary.json, timeline.csv, hlogs, report.html", len(a))
	}
	for name, x := range a {
		if !bytes.Equal(x, b[name]) {
			t.Errorf("%s differs between two runs of the same seed", name)
		}
	}
	if bytes.Equal(a[folder.SummaryFile], c[folder.SummaryFile]) {
		t.Error("seeds 1 and 2 gave the same summary.json")
	}
	if !bytes.Contains(a[folder.SummaryFile], []byte(`"simulated": true`)) {
		t.Error(`summary.json is not marked "simulated": true`)
	}
}

// TestDelaysMatchLoadgen runs a real loadgen fleet against a closed port
// and the simulator against a target whose port is closed, with one seed
// and policy: every retry both make draws the same delay for the same
// client and attempt.
func TestDelaysMatchLoadgen(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now: every connect is refused
	const clients = 20
	pol := backoff.MustParse("exp:initial=20ms,max=80ms,jitter=0.5,spread=10ms-30ms")
	type key struct {
		client  uint32
		attempt int
	}
	var mu sync.Mutex
	real := map[key]time.Duration{}
	fleet, err := loadgen.New(loadgen.Config{Client: spec.Client{URL: "ws://" + addr + "/", Clients: clients, Policy: pol, Seed: 7}, OnRetry: func(r loadgen.Retry) {
		if r.Class != connerr.Refused {
			return
		}
		mu.Lock()
		real[key{r.Client, r.Attempt}] = r.Delay
		mu.Unlock()
	},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
	defer cancel()
	if _, err := fleet.Run(ctx); err != nil {
		t.Fatal(err)
	}

	simulated := map[key]time.Duration{}
	_, err = Run(context.Background(), Config{Client: spec.Client{Clients: clients, Policy: pol, Seed: 7}, Duration: 5 * time.Second,
		// The port closed from the start until the run's end, as the real
		// side's: no exit time with the listener open.
		Schedule: mustSchedule(t, "at 0s restart abrupt down=5s"), StopTime: -1,
		OnRetry: func(r Retry) {
			if r.Class != connerr.Refused.String() {
				t.Errorf("client %d attempt %d failed as %s, want refused", r.Client, r.Attempt, r.Class)
			}
			simulated[key{r.Client, r.Attempt}] = r.Delay
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	perClient := map[uint32]int{}
	for k, d := range real {
		s, ok := simulated[k]
		switch {
		case !ok:
			t.Errorf("client %d attempt %d: the loadgen retried, the simulator did not", k.client, k.attempt)
		case s != d:
			t.Errorf("client %d attempt %d: loadgen drew %s, simulator %s", k.client, k.attempt, d, s)
		}
		perClient[k.client]++
	}
	for id := uint32(0); id < clients; id++ {
		if perClient[id] < 3 {
			t.Errorf("client %d: only %d retries compared, want at least 3", id, perClient[id])
		}
	}
}

// TestAttemptResetsAtConnect checks the loadgen's attempt rule in the
// simulator: a connection that ends after a 101 starts again at attempt 1,
// with the delay Policy.Delay gives attempt 1.
func TestAttemptResetsAtConnect(t *testing.T) {
	pol := backoff.MustParse("exp:initial=100ms,max=1s,jitter=0.5")
	n := 0
	_, err := Run(context.Background(), Config{Client: spec.Client{Clients: 50, Policy: pol, Seed: 3}, Duration: 3 * time.Second,
		Schedule: mustSchedule(t, "at 1s restart abrupt down=100ms"),
		OnRetry: func(r Retry) {
			if r.Class != connerr.Closed1006.String() {
				return
			}
			n++
			if r.Attempt != 1 || r.Delay != pol.Delay(3, uint64(r.Client), 1) {
				t.Errorf("client %d after its connection ended: attempt %d delay %s, want attempt 1 delay %s",
					r.Client, r.Attempt, r.Delay, pol.Delay(3, uint64(r.Client), 1))
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != 50 {
		t.Errorf("%d clients saw their connection end, want 50", n)
	}
}

// TestFixedIsLockstep is the herd: the same storm with a fixed 1 s
// interval comes back in waves (a higher peak, handshake timeouts from
// final-ACK drops, many more wasted attempts) and recovers later than
// exponential backoff with jitter and spread.
func TestFixedIsLockstep(t *testing.T) {
	_, fixed := run(t, storm(t, 8000, "fixed:initial=1s", 1))
	_, jit := run(t, storm(t, 8000, "exp:initial=1s,max=60s,jitter=0.5,spread=100ms-500ms", 1))
	f, j := fixed.Recovery[0], jit.Recovery[0]
	if f.Recovered != 8000 || j.Recovered != 8000 {
		t.Fatalf("recovered fixed %d, jittered %d, want 8000 each", f.Recovered, j.Recovered)
	}
	if *f.HerdPeakPer100ms < 3**j.HerdPeakPer100ms {
		t.Errorf("herd peak fixed %d, jittered %d: want the fixed fleet's at least 3 times higher", *f.HerdPeakPer100ms, *j.HerdPeakPer100ms)
	}
	if *f.R99S <= *j.R99S {
		t.Errorf("R99 fixed %.2fs, jittered %.2fs: want the fixed fleet slower", *f.R99S, *j.R99S)
	}
	if fixed.Kernel.ListenOverflows <= 2*jit.Kernel.ListenOverflows || fixed.Kernel.TCPSynRetrans == 0 {
		t.Errorf("ListenOverflows fixed %d, jittered %d; SYN retransmits fixed %d: want the fixed fleet's overflows more than twice as many",
			fixed.Kernel.ListenOverflows, jit.Kernel.ListenOverflows, fixed.Kernel.TCPSynRetrans)
	}
}

// TestFinalAckDrop: a burst that the SYN check lets in (all within one
// handshake round trip) finds the accept queue full at its final ACK; those
// connections stall and, when no retransmit finds room before the upgrade
// deadline, fail as handshake_timeout, as real runs show.
func TestFinalAckDrop(t *testing.T) {
	_, sum := run(t, Config{Client: spec.Client{Clients: 500, Policy: backoff.MustParse("fixed:initial=10s"), Seed: 1,
		HandshakeTimeout: time.Second}, Server: spec.Server{Backlog: 16, AcceptRate: 20}, Duration: 5 * time.Second,
		RTT: time.Millisecond,
	})
	ht := sum.Connect.Failures[connerr.HandshakeTimeout.String()]
	if ht == 0 || sum.Kernel.ListenOverflows == 0 {
		t.Errorf("handshake_timeout %d, ListenOverflows %d: want both", ht, sum.Kernel.ListenOverflows)
	}
	// 17 fit the queue; 20 accepts a second with a burst of 1 take about
	// 20 more within the 1 s deadline.
	if got := sum.Connect.Successes; got < 17 || got > 17+25 {
		t.Errorf("%d connected within the deadline, want 17 (the queue) plus about 20 (1 s of accepts)", got)
	}
}

// TestExitKeepsListenerOpen: a stopping process's listener stays open
// until it has exited (StopTime after Start): a retry that comes in the
// meantime is queued, up to backlog+1, or its SYN dropped; the queue is
// reset when the listener goes, and refusals begin only then (a real
// restart of 10,000 clients resets exactly backlog+1 connections).
func TestExitKeepsListenerOpen(t *testing.T) {
	const start, exit = time.Second, 500 * time.Millisecond
	var early, refused, resets, resetsElse int
	_, sum := run(t, Config{Client: spec.Client{Clients: 300, Policy: backoff.MustParse("fixed:initial=100ms,jitter=0.5"), Seed: 1,

		Ramp: 1000}, Server: spec.Server{Backlog: 16}, Duration: 4 * time.Second,
		Schedule: mustSchedule(t, "at 1s restart abrupt down=3s"),
		StopTime: exit, CloseRate: -1,
		OnRetry: func(r Retry) {
			switch r.Class {
			case connerr.Refused.String():
				refused++
				if r.At < start+exit {
					early++
				}
			case connerr.Reset.String():
				resets++
				if r.At != start+exit {
					resetsElse++
				}
			}
		},
	})
	// The retries come over 100 ms, 3 a millisecond: a SYN that comes
	// within one handshake round trip of the one that fills the queue may
	// still be let in (TestFinalAckDrop), so a few more than 17.
	if resets < 17 || resets > 20 || resetsElse != 0 {
		t.Errorf("%d connections reset at the exit, %d at other times: want 17 (the full accept queue of backlog 16) to 20, all at the exit", resets, resetsElse)
	}
	if early != 0 || refused == 0 {
		t.Errorf("%d connects refused before the exit, %d in all: want none before, some after", early, refused)
	}
	if sum.Kernel.ListenOverflows == 0 {
		t.Error("no SYN dropped on the full queue during the exit")
	}
}

// TestConfigValidate names the field at fault.
func TestConfigValidate(t *testing.T) {
	ok := Config{Client: spec.Client{Clients: 1}, Duration: time.Second}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	for name, c := range map[string]Config{
		"no clients":  {Duration: time.Second},
		"no duration": {Client: spec.Client{Clients: 1}},
		"proxy event": {Client: spec.Client{Clients: 1}, Duration: time.Second, Schedule: mustSchedule(t, "at 1s proxy reset for 1s")},
		"bad syn":     {Client: spec.Client{Clients: 1}, Duration: time.Second, SynSchedule: []time.Duration{2 * time.Second, time.Second}},
	} {
		if c.Validate() == nil {
			t.Errorf("%s: Validate accepted it", name)
		}
	}
}

// TestSizes holds the memory the package documents per client: a 48-byte
// client and 8-byte queue entries (packed from a 16-byte entry), and a
// 24-byte orphan.
func TestSizes(t *testing.T) {
	if n := unsafe.Sizeof(orphan{}); n != 24 {
		t.Errorf("orphan is %d bytes, docs say 24", n)
	}
	if n := unsafe.Sizeof(client{}); n != 48 {
		t.Errorf("client is %d bytes, docs say 48", n)
	}
	if n := unsafe.Sizeof(entry{}); n != 16 {
		t.Errorf("queue entry is %d bytes, docs say 16", n)
	}
	if n := unsafe.Sizeof(packKey(entry{}, 0)); n != 8 {
		t.Errorf("packed queue entry is %d bytes, docs say 8", n)
	}
}

// BenchmarkSimulate1M is the simulator's acceptance run at a tenth of its
// size: 1,000,000 clients with the default sizing, an abrupt restart at
// 10 s, the jittered policy, 30 s of virtual time.
func BenchmarkSimulate1M(b *testing.B) {
	sched, err := chaos.Parse("at 10s restart abrupt down=2s")
	if err != nil {
		b.Fatal(err)
	}
	cfg := Config{Client: spec.Client{Clients: 1000000, Policy: backoff.MustParse("exp:initial=1s,max=60s,jitter=0.5,spread=100ms-500ms"),
		Seed: 1}, Duration: 30 * time.Second, Schedule: sched, ScheduleText: "at 10s restart abrupt down=2s",
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Run(context.Background(), cfg); err != nil {
			b.Fatal(err)
		}
	}
}

// TestTimerWheel: a kernel timer fires on the wheel's granule past its
// expiry (HZ 250: 4 ms jiffies; 32 ms for 1-2 s, 256 ms for 4-16 s), and
// with a jiffy of 0 at its instant.
func TestTimerWheel(t *testing.T) {
	ms := int64(time.Millisecond)
	for _, c := range []struct {
		name string
		now  int64
		d    time.Duration
		want int64
	}{
		// 1 s is 250 jiffies, level 1: expiry 250 jiffies, fired at the
		// next multiple of 8: 256 jiffies.
		{"1 s from 1 ms", 1 * ms, time.Second, 1024 * ms},
		// Armed 31 ms later, the same expiry granule: fired together.
		{"1 s from 31 ms", 31 * ms, time.Second, 1056 * ms},
		{"1 s from 28 ms", 28 * ms, time.Second, 1056 * ms},
		// 200 ms is 50 jiffies, level 0: one jiffy past.
		{"200 ms", 2 * ms, 200 * time.Millisecond, 204 * ms},
		// 4 s is 1000 jiffies, level 2: the next multiple of 64 jiffies.
		{"4 s", 0, 4 * time.Second, 4096 * ms},
	} {
		s := &sim{jiffy: 4 * ms}
		// The tick, and within 5 µs of it the timer's place in the
		// tick's order (TestWheelOrder).
		if got := s.timer(c.now, c.d); got < c.want || got >= c.want+5*int64(time.Microsecond) {
			t.Errorf("%s: fires at %d ns, want %d ms", c.name, got, c.want/ms)
		}
		s.jiffy = 0
		if got := s.timer(c.now, c.d); got != c.now+int64(c.d) {
			t.Errorf("%s, exact timers: fires at %d ns, want %d", c.name, got, c.now+int64(c.d))
		}
	}
}

// TestWheelOrder: the timers one tick fires run level by level from the
// highest down, and within a level the latest armed first (the kernel's
// __run_timers and enqueue_timer), so their packets reach the listener in
// that order: at the tick of 4,096 ms a 4 s timer (level 2), then a data
// retransmit armed 400 ms before, then a SYN retransmit armed 1 s before
// (level 1), then a loss probe (level 0). The model before ran a tick's
// SYN retransmits before its data retransmits whatever their timers.
// A stalled connection's next try is its request's loss probe, on the
// client's timers: a deferring listener's SYN-ACK draws no ACK that
// counts.
func TestWheelOrder(t *testing.T) {
	ms := int64(time.Millisecond)
	s := &sim{jiffy: 4 * ms}
	timers := []struct {
		name string
		now  int64
		d    time.Duration
	}{
		{"4 s timer (level 2)", 0, 4 * time.Second},
		{"data retransmit armed 400 ms before", 3690 * ms, 400 * time.Millisecond},
		{"SYN retransmit armed 1 s before", 3090 * ms, time.Second},
		{"loss probe (level 0)", 3892 * ms, 200 * time.Millisecond},
	}
	prev := int64(0)
	for i, tm := range timers {
		at := s.timer(tm.now, tm.d)
		if at/(4*ms) != 1024 {
			t.Fatalf("%s: fires at %d ns, not at the tick of 4,096 ms", tm.name, at)
		}
		if i > 0 && at <= prev {
			t.Errorf("%s runs at %d ns, not after %s (%d ns)", tm.name, at, timers[i-1].name, prev)
		}
		prev = at
	}

	s.cfg = Config{RTT: 50 * time.Microsecond, DataRTO: 200 * time.Millisecond}
	mark := int64(3 * time.Second)
	// Three retransmits of the request so far (0.2, 0.2 and 0.4 s
	// apart): the fourth, 0.8 s after the third, comes 1.6 s after the
	// stall, later than the 1 s SYN-ACK retransmit a listener that does
	// not defer accept would answer first.
	want := mark
	for _, d := range []time.Duration{200, 200, 400, 800} {
		want = s.clientTimer(0, want, d*time.Millisecond)
	}
	if at := s.nextRetry(0, mark, 3, 255); at != want {
		t.Errorf("a stalled connection's next try at %d ns, want its request's fourth retransmit, %d", at, want)
	}
	if at := s.nextRetry(0, mark, 8, 8); at != noTime {
		t.Errorf("after its last data retransmit the next try is at %d ns, want none", at)
	}
}

// wheelStorm is a small listener stalled while a fleet on one machine
// starts one client a millisecond: the SYNs beyond its queue are dropped
// at distinct instants, and retransmitted after the stall has ended and
// the queue drained.
func wheelStorm(t *testing.T, hz int) (*Result, *summary.Summary) {
	return run(t, Config{Client: spec.Client{Clients: 300, Policy: backoff.MustParse("fixed:initial=10s"), Seed: 1,
		Ramp:             1000,
		HandshakeTimeout: 100 * time.Millisecond}, Server: spec.Server{Backlog: 16}, Duration: 3 * time.Second,
		Schedule:  mustSchedule(t, "at 0s stall 500ms"),
		HZ:        hz,
		IssueRate: 1e6, // one machine carries the fleet: its timer wheel is shared
	})
}

// TestRetransmitsBatched: the SYN retransmits of clients dropped over a
// 32 ms granule fire together (TestTimerWheel), so they all pass the
// accept queue's check at once, as a burst of retransmits does on this
// kernel; the final ACKs of those beyond the room are dropped and the
// connections stall (here past their 100 ms upgrade deadline:
// handshake_timeout). With exact timers the retransmits come one a
// millisecond, each finds the queue drained, and none stalls: the only
// handshake timeouts are the 17 connections (backlog+1) that waited in
// the queue through the stall.
func TestRetransmitsBatched(t *testing.T) {
	_, wheel := wheelStorm(t, 0)
	_, exact := wheelStorm(t, -1)
	if ht := exact.Connect.Failures[connerr.HandshakeTimeout.String()]; ht != 17 {
		t.Errorf("exact timers: %d handshake timeouts, want 17 (the queue of the stall)", ht)
	}
	if ht := wheel.Connect.Failures[connerr.HandshakeTimeout.String()]; ht < 17+50 {
		t.Errorf("timer wheel: %d handshake timeouts, want the queue's 17 and the bursts' excess (50 or more)", ht)
	}
}

// TestOrphansAccepted: a client that gives up on a stalled upgrade leaves
// its connection half-open on the listener; a later retransmit completes
// it and the target accepts it (an accept and an upgrade spent on nobody),
// as real runs show: PassiveOpens beyond the successes.
func TestOrphansAccepted(t *testing.T) {
	res, sum := wheelStorm(t, 0)
	ht := int64(sum.Connect.Failures[connerr.HandshakeTimeout.String()])
	if res.Orphans < ht/2 || res.Orphans > ht {
		t.Errorf("%d orphaned accepts of %d handshake timeouts: want most of them accepted later", res.Orphans, ht)
	}
	if got, want := res.Kernel.PassiveOpens, int64(sum.Connect.Successes)+res.Orphans; got != want {
		t.Errorf("PassiveOpens %d, want successes + orphans = %d", got, want)
	}
}

// TestSoftnetBacklog: the SYN retransmits one timer tick fires wait in one
// CPU's backlog queue, which holds netdev_max_backlog+1; the rest are
// dropped before TCP sees them and go out again at the next retransmit.
// 3,000 clients dropped on a stalled listener within 30 ms come back in
// one or two bursts of more than 1,001, to a listener with room for all:
// without the limit every client connects at its first retransmit; with
// it, hundreds need a second.
func TestSoftnetBacklog(t *testing.T) {
	synRetrans := func(netdev int) int64 {
		res, _ := run(t, Config{Client: spec.Client{Clients: 3000, Policy: backoff.MustParse("fixed:initial=10s"), Seed: 1,

			Ramp: 100000, MaxInflight: 5000}, Server: spec.Server{Backlog: 16}, Duration: 3 * time.Second,
			Schedule:      mustSchedule(t, "at 0s stall 700ms; at 600ms backlog 4096"),
			NetdevBacklog: netdev,
			IssueRate:     1e6, // one machine: one backlog queue
		})
		return res.Kernel.TCPSynRetrans
	}
	// The few queued (or stalled) before the stall never retransmit.
	free := synRetrans(-1)
	if free > 3000-17 || free < 3000-30 {
		t.Errorf("no backlog limit: %d SYN retransmits, want about one each (2,970-2,983)", free)
	}
	if got := synRetrans(0); got < free+500 {
		t.Errorf("netdev_max_backlog 1000: %d SYN retransmits, want a second one for 500 or more (%d without the limit)", got, free)
	}
}

// TestDevicesTimersApart: a fleet of devices (no IssueRate) has a kernel
// per client, each with its own timer-wheel phase: the retransmits of
// TestRetransmitsBatched's storm no longer come back in bursts, and none
// stalls beyond the queue of the stall.
func TestDevicesTimersApart(t *testing.T) {
	_, sum := run(t, Config{Client: spec.Client{Clients: 300, Policy: backoff.MustParse("fixed:initial=10s"), Seed: 1,
		Ramp:             1000,
		HandshakeTimeout: 100 * time.Millisecond}, Server: spec.Server{Backlog: 16}, Duration: 3 * time.Second,
		Schedule: mustSchedule(t, "at 0s stall 500ms"),
	})
	if ht := sum.Connect.Failures[connerr.HandshakeTimeout.String()]; ht > 17+10 {
		t.Errorf("devices: %d handshake timeouts, want about the 17 of the stalled queue", ht)
	}
}

// TestCookieCounters: the kernel looks at the SYN queue before the accept
// queue, so a SYN that finds both full counts as TCPReqQFullDoCookies and
// as a ListenOverflow, and no cookie is sent: in a herd DoCookies exceeds
// SyncookiesSent, as in real runs (152,538 against 49,830 at 50,000
// clients), by no more than the overflows.
func TestCookieCounters(t *testing.T) {
	_, sum := run(t, storm(t, 8000, "exp:initial=1s,max=60s,jitter=0.5,spread=100ms-500ms", 1))
	k := sum.Kernel
	if k.SyncookiesSent == 0 || k.TCPReqQFullDoCookies <= k.SyncookiesSent {
		t.Errorf("TCPReqQFullDoCookies %d, SyncookiesSent %d: want cookies sent, and more SYNs finding the SYN queue full",
			k.TCPReqQFullDoCookies, k.SyncookiesSent)
	}
	if extra := k.TCPReqQFullDoCookies - k.SyncookiesSent; extra > k.ListenOverflows {
		t.Errorf("%d SYNs on a full SYN queue without a cookie, more than the %d ListenOverflows", extra, k.ListenOverflows)
	}
}

// TestValidateChecksSchedule: the simulator refuses what a real run
// refuses (chaos.Schedule.Check), before anything is simulated: a
// schedule that fires more often than a run may plan, or one whose events
// overlap, would otherwise be simulated firing by firing.
func TestValidateChecksSchedule(t *testing.T) {
	for _, tc := range []struct {
		name, schedule string
	}{
		// 2,000,000 restarts in 2 s, each still down when the next comes.
		{"every microsecond", "every 1us restart"},
		// 10,000 entries, each firing 200 times: 2,000,000 firings.
		{"ten thousand entries", strings.Repeat("every 10ms stall 1ms\n", chaos.MaxEntries)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Client: spec.Client{Clients: 10}, Duration: 2 * time.Second, Schedule: mustSchedule(t, tc.schedule)}
			err := cfg.Validate()
			var ce *chaos.CheckError
			var fe *spec.FieldError
			if !errors.As(err, &ce) || !errors.As(err, &fe) || fe.Field != "Sim.Schedule" {
				t.Fatalf("Validate() = %v, want a Sim.Schedule field error wrapping a *chaos.CheckError", err)
			}
			if _, err := Run(context.Background(), cfg); !errors.As(err, &ce) {
				t.Errorf("Run() = %v, want the check's refusal", err)
			}
		})
	}
}
