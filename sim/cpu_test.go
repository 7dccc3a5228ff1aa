package sim

import (
	"encoding/json"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/results/summary"
	"github.com/stampede-dev/stampede/spec"
)

// cpuStorm is a fleet of 3,000 on one target process, restarted at 20 s,
// on a machine of cores (0: not modelled) with costs.
func cpuStorm(t *testing.T, cores float64, costs CPUCosts) Config {
	return Config{
		Client: spec.Client{Clients: 3000, Policy: backoff.MustParse("exp:initial=1s,max=60s,jitter=0.5,spread=100ms-500ms"), Seed: 1},
		Server: spec.Server{Procs: 1, Backlog: 128}, Duration: 80 * time.Second,
		Schedule: mustSchedule(t, "at 20s restart abrupt down=2s"), ScheduleText: "at 20s restart abrupt down=2s",
		Cores: cores, CPU: costs,
	}
}

func recovery(t *testing.T, sum *summary.Summary) summary.Recovery {
	t.Helper()
	if len(sum.Recovery) != 1 {
		t.Fatalf("%d recoveries, want 1", len(sum.Recovery))
	}
	return sum.Recovery[0]
}

func r99(t *testing.T, sum *summary.Summary) float64 {
	t.Helper()
	r := recovery(t, sum)
	if r.R99S == nil {
		return math.Inf(1)
	}
	return *r.R99S
}

// TestCoresZeroUnchanged: without Cores the costs are not used, and the
// summary is the one of a config that never mentions them.
func TestCoresZeroUnchanged(t *testing.T) {
	_, want := run(t, cpuStorm(t, 0, CPUCosts{}))
	_, got := run(t, cpuStorm(t, 0, CPUCosts{Attempt: time.Second, Accept: time.Second, Slice: time.Hour}))
	a, _ := json.Marshal(want)
	b, _ := json.Marshal(got)
	if string(a) != string(b) {
		t.Error("CPU costs changed a run without Cores")
	}
}

// TestCoresSlowRecovery: on a machine too small for the herd, recovery
// takes longer than on an unlimited one, and more attempts fail; charging
// the attempts more makes it slower still, than at the default cost and
// than with attempts that cost nothing.
func TestCoresSlowRecovery(t *testing.T) {
	// A million's first connects as they cost before the cuts
	// (docs/performance.md), dear enough for 0.05 cores to be too small.
	dear := CPUCosts{Attempt: 44 * time.Microsecond, Upgrade: 57500, Accept: 80900}
	withAttempt := func(c CPUCosts, a time.Duration) CPUCosts { c.Attempt = a; return c }
	_, free := run(t, cpuStorm(t, 0, CPUCosts{}))
	_, small := run(t, cpuStorm(t, 0.05, dear))
	_, dearer := run(t, cpuStorm(t, 0.05, withAttempt(dear, 4*dear.Attempt)))
	_, cheap := run(t, cpuStorm(t, 0.05, withAttempt(dear, time.Nanosecond)))
	rf, rs, rd, rc := r99(t, free), r99(t, small), r99(t, dearer), r99(t, cheap)
	t.Logf("R99: unlimited %.2fs, 0.05 cores %.2fs, attempts ×4 %.2fs, attempts free %.2fs", rf, rs, rd, rc)
	if !(rs > 2*rf) {
		t.Errorf("R99 on 0.05 cores %.2fs, want well above the unlimited %.2fs", rs, rf)
	}
	if !(rd > rs) {
		t.Errorf("R99 with dearer attempts %.2fs, want above %.2fs", rd, rs)
	}
	if !(rc < rd) {
		t.Errorf("R99 with free attempts %.2fs, want below the dearer ones' %.2fs", rc, rd)
	}
	ws, wf := recovery(t, small).WastedAttemptsPerClient, recovery(t, free).WastedAttemptsPerClient
	if ws == nil || wf == nil || *ws <= *wf {
		t.Errorf("wasted attempts a client: %v on 0.05 cores, %v unlimited: want more on the small machine", *ws, *wf)
	}
}

