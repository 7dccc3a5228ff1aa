package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stampede-dev/stampede/sim"
	"github.com/stampede-dev/stampede/spec"
)

// runConfig is what fromRuns reads of a real run's summary.json beyond
// summary: the run's effective config (spec, every default applied; the
// flag spelling of config is never read back), the machine it ran on,
// and the CPU each end spent per first connect on it (resources).
type runConfig struct {
	RunID   string    `json:"run_id"`
	Spec    *spec.Run `json:"spec"`
	Machine struct {
		Cores          float64 `json:"cores"`
		OtherCPUShare  float64 `json:"other_cpu_share"`
		OwnCPUShare    float64 `json:"own_cpu_share"`
		Load1Start     float64 `json:"load1_start"`
		SamplesWindowS float64 `json:"window_s"`
	} `json:"machine"`
	Resources struct {
		Loadgen endCPU `json:"loadgen"`
		Target  endCPU `json:"target"`
	} `json:"resources"`
}

// endCPU is what fromRuns reads of one end's resources: its CPU per first
// connect in µs, measured over the ramp before any event (nil when the
// run sampled none).
type endCPU struct {
	CPUUsPerConnect *float64 `json:"cpu_us_per_connect"`
}

// readRunConfig reads the runConfig of the real run in dir.
func readRunConfig(dir string) (*runConfig, error) {
	var rc runConfig
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err == nil {
		err = json.Unmarshal(b, &rc)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	if rc.Spec == nil || rc.Spec.Client == nil {
		return nil, fmt.Errorf("%s: summary.json has no spec with a fleet (a folder written before summary.json recorded spec, or not a WebSocket run)", dir)
	}
	return &rc, nil
}

// firstConnect is what a run's first connect cost each end, in µs; zero
// when not measured.
type firstConnect struct{ Loadgen, Target float64 }

// ok says both ends were measured.
func (fc firstConnect) ok() bool { return fc.Loadgen > 0 && fc.Target > 0 }

// flag writes fc as simulate's --cpu-per-connect takes it for a fleet of
// clients: each end's cost less the model's growth to that fleet
// (sim.CPUCosts.AtFleet), so that the model charges that fleet what the
// run measured.
func (fc firstConnect) flag(clients int) string {
	lg, tg := sim.CPUCosts{}.Growth(clients)
	return usTenth(fc.Loadgen/lg) + "," + usTenth(fc.Target/tg)
}

// firstConnect returns the run's costs as summary.json gives them.
func (rc *runConfig) firstConnect() firstConnect {
	var fc firstConnect
	if lg := rc.Resources.Loadgen.CPUUsPerConnect; lg != nil && *lg > 0 {
		fc.Loadgen = *lg
	}
	if tg := rc.Resources.Target.CPUUsPerConnect; tg != nil && *tg > 0 {
		fc.Target = *tg
	}
	return fc
}

// machineFlags returns the real run's own costs: a first connect's, for
// --cpu-per-connect, and --cpu-costs' ping ("" when not measured), and
// where the first was read. Both come from the run's own samples before
// its event (measureCosts): per first connect over the ramp alone, per
// ping over the idle fleet after it. A run whose samples do not give the
// ramp's falls back to summary.json's cpu_us_per_connect (the ramp's
// too, in runs since 2026-12-07; before, it ran on to the event and so
// also charged the idle fleet's pings to the connects).
func machineFlags(dir string, s *summary, rc *runConfig) (fc firstConnect, ping, from string) {
	interval, pong := max(0, rc.Spec.Client.PingInterval), max(0, rc.Spec.Client.PongTimeout)
	if pong <= 0 {
		pong = interval // the loadgen's default
	}
	mc, ok := measureCosts(dir, s, interval, pong)
	if !ok || !(mc.Loadgen > 0) || !(mc.Target > 0) {
		return rc.firstConnect(), "", "summary.json"
	}
	if mc.Ping > 0 {
		ping = usTenth(mc.Ping)
	}
	return firstConnect{mc.Loadgen, mc.Target}, ping, fmt.Sprintf("the ramp, to %.1fs", mc.RampEnd)
}

// usTenth writes a cost in µs as simulate's flags take it, to a tenth of
// a µs: 48.5us.
func usTenth(v float64) string {
	return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64) + "us"
}

// flagValue is one flag of a command line and its value ("" leaves the
// flag out).
type flagValue struct{ flag, value string }

