// Command calibrate checks the simulator against real sockets (run by lab/calibrate.sh): for each fleet size and policy it runs the
// real storm (`stampede run`) and the same storm simulated (`stampede
// simulate`) with the same parameters, and prints R50, R90, R99, herd peak,
// wasted attempts per client and ListenOverflows side by side with the
// simulator's relative error, and whether the policies rank the same on
// each figure in both; beside them, unranked, how attempts failed
// (handshake timeouts, SYN timeouts) and the orphaned accepts.
//
// The storm is the bench's: backlog 128, 2,000 accepts/s, TCP_SYNCNT 2, a
// 5 s upgrade timeout, an abrupt restart with down=2s once the fleet is
// connected (ramp 90 % of the accept rate; --accept-rate is the group's,
// shared by its processes). Keepalive is off in the real runs
// (--ping-interval -1s): the model has no pings, and on a loaded 2-core
// machine a starved target misses them and its clients drop as
// ping_timeout, a failure of the machine rather than of the herd.
//
// The real runs must measure the server, not the loadgen machine: the
// fleet gets one loopback source address per -per-source clients
// (--source-ips). With run's own sizing (12,700 clients per address, 90 %
// of the ephemeral ports connect() takes first) a 50,000-client herd spent
// 75 % of both cores in the kernel's port search (__inet_hash_connect,
// __inet_check_established: sockets of handshake timeouts linger in
// FIN_WAIT1 and hold their ports), and the fleet stalled at 23,000 of
// 50,000; a port search is an artefact of one machine carrying the whole
// fleet, which no fleet of devices has. Each real run's line says how busy
// the machine was: its CPU over the run (/proc/stat) and the run's own
// processes' CPU in the herd window (resources.csv).
//
// The simulator gets the real run's layout (target processes), restart
// timing (stop and start times from its event, and the close rate: how fast
// the stopping processes closed their connections, from the timeline's
// disconnects) and the rate at which its loadgens started attempts (the
// fastest 100 ms of its timeline, -issue-rate to override), each read from
// that run's own summary.json and timeline.csv, so a machine that starts
// faster or slower is modelled as it ran: inputs, not the figures compared.
//
// -from DIR,... simulates real runs already made instead, of any command
// and size (fromRuns, simArgs), each on its own inputs: its command's
// flags, its layout, restart timing and issue rate as above (the model's
// close rate), the cores it had (--cores, the machine's less the share
// other processes took) and the CPU a first connect cost each end on that
// machine (--cpu-per-connect, summary.json resources.loadgen and
// resources.target cpu_us_per_connect, measured in the ramp before the
// event). Each run's line gives what its herd cost (measureHerd); with
// -herd-from RUN every simulation is given RUN's herd costs in place of
// its own first connects' (a herd's connects cost more than a ramp's),
// and with -write-calibration FILE those costs (and RUN's ping's) are
// written into the product's calibration file, each figure with RUN's
// command, day and machine (-machine KIND): calibration/calibration.json
// is what the simulator's defaults read (writeCalibration).
//
// Every run is printed with its command line. A real folder that holds a
// summary.json is reused with -reuse, so the table can be printed again
// without the heavy runs.
package main

import (
	"encoding/csv"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/stampede-dev/stampede/sim"
	"github.com/stampede-dev/stampede/spec"
)

// policies are the bench's policies that the calibration compares.
var policies = []struct{ name, spec string }{
	{"fixed", "fixed:initial=1s"},
	{"exp", "exp:initial=1s,multiplier=2,max=60s"},
	{"exp-jitter", "exp:initial=1s,multiplier=2,max=60s,jitter=0.5,spread=100ms-500ms"},
}

// figure is one compared figure of a run.
type figure struct {
	name string
	get  func(s *summary) *float64
}

var figures = []figure{
	{"R50 s", func(s *summary) *float64 { return s.rec().R50 }},
	{"R90 s", func(s *summary) *float64 { return s.rec().R90 }},
	{"R99 s", func(s *summary) *float64 { return s.rec().R99 }},
	{"herd peak/100ms", func(s *summary) *float64 { return s.rec().Peak }},
	{"wasted/client", func(s *summary) *float64 { return s.rec().Wasted }},
	{"ListenOverflows", func(s *summary) *float64 { v := s.Kernel.ListenOverflows; return &v }},
}