// TestCoresPaceFirstConnects: the first connects of a fleet on one core
// come at about the core's rate, an attempt, an upgrade at each end.
func TestCoresPaceFirstConnects(t *testing.T) {
	// Dear enough that the core, not the process's capacity, paces them.
	cfg := cpuStorm(t, 1, CPUCosts{Attempt: 44 * time.Microsecond, Upgrade: 57500, Accept: 80900})
	cfg.Schedule, cfg.ScheduleText, cfg.Duration = nil, "", 10*time.Second
	cfg.Clients = 20000
	res, _ := run(t, cfg)
	c := cfg.CPU.AtFleet(cfg.Clients)
	perSec := float64(time.Second) / float64(c.Attempt+c.Upgrade+c.Accept)
	var at1s int
	for i, b := range res.Report.Timeline {
		if time.Duration(i)*results.Tick < time.Second {
			at1s += int(b.Successes)
		}
	}
	if float64(at1s) > 1.1*perSec || float64(at1s) < 0.6*perSec {
		t.Errorf("%d connected in the first second on one core, want about %.0f", at1s, perSec)
	}
}

// TestCoresValidate names the field at fault.
func TestCoresValidate(t *testing.T) {
	ok := Config{Client: spec.Client{Clients: 1}, Duration: time.Second, Cores: 2}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	for name, c := range map[string]struct {
		cfg   Config
		field string
	}{
		"negative cores": {Config{Client: spec.Client{Clients: 1}, Duration: time.Second, Cores: -1}, "Sim.Cores"},
		"NaN cores":      {Config{Client: spec.Client{Clients: 1}, Duration: time.Second, Cores: math.NaN()}, "Sim.Cores"},
		"negative cost":  {Config{Client: spec.Client{Clients: 1}, Duration: time.Second, Cores: 2, CPU: CPUCosts{Accept: -1}}, "Sim.CPU.Accept"},
		"negative share": {Config{Client: spec.Client{Clients: 1}, Duration: time.Second, Cores: 2, CPU: CPUCosts{LoadgenShare: -1}}, "Sim.CPU.LoadgenShare"},
	} {
		err := c.cfg.Validate()
		var fe *spec.FieldError
		if !errors.As(err, &fe) || fe.Field != c.field {
			t.Errorf("%s: Validate = %v, want a field error on %s", name, err, c.field)
		}
	}
}

// TestCoresPaceCloses: a stopping process closes its connections at its
// share of the cores, no faster than the cores alone allow, and exits
// after its last close: the port closes then, and the event's End and
// Ready come Down and StartTime after it, not at the StopTime a quiet
// machine's exit takes. With shape=stall the exit is at StopTime, and
// what the process has not closed by then closes with it.
func TestCoresPaceCloses(t *testing.T) {
	cfg := cpuStorm(t, 0.02, CPUCosts{})
	cfg.StopTime = 500 * time.Millisecond
	res, _ := run(t, cfg)
	least := time.Duration(cfg.Clients) * time.Duration(float64(DefaultCPUCosts.Close)/cfg.Cores)
	closes := res.CPU.Closes
	if closes < least {
		t.Errorf("the closes took %s, want at least %s (the cores alone)", closes, least)
	}
	ev := res.Events[0]
	exit := ev.End - 2*time.Second // down=2s
	if ev.NeverReady || exit < ev.Start+closes || exit > ev.Start+closes+time.Millisecond {
		t.Errorf("restart at %s: the port closed at %s (NeverReady %v), want after the last close at %s",
			ev.Start, exit, ev.NeverReady, ev.Start+closes)
	}
	if want := ev.End + DefaultStartTime; ev.Ready != want {
		t.Errorf("ready at %s, want %s: StartTime after it listened at %s", ev.Ready, want, ev.End)
	}

	cfg.Schedule, cfg.ScheduleText = mustSchedule(t, "at 20s restart abrupt down=2s shape=stall"), "at 20s restart abrupt down=2s shape=stall"
	res, _ = run(t, cfg)
	if got := res.CPU.Closes; got != cfg.StopTime {
		t.Errorf("shape=stall: the closes took %s, want the exit's %s: it closes the rest", got, cfg.StopTime)
	}
}

