package storm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/chaos"
	"github.com/stampede-dev/stampede/internal/resultstest"
	"github.com/stampede-dev/stampede/loadgen"
	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/results/folder"
	"github.com/stampede-dev/stampede/results/summary"
	"github.com/stampede-dev/stampede/spec"
	"github.com/stampede-dev/stampede/storm"
	"github.com/stampede-dev/stampede/target"
)

// These tests run whole storms with real processes and loopback sockets:
// the stampede binary built by TestMain as target group and loadgen
// workers, a chaos supervisor, and the results folder. Fleets are a few
// hundred clients and runs a few seconds, so they hold on a busy 2-core
// machine; nothing asserts on wall-clock speed.

// testClients is the fleet size of every storm here.
const testClients = 300

// testPolicy reconnects quickly and with jitter, so the fleet is back
// within a second or two of the target being ready: a ceiling of 1 s and a
// per-client base of 100-300 ms.
const testPolicy = "exp:initial=200ms,max=1s,jitter=0.5,spread=100ms-300ms"

// lockedBuffer collects a storm's log (progress lines and the children's
// stderr, written from several goroutines) for a failing test to print.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// stormConfig returns a storm of testClients clients with the given chaos
// schedule, a backlog large enough for the whole fleet, and results in a
// temporary folder.
func stormConfig(t *testing.T, schedule string) storm.Config {
	t.Helper()
	pol, err := backoff.Parse(testPolicy)
	if err != nil {
		t.Fatal(err)
	}
	sched, err := chaos.Parse(schedule)
	if err != nil {
		t.Fatal(err)
	}
	return storm.Config{
		Target:           target.Config{Server: spec.Server{Backlog: 1024}},
		Fleet:            loadgen.Config{Client: spec.Client{Clients: testClients, Ramp: 1000, Policy: pol, Seed: 7}},
		Schedule:         sched,
		ScheduleText:     schedule,
		Duration:         7 * time.Second,
		Out:              t.TempDir(),
		Exe:              stampedeExe,
		ProgressInterval: time.Second,
	}
}

// runStorm runs cfg, fails the test on an error, and prints the storm's
// log when the test fails.
func runStorm(t *testing.T, cfg storm.Config) *storm.Result {
	t.Helper()
	logs := &lockedBuffer{}
	cfg.Log = logs
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("storm log:\n%s", logs.String())
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Duration+30*time.Second)
	defer cancel()
	res, err := storm.Run(ctx, cfg)
	if err != nil {
		t.Fatalf("storm.Run: %v", err)
	}
	return res
}

// oneRecovery checks that the run had one event and every client
// connected before it came back, and returns the event's summary.
func oneRecovery(t *testing.T, sum *summary.Summary) summary.EventSummary {
	t.Helper()
	for _, r := range sum.Recovery {
		t.Logf("recovery: before %d, back %d, r100 %s; failures %v; ListenOverflows %d",
			r.ConnectedBefore, r.Recovered, resultstest.Seconds(r.R100S), summary.NonZero(sum.Connect.Failures), sum.Kernel.ListenOverflows)
	}
	if len(sum.Events) != 1 || len(sum.Recovery) != 1 {
		t.Fatalf("events %d, recovery entries %d, want 1 and 1", len(sum.Events), len(sum.Recovery))
	}
	rec := sum.Recovery[0]
	if rec.ConnectedBefore != testClients || rec.Recovered != rec.ConnectedBefore {
		t.Errorf("connected_before %d, recovered %d, want both %d", rec.ConnectedBefore, rec.Recovered, testClients)
	}
	if rec.R100S == nil {
		t.Errorf("r100_s is null: the fleet never came back whole")
	}
	return sum.Events[0]
}