// extras are figures printed beside the compared ones, not ranked: how
// the attempts failed. Orphans are the connections the target accepted
// beyond the fleet's successes (accepted after their clients gave up).
var extras = []figure{
	{"handshake_timeout", func(s *summary) *float64 { v := s.Connect.Failures["handshake_timeout"]; return &v }},
	{"SYN timeout", func(s *summary) *float64 { v := s.Connect.Failures["timeout"]; return &v }},
	{"orphans", func(s *summary) *float64 { v := s.Kernel.PassiveOpens - s.Connect.Successes; return &v }},
}

// summary is what calibrate reads of summary.json.
type summary struct {
	DurationS float64    `json:"duration_s"`
	Events    []event    `json:"events"`
	Recovery  []recovery `json:"recovery"`
	Connect   struct {
		Successes float64            `json:"successes"`
		Failures  map[string]float64 `json:"failures"`
	} `json:"connect"`
	Kernel struct {
		ListenOverflows float64 `json:"ListenOverflows"`
		PassiveOpens    float64 `json:"PassiveOpens"`
	} `json:"kernel"`
	// Spec is the run's effective config (never config's flag spelling).
	Spec *spec.Run `json:"spec"`
}

// targetProcs returns the run's target processes, from its spec; 0 when
// summary.json has no spec or no server.
func (s *summary) targetProcs() int {
	if s.Spec == nil || s.Spec.Server == nil {
		return 0
	}
	return s.Spec.Server.Procs
}

// event is what calibrate reads of a summary.json event.
type event struct {
	StartS float64 `json:"start_s"`
	EndS   float64 `json:"end_s"`
	ReadyS float64 `json:"ready_s"`
	// NeverReady: the target was not ready again by the run's end.
	NeverReady bool `json:"never_ready"`
}

// recovery is what calibrate reads of a summary.json recovery.
type recovery struct {
	ConnectedBefore int      `json:"connected_before"`
	Recovered       int      `json:"recovered"`
	R100            *float64 `json:"r100_s"`
	R50             *float64 `json:"r50_s"`
	R90             *float64 `json:"r90_s"`
	R99             *float64 `json:"r99_s"`
	Peak            *float64 `json:"herd_peak_per_100ms"`
	Wasted          *float64 `json:"wasted_attempts_per_client"`
}

func (s *summary) rec() struct{ R50, R90, R99, Peak, Wasted *float64 } {
	if len(s.Recovery) == 0 {
		return struct{ R50, R90, R99, Peak, Wasted *float64 }{}
	}
	r := s.Recovery[0]
	return struct{ R50, R90, R99, Peak, Wasted *float64 }{r.R50, r.R90, r.R99, r.Peak, r.Wasted}
}