// TestConfigRecordsCPU: a run with Cores records the costs it used,
// every one, in its config and so in summary.json's; one without records
// none.
func TestConfigRecordsCPU(t *testing.T) {
	cfg := cpuStorm(t, 2, CPUCosts{Accept: 60 * time.Microsecond})
	cfg.Duration = 5 * time.Second
	cfg.Schedule, cfg.ScheduleText = nil, "" // its restart at 20s is after this run's end
	res, sum := run(t, cfg)
	want := DefaultCPUCosts
	want.Accept = 60 * time.Microsecond
	if res.Config.CPU != want {
		t.Errorf("with Cores: CPU %+v, want %+v", res.Config.CPU, want)
	}
	var got struct {
		CPU *CPUCosts `json:"cpu"`
	}
	if err := json.Unmarshal(sum.Config, &got); err != nil || got.CPU == nil || *got.CPU != want {
		t.Errorf("with Cores: summary.json config.cpu %+v (%v), want %+v", got.CPU, err, want)
	}
	cfg.Cores = 0
	res, sum = run(t, cfg)
	got.CPU = nil
	if err := json.Unmarshal(sum.Config, &got); err != nil || got.CPU != nil || res.Config.CPU != (CPUCosts{}) {
		t.Errorf("without Cores: CPU %+v, summary.json config.cpu %+v (%v); want none", res.Config.CPU, got.CPU, err)
	}
}

// TestPingsFromAnInterval: a connected client pings only after a ping
// interval of silence, so a fleet charges no ping CPU in its first
// interval, and its full load after.
func TestPingsFromAnInterval(t *testing.T) {
	cfg := cpuStorm(t, 1, CPUCosts{})
	cfg.Schedule, cfg.ScheduleText = nil, ""
	cfg.PingInterval = 20 * time.Second
	for _, c := range []struct {
		dur       time.Duration
		low, high float64 // seconds of pings
	}{
		{15 * time.Second, 0, 0},
		// 3,000 clients connected within the first 2 s: each pings for
		// 28-30 s of the 50, one every 20 s at DefaultCPUCosts.Ping.
		{50 * time.Second, 28, 30},
	} {
		cfg.Duration = c.dur
		res, _ := run(t, cfg)
		per := 3000 * DefaultCPUCosts.Ping.Seconds() / 20
		if got := res.CPU.Pings.Seconds(); got < c.low*per*0.99 || got > c.high*per*1.01 {
			t.Errorf("%s: pings took %.4fs of CPU, want %.4f-%.4fs", c.dur, got, c.low*per, c.high*per)
		}
	}
}

// TestCoresPaceRollingSteps: in a rolling restart with the cores
// modelled, each process exits after its own closes, the next is stopped
// an interval after the one before is ready, and the event records every
// step as it is reached.
func TestCoresPaceRollingSteps(t *testing.T) {
	cfg := cpuStorm(t, 0.02, CPUCosts{})
	cfg.Server.Procs = 2
	cfg.StopTime = 100 * time.Millisecond
	text := "at 20s restart abrupt procs=rolling interval=1s down=1s"
	cfg.Schedule, cfg.ScheduleText = mustSchedule(t, text), text
	res, _ := run(t, cfg)
	ev := res.Events[0]
	if ev.NeverReady || len(ev.Steps) != 2 {
		t.Fatalf("rolling restart: %d steps, NeverReady %v; want 2 steps, ready", len(ev.Steps), ev.NeverReady)
	}
	// Each process holds about half the fleet: its closes alone, at the
	// cores' pace, outlast the StopTime.
	least := time.Duration(cfg.Clients/3) * time.Duration(float64(DefaultCPUCosts.Close)/cfg.Cores)
	for i, st := range ev.Steps {
		if st.Proc != i || st.End-st.Start < least+time.Second || st.Ready != st.End+DefaultStartTime {
			t.Errorf("step %d: %+v; want process %d listening at least %s (its closes, then down=1s) after its stop, ready %s later",
				i, st, i, least+time.Second, DefaultStartTime)
		}
	}
	if next, prev := ev.Steps[1].Start, ev.Steps[0].Ready; next != prev+time.Second {
		t.Errorf("the second step started at %s, want interval=1s after the first was ready at %s", next, prev)
	}
	if ev.End != ev.Steps[1].End || ev.Ready != ev.Steps[1].Ready {
		t.Errorf("event End %s, Ready %s; want the last step's %s, %s", ev.End, ev.Ready, ev.Steps[1].End, ev.Steps[1].Ready)
	}
}
