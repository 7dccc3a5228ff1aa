package sim

import (
	"math"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/connerr"
	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/results/summary"
	"github.com/stampede-dev/stampede/spec"
)

// upsBetween counts the clients that came up in [from, to).
func upsBetween(res *Result, from, to time.Duration) int {
	n := 0
	for _, f := range res.Report.Flow {
		if at := time.Duration(f.Step) * time.Millisecond; at >= from && at < to {
			n += int(f.Ups)
		}
	}
	return n
}

// TestAdmitRampBucket: under an admission ramp a process's bucket gains
// the integral of spec.Server.AdmitRate (its share): a client of the
// bucket that takes every token as soon as take says it is there takes,
// by each instant, the burst plus that integral, to the token.
func TestAdmitRampBucket(t *testing.T) {
	srv := spec.Server{AcceptRate: 3000, AdmitRamp: 2 * time.Second}.WithDefaults()
	const procs = 3
	var l listener
	l.setRate(0, srv.AcceptRate/procs, 0)
	l.ramp(0, srv.AdmitFloor/procs, srv.AdmitRamp)
	for _, since := range []time.Duration{0, 500 * time.Millisecond, 2 * time.Second, 3 * time.Second} {
		if got, want := l.rateAt(int64(since)), srv.AdmitRate(since)/procs; math.Abs(got-want) > 1e-9 {
			t.Errorf("rate %v after ready: %g, want AdmitRate/procs %g", since, got, want)
		}
	}
	// An accept-rate change moves the rate the ramp rises to, not the
	// ramp.
	l.setRate(int64(time.Second), 2000.0/procs, 0)
	if got, want := l.rateAt(int64(time.Second)), 100+(2000.0/procs-100)/2; math.Abs(got-want) > 1e-9 {
		t.Errorf("rate half-way through the ramp after an accept-rate change: %g, want %g", got, want)
	}
	l.setRate(0, srv.AcceptRate/procs, 0)

	now, taken := int64(0), 0
	for _, mark := range []time.Duration{250 * time.Millisecond, 1100 * time.Millisecond, 2053700 * time.Microsecond, 3037100 * time.Microsecond} {
		for {
			wait, ok := l.take(now)
			if ok {
				taken++
				continue
			}
			if now+wait > int64(mark) {
				break
			}
			now += wait
		}
		// The integral of the rate from floor 100/s rising to 1000/s
		// over 2 s, then 1000/s; the bucket starts full (burst 10).
		s := mark.Seconds()
		integral := 100*s + 450*min(s, 2)*min(s, 2)/2 + 900*max(0, s-2)
		if want := 10 + int(math.Floor(integral+1e-9)); taken != want {
			t.Errorf("%v after ready: %d tokens taken, want burst 10 + %.1f = %d", mark, taken, integral, want)
		}
	}
}

// rampStorm is a fleet that all connects at once, then an abrupt restart
// at 10 s, to one process of 2,000 accepts a second.
func rampStorm(t *testing.T, ramp time.Duration) (*Result, *summary.Summary) {
	cfg := Config{Client: spec.Client{Clients: 3000, Policy: backoff.MustParse("exp:initial=500ms,max=4s,jitter=0.5"), Seed: 1,
		Ramp: 30000}, Server: spec.Server{Procs: 1, Backlog: 128, AcceptRate: 2000, AdmitRamp: ramp},
		Duration: 25 * time.Second, Schedule: mustSchedule(t, "at 10s restart abrupt down=1s"), IssueRate: 40000,
	}
	return run(t, cfg)
}

// TestAdmitRamp: with AdmitRamp 4 s (floor 200/s) a restarted process
// admits, in the first second after it is ready again, no more than its
// bucket's burst and the integral of the rising rate, 425, and nearly as
// many; without the ramp the herd takes more than twice as many (the SYN
// retransmits, not the rate, bound it). The run's own start is not a
// restart: its first second is the same with and without the ramp.
func TestAdmitRamp(t *testing.T) {
	ramped, sum := rampStorm(t, 4*time.Second)
	flat, _ := rampStorm(t, 0)
	const bound = 20 + 425 // the burst, a hundredth of 2,000, and the integral
	at := ramped.Events[0].Ready
	r, f := upsBetween(ramped, at, at+time.Second), upsBetween(flat, at, at+time.Second)
	if r > bound || r < bound*9/10 {
		t.Errorf("restart: %d up in the first second of the ramp, want at most %d (the floor's ramp integral and the burst), and close to it", r, bound)
	}
	if f < 2*bound {
		t.Errorf("restart: %d up in the first second without a ramp, want at least %d", f, 2*bound)
	}
	if r, f := upsBetween(ramped, 0, time.Second), upsBetween(flat, 0, time.Second); r != f {
		t.Errorf("run start: %d up in the first second with the ramp, %d without: the run's start is not a restart", r, f)
	}
	if rc := sum.Recovery[0]; rc.Recovered != rc.ConnectedBefore {
		t.Errorf("ramped: %d of %d recovered after the restart, want all", rc.Recovered, rc.ConnectedBefore)
	}
}