func main() {
	exe := flag.String("exe", "stampede", "stampede `binary`")
	out := flag.String("out", "calibrate-results", "folder `DIR` of the runs' results folders")
	sizes := flag.String("clients", "10000,50000", "fleet sizes `LIST`")
	seed := flag.Uint64("seed", 1, "seed `S` of every run")
	reuse := flag.Bool("reuse", false, "reuse a real run's folder that already holds a summary.json")
	issue := flag.Float64("issue-rate", 0, "simulator: attempts per second `R` the loadgen machine starts; 0: each real run's own (issueRate)")
	perSource := flag.Int("per-source", 2500, "real runs: clients `N` per loopback source address")
	only := flag.String("policies", "", "policies `LIST` to run (names, e.g. exp-jitter); empty: all")
	from := flag.String("from", "", "real run folders `LIST` (any command's) to simulate on their own inputs instead of running the bench's storms")
	netdev := flag.Int("netdev-backlog", 0, "with -from: the machine's net.core.netdev_max_backlog `N` during those runs (0: the model's default)")
	law := flag.Bool("law", false, "with -from: give every simulation the model's own cost law (its defaults, grown to each run's fleet) in place of each run's first connects' costs")
	lawCosts := flag.String("law-costs", "", "with -from: like -law, but the cost law `SPEC` (the --cpu-costs line a -from fit prints, e.g. one fitted on this boot's runs at other sizes) in place of the model's own")
	herdFrom := flag.String("herd-from", "", "with -from: give every simulation the herd's CPU costs of the real run in `DIR` (Ready to 90 % back) in place of each run's first connects'")
	writeCal := flag.String("write-calibration", "", "with -herd-from: write its herd's CPU costs (and its ping's) into the calibration `FILE` (calibration/calibration.json), each with its command, day and machine")
	machine := flag.String("machine", "", "with -write-calibration: what the machine the runs were made on is, `KIND` (\"VM, 24 GiB\")")
	flag.Parse()
	if *herdFrom != "" && *from == "" {
		fail(fmt.Errorf("-herd-from %s: needs -from, the runs to simulate", *herdFrom))
	}
	if *writeCal != "" && *herdFrom == "" {
		fail(fmt.Errorf("-write-calibration %s: needs -herd-from, the run whose herd to write", *writeCal))
	}
	lawSpec := ""
	if *law {
		lawSpec = modelLaw
	}
	if *lawCosts != "" {
		if _, err := sim.ParseCPUCosts(*lawCosts); err != nil {
			fail(fmt.Errorf("-law-costs: %w", err))
		}
		if *law || *herdFrom != "" || *from == "" {
			fail(fmt.Errorf("-law-costs %s: needs -from, and neither -law nor -herd-from", *lawCosts))
		}
		lawSpec = *lawCosts
	}
	if *from != "" {
		fromRuns(*exe, strings.Split(*from, ","), *netdev, *reuse, *herdFrom, lawSpec)
		if err := writeCalibration(*writeCal, *herdFrom, *machine); err != nil {
			fail(err)
		}
		return
	}
	pols := policies[:0:0]
	for _, p := range policies {
		if *only == "" || strings.Contains(","+*only+",", ","+p.name+",") {
			pols = append(pols, p)
		}
	}
	if len(pols) == 0 {
		fail(fmt.Errorf("-policies %q: none of fixed, exp, exp-jitter", *only))
	}
	if *perSource <= 0 {
		fail(fmt.Errorf("-per-source must be positive, got %d", *perSource))
	}
	var ns []int
	for _, w := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(w))
		if err != nil || n <= 0 {
			fail(fmt.Errorf("-clients %q: want a list of positive integers", *sizes))
		}
		ns = append(ns, n)
	}
	type pair struct{ real, sim *summary }
	results := map[string]pair{}
	for _, n := range ns {
		at, dur := storm(n)
		for _, p := range pols {
			common := []string{"-q", "--clients", fmt.Sprint(n), "--backlog", "128", "--accept-rate", "2000",
				"--syn-retries", "2", "--handshake-timeout", "5s", "--seed", fmt.Sprint(*seed), "--policy", p.spec,
				"--chaos", fmt.Sprintf("at %s restart abrupt down=2s", at), "--duration", dur.String()}
			realDir := filepath.Join(*out, fmt.Sprintf("real-%d-%s", n, p.name))
			sources := fmt.Sprintf("127.0.0.2-%s", loopback((n+*perSource-1) / *perSource))
			if _, err := os.Stat(filepath.Join(realDir, "summary.json")); err != nil || !*reuse {
				var busy machineCPU
				busy.start()
				run(*exe, append(append([]string{"run", "--ping-interval", "-1s", "--source-ips", sources}, common...), "--out", realDir))
				busy.stop()
				fmt.Fprintf(os.Stderr, "%s: machine CPU busy %s\n", realDir, busy.String())
			}
			real := load(realDir)
			stop, start := -1.0, -1.0 // the real restart's timing
			if len(real.Events) > 0 {
				e := real.Events[0]
				stop, start = max(0.001, e.EndS-e.StartS-2), max(0.001, e.ReadyS-e.EndS)
			}
			procs := real.targetProcs()
			closeRate := closeRate(realDir, real, procs)
			issue := *issue
			if issue == 0 {
				issue = issueRate(realDir)
			}
			fmt.Fprintf(os.Stderr, "%s: %s\n", realDir, herdCPU(realDir, real))
			simDir := filepath.Join(*out, fmt.Sprintf("sim-%d-%s", n, p.name))
			run(*exe, append(append([]string{"simulate", "--issue-rate", strconv.FormatFloat(issue, 'f', 0, 64),
				"--procs", fmt.Sprint(procs), "--close-rate", strconv.FormatFloat(closeRate, 'f', 0, 64),
				"--stop-time", secs(stop), "--start-time", secs(start)}, common...), "--out", simDir))
			results[fmt.Sprint(n, p.name)] = pair{real, load(simDir)}
		}
	}

	fmt.Println()
	fmt.Println("| clients | policy | figure | real | simulated | error |")
	fmt.Println("| --- | --- | --- | --- | --- | --- |")
	for _, n := range ns {
		for _, p := range pols {
			r := results[fmt.Sprint(n, p.name)]
			for _, f := range append(figures[:len(figures):len(figures)], extras...) {
				rv, sv := f.get(r.real), f.get(r.sim)
				fmt.Printf("| %d | %s | %s | %s | %s | %s |\n", n, p.name, f.name, val(rv), val(sv), relErr(rv, sv))
			}
		}
	}
	fmt.Println()
	fmt.Println("Ordering of the policies, lowest first (never = null, last):")
	fmt.Println()
	fmt.Println("| clients | figure | real | simulated | same |")
	ranked := true
	fmt.Println("| --- | --- | --- | --- | --- |")
	for _, n := range ns {
		for _, f := range figures {
			order := func(real bool) string {
				type kv struct {
					name string
					v    float64
				}
				var list []kv
				for _, p := range pols {
					s := results[fmt.Sprint(n, p.name)].sim
					if real {
						s = results[fmt.Sprint(n, p.name)].real
					}
					v := math.Inf(1)
					if x := f.get(s); x != nil {
						v = *x
					}
					list = append(list, kv{p.name, v})
				}
				sort.SliceStable(list, func(i, j int) bool { return list[i].v < list[j].v })
				var names []string
				for i, e := range list {
					sep := " < "
					if i > 0 && e.v == list[i-1].v {
						sep = " = "
					}
					if i > 0 {
						names = append(names, sep)
					}
					names = append(names, e.name)
				}
				return strings.Join(names, "")
			}
			ro, so := order(true), order(false)
			same := "yes"
			if ro != so {
				same, ranked = "no", false
			}
			fmt.Printf("| %d | %s | %s | %s | %s |\n", n, f.name, ro, so, same)
		}
	}

	// The calibration criterion: the jittered policy's R90, R99 and herd peak
	// within 15 % of the real runs, and the same ranking on every figure.
	fmt.Println()
	for _, n := range ns {
		r, ok := results[fmt.Sprint(n, "exp-jitter")]
		if !ok {
			continue
		}
		var parts []string
		for _, f := range figures[1:4] { // R90, R99, herd peak
			rv, sv := f.get(r.real), f.get(r.sim)
			parts = append(parts, fmt.Sprintf("%s %s (%s)", f.name, yesNo(within15(rv, sv)), relErr(rv, sv)))
		}
		fmt.Printf("criterion, %d clients, exp-jitter within 15 %%: %s\n", n, strings.Join(parts, ", "))
	}
	if len(pols) > 1 {
		fmt.Printf("criterion, the same ranking of the policies on every figure: %s\n", yesNo(ranked))
	}
}