// TestRestartModes restarts the target once in each mode and checks how the
// clients saw it go (the disconnect class) and that all of them came back.
// The port is closed while the target is down, so reconnects are refused.
// The event comes at 2.5 s: under -race on a busy machine a second loadgen
// process has connected its share only after 1.5 s.
func TestRestartModes(t *testing.T) {
	cases := []struct {
		name       string
		schedule   string
		procs      int    // loadgen and target processes; 0 = sized (1 each)
		wantClose  string // the class of every disconnect
		otherClose string
	}{
		// graceful: close 1001 to every client, then exit.
		{"graceful", "at 2500ms restart graceful down=1s", 0, "closed_1001", "closed_1006"},
		// abrupt: exit without close frames: the clients read EOF.
		{"abrupt", "at 2500ms restart abrupt down=1s", 0, "closed_1006", "closed_1001"},
		// kill: SIGKILL from the supervisor, here to a group of two
		// target processes with the fleet in two loadgen workers.
		{"kill", "at 2500ms restart kill down=1s", 2, "closed_1006", "closed_1001"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := stormConfig(t, tc.schedule)
			cfg.LoadgenProcs, cfg.Target.Procs = tc.procs, tc.procs
			res := runStorm(t, cfg)
			sum := res.Summary
			if tc.procs > 0 && (res.Sizing.LoadgenProcs != tc.procs || res.Sizing.TargetProcs != tc.procs) {
				t.Errorf("sizing %+v, want %d loadgen and %d target processes", res.Sizing, tc.procs, tc.procs)
			}
			ev := oneRecovery(t, sum)
			if ev.Kind != "restart" || ev.Mode != tc.name {
				t.Errorf("event %s %s, want restart %s", ev.Kind, ev.Mode, tc.name)
			}
			if *ev.ReadyS <= ev.StartS {
				t.Errorf("ready_s %.3f not after start_s %.3f", *ev.ReadyS, ev.StartS)
			}
			d := sum.Connect.Disconnects
			if d[tc.wantClose] != testClients || d[tc.otherClose] != 0 {
				t.Errorf("disconnects %s=%d %s=%d, want %d and 0 (all: %v)",
					tc.wantClose, d[tc.wantClose], tc.otherClose, d[tc.otherClose], testClients, d)
			}
			f := sum.Connect.Failures
			if f["refused"] == 0 {
				t.Errorf("no refused attempts while the port was closed: failures %v", f)
			}
			if f["timeout"] != 0 || f["handshake_timeout"] != 0 {
				t.Errorf("timeouts with the port closed and a large backlog: failures %v", f)
			}
			if sum.Connect.Successes != 2*testClients {
				t.Errorf("successes %d, want %d (every client twice)", sum.Connect.Successes, 2*testClients)
			}
		})
	}
}

// TestStallShape keeps the port open while the target is down, with a tiny
// backlog and short connect deadlines: the accept queue fills, the kernel
// drops SYNs (ListenOverflows), clients whose SYN goes unanswered fail with
// timeout and those stuck in the queue with handshake_timeout. The
// closed shape of the same restart (TestRestartModes) gives refusals.
func TestStallShape(t *testing.T) {
	t.Parallel()
	cfg := stormConfig(t, "at 2500ms restart abrupt down=2s shape=stall")
	cfg.Target.Backlog = 8
	cfg.Fleet.Ramp = 300 // a small backlog takes the first connects slowly
	cfg.Fleet.SynRetries = 1
	cfg.Fleet.ConnectTimeout = time.Second
	cfg.Fleet.HandshakeTimeout = time.Second
	cfg.Duration = 11 * time.Second
	res := runStorm(t, cfg)
	sum := res.Summary
	oneRecovery(t, sum)
	f := sum.Connect.Failures
	if f["timeout"]+f["handshake_timeout"] == 0 {
		t.Errorf("no timeout or handshake_timeout failures in a stall: failures %v", f)
	}
	if f["refused"] > f["timeout"]+f["handshake_timeout"] {
		t.Errorf("more refusals (%d) than timeouts (%d) with the port open: failures %v",
			f["refused"], f["timeout"]+f["handshake_timeout"], f)
	}
	if sum.Kernel.ListenOverflows == 0 {
		t.Errorf("ListenOverflows delta 0: the full accept queue dropped nothing (kernel %+v)", sum.Kernel)
	}
}