// simFlags returns the flags of a real run that `stampede simulate` takes
// as they are, written from the run's typed spec: the fleet, its policy
// and timeouts, the server's queue and rate, the schedule. A zero value
// is left out (the flag's default).
func simFlags(sp *spec.Run) []flagValue {
	c, sv := sp.Client, spec.Server{}
	if sp.Server != nil {
		sv = *sp.Server
	}
	num := func(v float64) string {
		if v == 0 {
			return ""
		}
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	dur := func(d time.Duration) string {
		if d <= 0 {
			return ""
		}
		return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s"
	}
	return []flagValue{
		{"clients", num(float64(c.Clients))}, {"policy", c.Policy.String()}, {"seed", num(float64(c.Seed))},
		{"duration", dur(sp.Duration)}, {"chaos", sp.Chaos}, {"backlog", num(float64(sv.Backlog))},
		{"accept-rate", num(sv.AcceptRate)}, {"connect-timeout", dur(c.ConnectTimeout)},
		{"handshake-timeout", dur(c.HandshakeTimeout)}, {"syn-retries", num(float64(c.SynRetries))},
		{"ramp", num(c.Ramp)}, {"max-inflight", num(float64(c.MaxInflight))},
	}
}

// simArgs returns the `stampede simulate` arguments that model the real
// run in dir on its own machine: its command's flags (simFlags), its
// layout (target processes), the restart's stop and start times from its
// event, the rate its loadgens started attempts at (issueRate), the
// cores it had, --cores: the machine's cores less the share other
// processes took over the run (summary.json machine.other_cpu_share,
// mostly the kernel's softirq work on the run's own packets, which no
// process is charged), and with --cores the machine's costs
// (machineFlags): what a first connect cost each end, --cpu-per-connect,
// and a keepalive ping, --cpu-costs ping=. Those are inputs measured
// before the event; the figures compared are the recovery's. netdev is
// the machine's net.core.netdev_max_backlog during the run (0: the
// model's default). herd, when not nil, replaces the first connects'
// costs with a herd's (--cpu-costs attempt=,upgrade=,accept=, and the
// run's own ping=); law, when not "", leaves them to a cost law grown to
// the run's fleet: modelLaw, the model's own (its defaults), or a
// --cpu-costs SPEC such as the one fitLaw prints, with the run's own ping=
// unless SPEC gives one.
func simArgs(dir string, s *summary, rc *runConfig, netdev int, herd *herdCosts, law string) ([]string, error) {
	args := []string{"simulate", "-q"}
	for _, f := range simFlags(rc.Spec) {
		if f.value != "" {
			args = append(args, "--"+f.flag, f.value)
		}
	}
	if len(s.Events) == 0 {
		return nil, fmt.Errorf("%s: the run has no chaos event to model", dir)
	}
	e := s.Events[0]
	down := downOf(rc.Spec.Chaos)
	args = append(args, "--procs", fmt.Sprint(s.targetProcs()),
		"--stop-time", secs(max(0.001, e.EndS-e.StartS-down)), "--start-time", secs(max(0.001, e.ReadyS-e.EndS)),
		"--issue-rate", strconv.FormatFloat(issueRate(dir), 'f', 0, 64))
	if rc.Machine.Cores > 0 {
		cores := rc.Machine.Cores * (1 - rc.Machine.OtherCPUShare)
		args = append(args, "--cores", strconv.FormatFloat(math.Round(cores*100)/100, 'f', -1, 64))
		fc, ping, _ := machineFlags(dir, s, rc)
		switch {
		case herd != nil:
			args = append(args, "--cpu-costs", herd.cpuCosts(ping))
		case law != "" && law != modelLaw:
			spec := law
			if ping != "" && !strings.Contains(","+spec, ",ping=") {
				spec += ",ping=" + ping
			}
			args = append(args, "--cpu-costs", spec)
		default:
			if fc.ok() && law == "" {
				args = append(args, "--cpu-per-connect", fc.flag(rc.Spec.Client.Clients))
			}
			if ping != "" {
				args = append(args, "--cpu-costs", "ping="+ping)
			}
		}
	}
	if netdev > 0 {
		args = append(args, "--netdev-backlog", fmt.Sprint(netdev))
	}
	return args, nil
}

// downOf returns the down= of the first restart in a chaos schedule, in
// seconds (0 when it has none).
func downOf(schedule string) float64 {
	for _, w := range strings.FieldsFunc(schedule, func(r rune) bool { return r == ' ' || r == ';' }) {
		if v, ok := strings.CutPrefix(w, "down="); ok {
			if d, err := time.ParseDuration(v); err == nil {
				return d.Seconds()
			}
		}
	}
	return 0
}

// scaleFigures are what fromRuns compares: how many came back, the
// recovery's R50 to R100, the herd's figures, and when the restart's
// target was ready again, from the event's start: the R figures count
// from that instant, so a model whose restart ends late can match them
// with a herd that met a different server (lab/records/measurements.md,
// "A third boot, and the model's late restart").
var scaleFigures = []figure{
	{"recovered", func(s *summary) *float64 {
		if len(s.Recovery) == 0 {
			return nil
		}
		v := float64(s.Recovery[0].Recovered)
		return &v
	}},
	figures[0], figures[1], figures[2],
	{"R100 s", func(s *summary) *float64 {
		if len(s.Recovery) == 0 {
			return nil
		}
		return s.Recovery[0].R100
	}},
	figures[3], figures[4], figures[5],
	{"ready after start s", func(s *summary) *float64 {
		if len(s.Events) == 0 || s.Events[0].NeverReady || s.Events[0].ReadyS == 0 {
			return nil
		}
		v := s.Events[0].ReadyS - s.Events[0].StartS
		return &v
	}},
}

// fromRuns simulates each real run folder in dirs on its own inputs
// (simArgs) into DIR-sim beside it, or reuses that folder, and prints the
// recovery figures side by side with the simulator's error and whether R90
// and R99 are within 15 %. Each run's line gives its herd's costs
// (measureHerd). With herdFrom, a real run's folder, every simulation
// gets that run's herd costs in place of its own first connects', and
// writes DIR-sim-herd-RUN (RUN: herdFrom's last element); with law
// (simArgs), a cost law, into DIR-sim-law, the model's own, or
// DIR-sim-law-given, a law given as --cpu-costs. Last it prints the cost
// law fitted on the runs' first connects (fitLaw).
func fromRuns(exe string, dirs []string, netdev int, reuse bool, herdFrom string, law string) {
	var herd *herdCosts
	simSuffix := "-sim"
	switch law {
	case "":
	case modelLaw:
		simSuffix = "-sim-law"
	default:
		simSuffix = "-sim-law-given"
	}
	if herdFrom != "" {
		h, ok := herdOf(herdFrom, load(herdFrom))
		if !ok {
			fail(fmt.Errorf("-herd-from %s: no herd to measure (an event with a Ready, its upgrades, resources.csv and timeline.csv)", herdFrom))
		}
		fmt.Fprintf(os.Stderr, "%s: %s; given to every simulation\n", herdFrom, h)
		herd, simSuffix = &h, "-sim-herd-"+filepath.Base(filepath.Clean(herdFrom))
	}
	fmt.Println("| real run | figure | real | simulated | error |")
	fmt.Println("| --- | --- | --- | --- | --- |")
	var verdicts []string
	var fits []fitPoint
	for _, dir := range dirs {
		real := load(dir)
		rc, err := readRunConfig(dir)
		if err != nil {
			fail(err)
		}
		args, err := simArgs(dir, real, rc, netdev, herd, law)
		if err != nil {
			fail(err)
		}
		simDir := filepath.Clean(dir) + simSuffix
		if _, err := os.Stat(filepath.Join(simDir, "summary.json")); err != nil || !reuse {
			run(exe, append(args, "--force", "--out", simDir))
		}
		sim := load(simDir)
		costs := "no CPU per first connect measured"
		if fc, ping, from := machineFlags(dir, real, rc); fc.ok() {
			fits = append(fits, fitPoint{rc.Spec.Client.Clients, fc})
			costs = fmt.Sprintf("CPU per first connect loadgen %s, target %s (%s)", usTenth(fc.Loadgen), usTenth(fc.Target), from)
			if ping != "" {
				costs += ", per ping " + ping
			}
			switch {
			case !slices.Contains(args, "--cores"):
				costs += " (not passed: no --cores)"
			case herd != nil:
				costs += " (not passed: -herd-from's herd costs instead)"
			case law == modelLaw:
				costs += " (not passed: -law)"
			case law != "":
				costs += " (not passed: -law-costs)"
			}
		}
		if h, ok := herdOf(dir, real); ok {
			costs += "; " + h.String()
		}
		fmt.Fprintf(os.Stderr, "%s: machine load %.2f at the start, the run %.0f %% of the CPU, other processes %.0f %%; %s\n",
			dir, rc.Machine.Load1Start, 100*rc.Machine.OwnCPUShare, 100*rc.Machine.OtherCPUShare, costs)
		for _, f := range scaleFigures {
			rv, sv := f.get(real), f.get(sim)
			fmt.Printf("| %s | %s | %s | %s | %s |\n", dir, f.name, val(rv), val(sv), relErr(rv, sv))
		}
		var parts []string
		for _, f := range figures[1:3] { // R90, R99
			rv, sv := f.get(real), f.get(sim)
			parts = append(parts, fmt.Sprintf("%s %s (%s)", f.name, yesNo(within15(rv, sv)), relErr(rv, sv)))
		}
		verdicts = append(verdicts, fmt.Sprintf("%s: within 15 %%: %s", dir, strings.Join(parts, ", ")))
	}
	fmt.Println()
	for _, v := range verdicts {
		fmt.Println(v)
	}
	if law := fitLaw(fits); law != "" {
		fmt.Println(law)
	}
}

// herdOf returns the herd costs of the real run in dir (measureHerd),
// its loadgen's upgrades charged at its ramp's first connect's share.
func herdOf(dir string, s *summary) (herdCosts, bool) {
	mc, ok := measureCosts(dir, s, 0, 0)
	lg := mc.Loadgen
	if !ok || !(lg > 0) {
		rc, err := readRunConfig(dir)
		if err != nil || rc.Resources.Loadgen.CPUUsPerConnect == nil {
			return herdCosts{}, false
		}
		lg = *rc.Resources.Loadgen.CPUUsPerConnect
	}
	return measureHerd(dir, s, lg)
}