// within15 says whether the simulated figure sv is within 15 % of the
// real rv: the calibration criterion.
func within15(rv, sv *float64) bool {
	return rv != nil && sv != nil && *rv != 0 && math.Abs(*sv-*rv) <= 0.15*math.Abs(*rv)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// storm returns the chaos instant and the run's length for n clients: the
// bench's 8 s and 45 s at 10,000; for more, the event once the ramp (1,800
// first connects a second) is done, and 240 s in all at 50,000.
func storm(n int) (at, dur time.Duration) {
	if n <= 10000 {
		return 8 * time.Second, 45 * time.Second
	}
	at = time.Duration(n/1800+5) * time.Second
	return at, at + 208*time.Second
}

// loopback returns the i-th loopback source address of run's numbering
// (storm.LoopbackSources: 127.0.0.2 is the first).
func loopback(i int) string {
	i++
	return fmt.Sprintf("127.0.%d.%d", i>>8, i&0xff)
}

// closeRate returns the connections per second one target process of the
// real run closed at its restart, the simulator's --close-rate: the model
// spreads a process's closes evenly over conns/rate from Start, so 90 % of
// them are done at 0.9·conns/rate; the real run's 90 % is read from its
// timeline's disconnects. A run without the figures gives the model's
// default (0).
func closeRate(dir string, s *summary, procs int) float64 {
	if len(s.Events) == 0 || len(s.Recovery) == 0 || procs <= 0 {
		return 0
	}
	before := s.Recovery[0].ConnectedBefore
	rows := readCSV(filepath.Join(dir, "timeline.csv"))
	if len(rows) < 2 {
		return 0
	}
	col := index(rows[0], "disconnects")
	start := s.Events[0].StartS
	done := 0
	for _, r := range rows[1:] {
		t, _ := strconv.ParseFloat(r[0], 64)
		if t+0.1 <= start {
			continue
		}
		d, _ := strconv.Atoi(r[col])
		if done += d; 10*done >= 9*before {
			t90 := max(t+0.1-start, 0.1) // the end of the bucket
			return 0.9 * float64(before) / float64(procs) / t90
		}
	}
	return 0
}

// issueRate returns the attempts per second the real run's loadgens were
// seen to start, the simulator's --issue-rate: the most attempts its
// timeline has in one bucket, over the bucket's width. The real fleet asks
// for more than its machine starts only in a few buckets (the lockstep
// fleets' waves, the jittered fleet's refused retries in the outage), so
// the fastest bucket is the machine's rate as that run found it: a slower
// or busier machine gives a lower one. A lockstep fleet's herd peak may be
// that bucket itself, and then the model's is bounded by it. A run without
// a timeline gives 40,000 a second, what the bench machine started in the
// first calibration runs (4 source addresses; lab/records/simulator.md).
func issueRate(dir string) float64 {
	const fallback = 40000
	rows := readCSV(filepath.Join(dir, "timeline.csv"))
	if len(rows) < 3 {
		return fallback
	}
	col := index(rows[0], "attempts")
	t0, _ := strconv.ParseFloat(rows[1][0], 64)
	t1, _ := strconv.ParseFloat(rows[2][0], 64)
	width := t1 - t0
	if width <= 0 {
		return fallback
	}
	most := 0
	for _, r := range rows[1:] {
		if n, _ := strconv.Atoi(r[col]); n > most {
			most = n
		}
	}
	if most == 0 {
		return fallback
	}
	return math.Round(float64(most) / width)
}

// herdCPU says how much CPU the real run's own processes (target, loadgen,
// coordinator) used in the herd window, from Ready to the last return (or
// the run's end), as a share of the machine's cores: near 100 % the run
// measured the machine, not the server.
func herdCPU(dir string, s *summary) string {
	if len(s.Events) == 0 || len(s.Recovery) == 0 {
		return "no event"
	}
	from := s.Events[0].ReadyS
	to := s.DurationS
	if r := s.Recovery[0].R100; r != nil {
		to = from + *r
	}
	rows := readCSV(filepath.Join(dir, "resources.csv"))
	if len(rows) < 2 {
		return "no resources.csv"
	}
	tc, rc, cc := index(rows[0], "t_s"), index(rows[0], "role"), index(rows[0], "cpu_s")
	first, last := map[string]float64{}, map[string]float64{}
	var t0, t1, tp, busiest float64
	var prev float64 // CPU of all roles at the previous sample time tp
	sum, at := 0.0, -1.0
	flush := func() { // one sample time's CPU, summed over the roles, against the previous
		if at >= 0 && tp > 0 && at > tp {
			busiest = max(busiest, (sum-prev)/(at-tp))
		}
		if at >= 0 {
			prev, tp = sum, at
		}
	}
	for _, r := range rows[1:] {
		t, _ := strconv.ParseFloat(r[tc], 64)
		cpu, _ := strconv.ParseFloat(r[cc], 64)
		if t < from-0.5 || t > to+0.5 {
			continue
		}
		if len(first) == 0 {
			t0 = t
		}
		if _, ok := first[r[rc]]; !ok {
			first[r[rc]] = cpu
		}
		last[r[rc]], t1 = cpu, t
		if math.Abs(t-at) > 0.05 { // a new sample time (the roles are sampled together)
			flush()
			at = t
			sum = 0
			for _, v := range last {
				sum += v
			}
			continue
		}
		sum = 0
		for _, v := range last {
			sum += v
		}
	}
	flush()
	if t1 <= t0 {
		return "herd window too short to sample"
	}
	var used float64
	var parts []string
	for _, role := range []string{"target", "loadgen", "coordinator"} {
		d := last[role] - first[role]
		used += d
		parts = append(parts, fmt.Sprintf("%s %.1f s", role, d))
	}
	ncpu := float64(runtime.NumCPU())
	return fmt.Sprintf("herd window %.1f-%.1f s: run's CPU %.0f %% of %d cores, busiest second %.0f %% (%s)",
		t0, t1, 100*used/(t1-t0)/ncpu, runtime.NumCPU(), 100*busiest/ncpu, strings.Join(parts, ", "))
}

func readCSV(path string) [][]string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	rows, _ := csv.NewReader(f).ReadAll()
	return rows
}