// TestSizeErrors asks for runs the machine cannot hold: storm.Run refuses
// before starting anything, naming the limit and the way out.
func TestSizeErrors(t *testing.T) {
	cases := []struct {
		name    string
		clients int
		loadgen int    // LoadgenProcs
		target  int    // TargetProcs
		ips     string // Fleet.SourceIPs
		want    []string
	}{
		// More than this machine holds: more processes than a run starts,
		// or more memory than it has, whatever its limits (the limits are
		// injected in TestLimitsSize).
		{"too many clients", 4_000_000_000, 0, 0, "", []string{"Client.Clients: 4000000000 needs"}},
		// One loadgen process is capped by the open-file limit.
		{"one loadgen process", 20000, 1, 0, "", []string{"Storm.LoadgenProcs: 1", "open-file limit", "use at least 2"}},
		// So is one target process.
		{"one target process", 20000, 0, 1, "", []string{"Server.Procs: 1", "open-file limit", "Server.Procs 2"}},
		// A process count past the cap is refused, not forked.
		{"too many loadgen processes", 100, storm.MaxProcs + 1, 0, "", []string{"Storm.LoadgenProcs: 257", "0..256"}},
		{"too many target processes", 100, 0, 1000, "", []string{"Server.Procs: 1000", "0..256"}},
		{"negative target processes", 100, 0, -1, "", []string{"Server.Procs: -1", "must not be negative"}},
		// An accept rate split among the target processes below what one
		// paces.
		{"accept rate too small to share", 100, 0, 2, "", []string{"Server.AcceptRate: 0.001", "2 target processes", "0.0005"}},
		// One source address has one ephemeral port range per destination.
		{"one source address", 30000, 0, 0, "127.0.0.2", []string{"Client.SourceIPs: ", "ip_local_port_range"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := stormConfig(t, "")
			cfg.Fleet.Clients = tc.clients
			cfg.LoadgenProcs, cfg.Target.Procs = tc.loadgen, tc.target
			if strings.HasPrefix(tc.name, "accept rate") {
				cfg.Target.AcceptRate = spec.MinAcceptRate
			}
			if tc.ips != "" {
				ips, err := loadgen.ParseSourceIPs(tc.ips)
				if err != nil {
					t.Fatal(err)
				}
				cfg.Fleet.SourceIPs = ips
			}
			start := time.Now()
			_, err := storm.Run(context.Background(), cfg)
			if err == nil {
				t.Fatalf("storm.Run with %d clients: no error", tc.clients)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("refusing took %s: it should fail before starting processes", d)
			}
		})
	}
}