// shedStorm is a herd of 3,000 after an abrupt restart against one
// process of 300 accepts a second, on a fleet that starts 40,000
// attempts a second: the accept queue, drained only as fast as tokens
// come, overflows.
func shedStorm(t *testing.T, shed time.Duration, onRetry func(Retry)) (*Result, *summary.Summary) {
	return run(t, Config{Client: spec.Client{Clients: 3000, Policy: backoff.MustParse("exp:initial=1s,max=8s,jitter=0.5"), Seed: 1,
		Ramp: 20000}, Server: spec.Server{Procs: 1, Backlog: 128, AcceptRate: 300, Shed: shed},
		Duration: 70 * time.Second, Schedule: mustSchedule(t, "at 30s restart abrupt down=1s"), IssueRate: 40000,
		// The restarted process accepts as soon as its port is bound:
		// a port bound before the process accepts (or sheds) fills its
		// queue whatever the process will do.
		StartTime: -1,
		OnRetry:   onRetry,
	})
}

// TestShed: a shedding process drains its accept queue at the cost of a
// rejection, so the herd overflows nothing; the upgrades beyond its rate
// are answered 503 with a Retry-After of 1 to 4 s in whole seconds, the
// clients honour it, and every client comes back.
func TestShed(t *testing.T) {
	_, plain := shedStorm(t, 0, nil)
	if plain.Kernel.ListenOverflows == 0 {
		t.Fatal("without shedding the herd overflowed nothing: not a herd")
	}
	var shed, early int
	hints := map[time.Duration]int{}
	res, sum := shedStorm(t, 3500*time.Millisecond, func(r Retry) {
		if r.Class != connerr.Handshake5xx.String() {
			return
		}
		shed++
		hints[r.Hint]++
		if r.Delay < r.Hint {
			early++
		}
	})
	if k := sum.Kernel; k.ListenOverflows != 0 {
		t.Errorf("shedding: %d ListenOverflows (%d without), want none", k.ListenOverflows, plain.Kernel.ListenOverflows)
	}
	if f := sum.Connect.Failures[connerr.Handshake5xx.String()]; shed == 0 || f != uint64(shed) {
		t.Errorf("shedding: %d handshake_5xx failures, %d retries after one: want some, each retried", f, shed)
	}
	for h, n := range hints {
		if h < time.Second || h > 4*time.Second || h%time.Second != 0 {
			t.Errorf("%d 503s with a Retry-After of %v, want whole seconds 1..4", n, h)
		}
	}
	if len(hints) != 4 {
		t.Errorf("Retry-After drawn %v, want each of 1..4 s", hints)
	}
	if early != 0 {
		t.Errorf("%d clients retried before their Retry-After", early)
	}
	if rc := sum.Recovery[0]; rc.ConnectedBefore != 3000 || rc.Recovered != 3000 {
		t.Errorf("shedding: %d of %d recovered, want all 3,000", rc.Recovered, rc.ConnectedBefore)
	}
	if res.Orphans != 0 {
		t.Errorf("shedding: %d orphans, want none (no final ACK dropped)", res.Orphans)
	}
}