// index returns the index of the column name in header; a table without
// it ends the program.
func index(header []string, name string) int {
	i := column(header, name)
	if i < 0 {
		fail(fmt.Errorf("no column %q", name))
	}
	return i
}

// machineCPU samples the whole machine's CPU (/proc/stat) while a real run
// goes: other work on a shared machine counts too.
type machineCPU struct {
	done  chan struct{}
	wg    sync.WaitGroup
	busy  []float64 // share busy of each 1 s sample
	load1 string
}

func (m *machineCPU) start() {
	m.done = make(chan struct{})
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		pb, pt, ok := procStat()
		for {
			select {
			case <-m.done:
				return
			case <-tick.C:
			}
			b, t, ok2 := procStat()
			if ok && ok2 && t > pt {
				m.busy = append(m.busy, (b-pb)/(t-pt))
			}
			pb, pt, ok = b, t, ok2
		}
	}()
}

func (m *machineCPU) stop() {
	close(m.done)
	m.wg.Wait()
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		m.load1 = strings.Fields(string(b))[0]
	}
}

func (m *machineCPU) String() string {
	if len(m.busy) == 0 {
		return "not sampled"
	}
	var sum float64
	sat := 0
	for _, b := range m.busy {
		sum += b
		if b >= 0.95 {
			sat++
		}
	}
	return fmt.Sprintf("mean %.0f %%, %d of %d s at 95 %% or more; load average %s at the end",
		100*sum/float64(len(m.busy)), sat, len(m.busy), m.load1)
}