// TestResultsFolder checks that a run's folder holds summary.json with
// every field docs/summary-json.md promises (a stable contract: users'
// scripts read it), and resources.csv.
func TestResultsFolder(t *testing.T) {
	t.Parallel()
	cfg := stormConfig(t, "at 1s restart abrupt down=500ms")
	cfg.Duration = 5 * time.Second
	runStorm(t, cfg)
	raw, err := os.ReadFile(filepath.Join(cfg.Out, folder.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("summary.json: %v", err)
	}
	paths := []string{
		"run_id", "seed", "config", "clients",
		"events.0.kind", "events.0.mode", "events.0.start_s", "events.0.ready_s",
		"connect.attempts", "connect.successes", "connect.failures.refused", "connect.failures.timeout",
		"recovery.0.event", "recovery.0.connected_before", "recovery.0.recovered",
		"recovery.0.r50_s", "recovery.0.r90_s", "recovery.0.r99_s", "recovery.0.r100_s",
		"recovery.0.herd_peak_per_100ms", "recovery.0.herd_peak_to_mean",
		"recovery.0.wasted_attempts_per_client", "recovery.0.outage_attempts_per_client",
		"messages.sent", "messages.acked", "messages.retried", "messages.dup_suppressed",
		"messages.dup_delivered", "messages.lost", "messages.resumed",
		"kernel.ListenOverflows", "kernel.ListenDrops", "kernel.TCPSynRetrans",
		"slo", "pass",
	}
	for _, lat := range []string{"connect", "ttr", "message_rtt", "resume"} {
		for _, q := range []string{"p50", "p90", "p99", "max"} {
			paths = append(paths, "latency_ms."+lat+"."+q)
		}
	}
	for _, role := range []string{"loadgen", "target"} {
		for _, k := range []string{"peak_rss_bytes", "cpu_s", "peak_fds", "processes"} {
			paths = append(paths, "resources."+role+"."+k)
		}
	}
	for _, p := range paths {
		if _, ok := lookup(doc, p); !ok {
			t.Errorf("summary.json has no %s", p)
		}
	}
	// The figures are this run's, not zeros.
	if v, _ := lookup(doc, "clients"); v != float64(testClients) {
		t.Errorf("clients = %v, want %d", v, testClients)
	}
	if v, _ := lookup(doc, "seed"); v != float64(7) {
		t.Errorf("seed = %v, want 7", v)
	}
	for _, p := range []string{"resources.loadgen.peak_rss_bytes", "resources.target.peak_rss_bytes",
		"resources.loadgen.peak_fds", "resources.target.peak_fds", "resources.coordinator.peak_rss_bytes"} {
		if v, _ := lookup(doc, p); v == nil || v.(float64) <= 0 {
			t.Errorf("%s = %v, want > 0", p, v)
		}
	}
	if _, err := os.Stat(filepath.Join(cfg.Out, results.ResourcesFile)); err != nil {
		t.Errorf("resources file: %v", err)
	}
	// The machine's load while the run went: this machine's cores, a
	// sample a second, the run's own CPU counted apart.
	if v, _ := lookup(doc, "machine.cores"); v == nil || v.(float64) < 1 {
		t.Errorf("machine.cores = %v", v)
	}
	if v, _ := lookup(doc, "machine.samples"); v == nil || v.(float64) < 2 {
		t.Errorf("machine.samples = %v", v)
	}
	if v, _ := lookup(doc, "machine.own_cpu_share"); v == nil || v.(float64) <= 0 {
		t.Errorf("machine.own_cpu_share = %v", v)
	}
	// Every agent is listed, with the largest message it sent: streamed in
	// pieces, never over 1 MiB.
	if v, _ := lookup(doc, "complete"); v != true {
		t.Errorf("complete = %v, want true", v)
	}
	roles := map[string]int{}
	agents, _ := lookup(doc, "agents")
	for _, a := range agents.([]any) {
		a := a.(map[string]any)
		roles[a["role"].(string)]++
		if mb := a["max_message_bytes"].(float64); mb <= 0 || mb > results.MaxMessageBytes || a["lost"] != false {
			t.Errorf("agent %v: largest message %v bytes, lost %v", a["name"], mb, a["lost"])
		}
	}
	if roles["target"] != 1 || roles["loadgen"] < 1 {
		t.Errorf("agents by role %v, want one target and the loadgens", roles)
	}
}

// TestCPUPerConnect: a real run gives the loadgen and the target a CPU
// per first connect and per reconnect, positive and finite: CPU time at
// the samples nearest the run's start, the event and its herd window's
// end, over the fleet's first connects and its clients back. Each role's
// own processes count their system calls: at least a connect per loadgen
// attempt (the snapshot may count an attempt a moment before its
// connect) and an accept4 per connection the target took.
func TestCPUPerConnect(t *testing.T) {
	t.Parallel()
	cfg := stormConfig(t, "at 3s restart abrupt down=500ms")
	cfg.Duration = 6 * time.Second
	// A herd of 300 costs the target about 12 ms of CPU, one or two clock
	// ticks (the kernel counts CPU time in 10 ms): too few to be sure of
	// one in the reconnects' span. 1,000 cost it several.
	cfg.Fleet.Clients = 1000
	res := runStorm(t, cfg)
	for _, role := range []string{results.RoleLoadgen, results.RoleTarget} {
		r := res.Summary.Resources[role]
		for name, v := range map[string]*float64{"cpu_us_per_connect": r.CPUUsPerConnect, "cpu_us_per_reconnect": r.CPUUsPerReconnect} {
			if v == nil || !(*v > 0) || math.IsInf(*v, 0) {
				t.Errorf("%s %s = %s, want a positive figure (cpu_s %.2f, %d samples)", role, name, fmtPtr(v), r.CPUSeconds, r.Samples)
			}
		}
	}
	lg, tg := res.Summary.Resources[results.RoleLoadgen], res.Summary.Resources[results.RoleTarget]
	if lg.SyscallsPerAttempt == nil || *lg.SyscallsPerAttempt < 3 || lg.SyscallsByKind["connect"] < 0.9 || lg.SyscallsByKind["socket"] < 0.9 {
		t.Errorf("loadgen syscalls per attempt %s, by kind %v; want 3 or more, a socket and a connect each", fmtPtr(lg.SyscallsPerAttempt), lg.SyscallsByKind)
	}
	if tg.SyscallsPerAttempt == nil || tg.SyscallsByKind["accept4"] < 1 {
		t.Errorf("target syscalls per accept %s, by kind %v; want an accept4 each or more", fmtPtr(tg.SyscallsPerAttempt), tg.SyscallsByKind)
	}
}

func fmtPtr(v *float64) string {
	if v == nil {
		return "null"
	}
	return fmt.Sprint(*v)
}

// lookup follows a dotted path of object keys and array indexes.
func lookup(v any, path string) (any, bool) {
	for _, k := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[k]; !ok {
				return nil, false
			}
		case []any:
			i := 0
			for _, c := range k {
				if c < '0' || c > '9' {
					return nil, false
				}
				i = i*10 + int(c-'0')
			}
			if i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// TestBenchNoLeak: a bench of ten short runs in one process ends with its
// open files and goroutines within 5 of where the first run left them, and
// bench.json records both after every run. Each run has what holds
// descriptors and goroutines in this process: a restart, the fault proxy,
// two loadgen agents and a metrics server.
func TestBenchNoLeak(t *testing.T) {
	if testing.Short() {
		t.Skip("ten storms")
	}
	const runs = 10
	cfg := stormConfig(t, "at 1s restart abrupt down=300ms")
	cfg.Fleet.Clients = 50
	cfg.Duration = 2500 * time.Millisecond
	cfg.Proxy = true
	cfg.LoadgenProcs = 2
	cfg.MetricsAddr = "127.0.0.1:0"
	logs := &lockedBuffer{}
	cfg.Log = logs
	policies := make([]string, runs)
	for i := range policies {
		policies[i] = fmt.Sprintf("fixed:initial=%dms", 100+i)
	}
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	got, err := storm.Bench(ctx, storm.BenchConfig{Storm: cfg, Policies: policies, Out: out, Pause: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("Bench: %v\n%s", err, logs.String())
	}
	if len(got) != runs {
		t.Fatalf("%d runs, want %d", len(got), runs)
	}
	for i, r := range got {
		t.Logf("run %d: open files %d, goroutines %d", i+1, r.OpenFiles, r.Goroutines)
	}
	first, last := got[0], got[runs-1]
	if first.OpenFiles < 0 {
		t.Fatal("open files not counted")
	}
	if d := last.OpenFiles - first.OpenFiles; d > 5 || d < -5 {
		t.Errorf("open files after run %d: %d, after run 1: %d", runs, last.OpenFiles, first.OpenFiles)
	}
	if d := last.Goroutines - first.Goroutines; d > 5 || d < -5 {
		t.Errorf("goroutines after run %d: %d, after run 1: %d", runs, last.Goroutines, first.Goroutines)
	}
	b, err := os.ReadFile(filepath.Join(out, storm.BenchFile))
	if err != nil {
		t.Fatal(err)
	}
	var idx struct {
		Runs []struct {
			OpenFiles  *int `json:"open_files"`
			Goroutines *int `json:"goroutines"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(b, &idx); err != nil {
		t.Fatal(err)
	}
	if len(idx.Runs) != runs {
		t.Fatalf("bench.json lists %d runs, want %d", len(idx.Runs), runs)
	}
	for i, r := range idx.Runs {
		if r.OpenFiles == nil || r.Goroutines == nil || *r.Goroutines <= 0 {
			t.Errorf("bench.json run %d: open_files %v, goroutines %v", i+1, r.OpenFiles, r.Goroutines)
		}
	}
}