// TestSpread: a graceful restart with spread=4s closes its connections
// over the 4 s from Start, closes its listener at Start (so the clients
// closed early are refused until the new process listens, as with the
// target), exits StopTime after the spread, and its End and Ready come
// 4 s later than without the spread; a rolling restart's steps shift
// likewise.
func TestSpread(t *testing.T) {
	const start, spread, down = 5 * time.Second, 4 * time.Second, time.Second
	cfg := func(sched string, onRetry func(Retry)) Config {
		return Config{Client: spec.Client{Clients: 2000, Policy: backoff.MustParse("exp:initial=1s,max=8s,jitter=0.5"), Seed: 1,
			Ramp: 20000}, Server: spec.Server{Procs: 2, Backlog: 128},
			Duration: 30 * time.Second, Schedule: mustSchedule(t, sched), OnRetry: onRetry,
		}
	}
	first, last := time.Duration(math.MaxInt64), time.Duration(0)
	var closes, refused int
	exit := start + spread + DefaultStopTime
	res, sum := run(t, cfg("at 5s restart graceful down=1s spread=4s", func(r Retry) {
		switch r.Class {
		case connerr.Closed1001.String():
			closes++
			first, last = min(first, r.At), max(last, r.At)
		case connerr.Refused.String():
			if r.At < exit {
				refused++
			}
		}
	}))
	if closes != 2000 || first < start || last > start+spread || first > start+spread/20 || last < start+spread*19/20 {
		t.Errorf("%d closes from %v to %v, want 2,000 spanning about %v-%v", closes, first, last, start, start+spread)
	}
	if refused < 2000 {
		t.Errorf("%d connects refused before the exit at %v, want at least one a client: the listener closes at Start", refused, exit)
	}
	plain, _ := run(t, cfg("at 5s restart graceful down=1s", nil))
	ev, pe := res.Events[0], plain.Events[0]
	if want := exit + down; ev.End != want || ev.End-pe.End != spread || ev.Ready-pe.Ready != spread {
		t.Errorf("End %v Ready %v (without spread %v, %v): want End %v, both %v later", ev.End, ev.Ready, pe.End, pe.Ready, want, spread)
	}
	if rc := sum.Recovery[0]; rc.Recovered != 2000 {
		t.Errorf("%d recovered, want 2,000", rc.Recovered)
	}

	roll := func(sched string) []results.Step {
		c := cfg(sched, nil)
		c.Clients = 10
		res, _ := run(t, c)
		return res.Events[0].Steps
	}
	spreadSteps := roll("at 5s restart graceful rolling interval=2s down=1s spread=4s")
	plainSteps := roll("at 5s restart graceful rolling interval=2s down=1s")
	if len(spreadSteps) != 2 || len(plainSteps) != 2 {
		t.Fatalf("rolling steps %v and %v, want 2 each", spreadSteps, plainSteps)
	}
	for i, want := range []struct{ start, end time.Duration }{{0, spread}, {spread, 2 * spread}} {
		s, p := spreadSteps[i], plainSteps[i]
		if s.Start-p.Start != want.start || s.End-p.End != want.end || s.Ready-p.Ready != want.end {
			t.Errorf("rolling step %d: %+v, without spread %+v: want Start %v, End and Ready %v later", i, s, p, want.start, want.end)
		}
	}
}

// hintStorm is a fleet of 4,000 on one process of 2,000 accepts a
// second, through a graceful restart with down=2s and the given options.
func hintStorm(t *testing.T, opts string, onRetry func(Retry)) *summary.Summary {
	sched := "at 10s restart graceful down=2s" + opts
	_, sum := run(t, Config{Client: spec.Client{Clients: 4000, Policy: backoff.MustParse("exp:initial=1s,max=8s,jitter=0.5"), Seed: 1,
		Ramp: 20000}, Server: spec.Server{Procs: 1, Backlog: 128, AcceptRate: 2000},
		Duration: 45 * time.Second, Schedule: mustSchedule(t, sched), IssueRate: 40000, OnRetry: onRetry,
	})
	return sum
}

// TestHint: a graceful restart with hint=4s closes every connection with
// 1013 and a delay of down + u·hint; the clients honour it (no retry
// before down), so the herd after Ready is spread over the window and
// its peak a 100 ms is lower than without the hint.
func TestHint(t *testing.T) {
	plain := hintStorm(t, "", nil)
	var closes, early int
	hinted := hintStorm(t, " hint=4s", func(r Retry) {
		if r.Class != connerr.Closed1013.String() {
			return
		}
		closes++
		if r.Hint < 2*time.Second || r.Hint > 6*time.Second || r.Delay < r.Hint {
			early++
		}
	})
	if closes != 4000 || early != 0 {
		t.Errorf("%d closed with 1013, %d of them with a hint outside 2-6 s or retried before it: want 4,000 and none", closes, early)
	}
	p, h := plain.Recovery[0], hinted.Recovery[0]
	if *h.HerdPeakPer100ms*3/2 > *p.HerdPeakPer100ms {
		t.Errorf("herd peak a 100 ms after Ready: %d with hint=4s, %d without: want it at least a third lower", *h.HerdPeakPer100ms, *p.HerdPeakPer100ms)
	}
	if h.Recovered != 4000 {
		t.Errorf("hint: %d recovered, want 4,000", h.Recovered)
	}
}