// procStat returns the machine's busy and total jiffies (/proc/stat "cpu").
func procStat() (busy, total float64, ok bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		return 0, 0, false
	}
	for i, v := range f[1:] {
		x, _ := strconv.ParseFloat(v, 64)
		if i >= 8 { // guest time is already in user
			break
		}
		total += x
		if i != 3 && i != 4 { // idle, iowait
			busy += x
		}
	}
	return busy, total, true
}

func secs(s float64) string {
	if s < 0 {
		return "0s"
	}
	return strconv.FormatFloat(s, 'f', 3, 64) + "s"
}

func val(v *float64) string {
	if v == nil {
		return "never"
	}
	if *v >= 1000 {
		return strconv.FormatFloat(*v, 'f', 0, 64)
	}
	return strconv.FormatFloat(*v, 'f', 2, 64)
}

func relErr(real, sim *float64) string {
	switch {
	case real == nil && sim == nil:
		return "both never"
	case real == nil || sim == nil:
		return "-"
	case *real == 0 && *sim == 0:
		return "0 %"
	case *real == 0:
		return "-"
	}
	return fmt.Sprintf("%+.0f %%", 100*(*sim-*real) / *real)
}

func run(exe string, args []string) {
	fmt.Fprintf(os.Stderr, "%s $ %s %s\n", time.Now().UTC().Format("15:04:05"), exe, quote(args))
	cmd := exec.Command(exe, args...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 { // 1: an SLO failed, figures written
			fail(fmt.Errorf("%s %s: %w", exe, args[0], err))
		}
	}
}

func quote(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if strings.ContainsAny(a, " ;'=,") {
			a = "'" + a + "'"
		}
		q[i] = a
	}
	return strings.Join(q, " ")
}

func load(dir string) *summary {
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		fail(err)
	}
	var s summary
	if err := json.Unmarshal(b, &s); err != nil {
		fail(fmt.Errorf("%s: %w", dir, err))
	}
	return &s
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "calibrate:", err)
	os.Exit(1)
}
