// Command scale is the scale benchmark (run by lab/scale.sh):
// it drives the stampede binary and prints the figures the README states.
//
//  1. Hold and recover: `stampede run --clients 50000` with an abrupt
//     restart (down=2s) in the middle, sized automatically (several loadgen
//     worker processes, target processes and 127.x source addresses); it
//     prints connected_before, recovered, R50..R100, herd figures, kernel
//     counters and the peak RSS and open files of loadgen and target, from
//     summary.json.
//  2. Coordinator memory: the same restart at -clients and at twice as
//     many; the coordinator's peak RSS (summary.json
//     resources.coordinator) must grow by at most 20 %, since it holds
//     buckets, histograms and rooms, not clients (docs/agent.md), and no
//     agent may have sent a message over 1 MiB (agents[].max_message_bytes).
//  3. Loadgen memory: the marginal loadgen RSS per connected client,
//     (RSS at 50,000 - RSS at 10,000) / 40,000 over all loadgen processes,
//     from runs without chaos. RSS is summed over the worker processes at one
//     instant, 3 s after the whole fleet is connected, read from /proc (RSS,
//     PSS and anonymous memory), next to summary.json's peak_rss_bytes.
//
// Every run is printed with its exact command line, so a figure can be
// reproduced alone.
package main

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Defaults of the benchmark: a ramp the target group sustains, an event
// after the whole fleet is connected, and time to recover after it.
const (
	defaultPolicy = "exp:initial=1s,max=60s,jitter=0.5,spread=100ms-500ms"
	settle        = 3 * time.Second // wait after the fleet is whole before sampling memory
)

func main() {
	exe := flag.String("exe", "bin/stampede", "stampede `binary`")
	clients := flag.Int("clients", 50000, "fleet size `N` of the large runs")
	small := flag.Int("small", 10000, "fleet size `N` of the small memory run")
	ramp := flag.Float64("ramp", 5000, "first connects per second `R`")
	at := flag.Duration("at", 20*time.Second, "time `T` of the abrupt restart")
	duration := flag.Duration("duration", 45*time.Second, "length `D` of the restart run")
	out := flag.String("out", "", "results `DIR` (default: a new temporary folder)")
	only := flag.String("only", "all", "`PART` to run: all, restart, coordinator or memory")
	flag.Parse()
	if *out == "" {
		d, err := os.MkdirTemp("", "stampede-scale-")
		if err != nil {
			fatal(err)
		}
		*out = d
	}
	b := &bench{exe: *exe, out: *out, ramp: *ramp}
	ok := true
	if *only == "all" || *only == "restart" {
		_, pass := b.restart(*clients, *at, *duration)
		ok = pass && ok
	}
	if *only == "all" || *only == "coordinator" {
		// Twice the fleet takes longer to come back on 2 cores.
		ok = b.coordinator(*clients, *at, *duration+15*time.Second) && ok
	}
	if *only == "all" || *only == "memory" {
		ok = b.memory(*small, *clients) && ok
	}
	if !ok {
		os.Exit(1)
	}
}

type bench struct {
	exe  string
	out  string
	ramp float64
}

// restart runs the 50,000-client storm with an abrupt restart and checks
// that every client connected before the event came back.
func (b *bench) restart(clients int, at, duration time.Duration) (summary, bool) {
	// The event comes after the whole fleet has ramped up, 5 s at least,
	// and the run keeps its length after the event.
	if ramped := time.Duration(float64(clients)/b.ramp*float64(time.Second)) + 5*time.Second; ramped > at {
		duration += ramped - at
		at = ramped
	}
	dir := filepath.Join(b.out, fmt.Sprintf("restart-%d", clients))
	args := []string{"run", "--clients", strconv.Itoa(clients), "--ramp", fmt.Sprint(b.ramp), "--backlog", "4096",
		"--policy", defaultPolicy, "--chaos", fmt.Sprintf("at %s restart abrupt down=2s", at),
		"--duration", duration.String(), "--out", dir}
	fmt.Printf("== hold %d connections through an abrupt restart\n", clients)
	if _, err := b.run(args, clients, nil); err != nil {
		fmt.Printf("FAIL: %v\n", err)
		return summary{}, false
	}
	s, err := readSummary(dir)
	if err != nil {
		fmt.Printf("FAIL: %v\n", err)
		return summary{}, false
	}
	fmt.Printf("sizing: %s\n", s.str("config.sizing"))
	fmt.Printf("event: %s at %.2fs, ready at %.2fs (outage %.2fs)\n", s.str("events.0.spec"), s.num("events.0.start_s"),
		s.num("events.0.ready_s"), s.num("events.0.outage_s"))
	before, back := int(s.num("recovery.0.connected_before")), int(s.num("recovery.0.recovered"))
	fmt.Printf("connected_before %d  recovered %d\n", before, back)
	fmt.Printf("R50 %.2fs  R90 %.2fs  R99 %.2fs  R100 %.2fs (from ready)\n", s.num("recovery.0.r50_s"),
		s.num("recovery.0.r90_s"), s.num("recovery.0.r99_s"), s.num("recovery.0.r100_s"))
	fmt.Printf("herd peak %d per 100 ms, peak:mean %.1f, wasted attempts/client %.3f, outage attempts/client %.2f\n",
		int(s.num("recovery.0.herd_peak_per_100ms")), s.num("recovery.0.herd_peak_to_mean"),
		s.num("recovery.0.wasted_attempts_per_client"), s.num("recovery.0.outage_attempts_per_client"))
	fmt.Printf("connect: %d attempts, %d successes, failures %s\n", int(s.num("connect.attempts")),
		int(s.num("connect.successes")), nonZero(s.get("connect.failures")))
	fmt.Printf("kernel (host-wide): ListenOverflows %d, TCPSynRetrans %d\n", int(s.num("kernel.ListenOverflows")),
		int(s.num("kernel.TCPSynRetrans")))
	for _, role := range []string{"loadgen", "target", "coordinator"} {
		p := "resources." + role + "."
		fmt.Printf("%-7s peak RSS %.1f MiB, peak fds %d, CPU %.1fs, %d processes\n", role, s.num(p+"peak_rss_bytes")/(1<<20),
			int(s.num(p+"peak_fds")), s.num(p+"cpu_s"), int(s.num(p+"processes")))
	}
	idle := idleSample(dir, s.num("events.0.start_s"))
	for _, role := range []string{"loadgen", "target"} {
		p := "resources." + role + "."
		fmt.Printf("%-7s per connection: peak RSS %d B (of %d connections), idle RSS %s; kernel socket buffers %d B\n", role,
			int(s.num(p+"rss_per_conn_bytes")), int(s.num(p+"peak_conns")), idle[role], int(s.num(p+"socket_mem_per_conn_bytes")))
	}
	pass := before == clients && back == clients
	fmt.Printf("%s: recovered = connected_before = %d: %d/%d\n\n", verdict(pass), clients, back, before)
	return s, pass
}

// coordinator runs the restart at clients and at twice as many and
// compares the coordinator's peak RSS and the agents' largest messages.
func (b *bench) coordinator(clients int, at, duration time.Duration) bool {
	fmt.Printf("== coordinator memory, %d vs %d clients\n", clients, 2*clients)
	var rss [2]float64
	pass := true
	for i, n := range []int{clients, 2 * clients} {
		s, ok := b.restart(n, at, duration)
		if s.doc == nil {
			return false
		}
		pass = pass && ok
		rss[i] = s.num("resources.coordinator.peak_rss_bytes")
		for k := 0; ; k++ {
			p := fmt.Sprintf("agents.%d.", k)
			if s.get(p+"name") == nil {
				break
			}
			mb := int(s.num(p + "max_message_bytes"))
			fmt.Printf("  %-10s largest message %d bytes\n", s.str(p+"name"), mb)
			if mb > 1<<20 {
				fmt.Printf("FAIL: %s sent a message of %d bytes, over 1 MiB\n", s.str(p+"name"), mb)
				pass = false
			}
		}
	}
	growth := (rss[1] - rss[0]) / rss[0] * 100
	fmt.Printf("coordinator peak RSS: %.1f MiB at %d clients, %.1f MiB at %d (%+.1f %%)\n",
		rss[0]/(1<<20), clients, rss[1]/(1<<20), 2*clients, growth)
	ok := growth <= 20
	fmt.Printf("%s: the coordinator's peak RSS grows by at most 20 %% when the fleet doubles\n\n", verdict(ok))
	return pass && ok
}

// idleSample reads resources.csv and returns, per role, its RSS per
// connection at the last sample before the event (start_s, seconds): the
// fleet whole and idle, before the herd.
func idleSample(dir string, before float64) map[string]string {
	out := map[string]string{"loadgen": "-", "target": "-"}
	f, err := os.Open(filepath.Join(dir, "resources.csv"))
	if err != nil {
		return out
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil || len(rows) < 2 {
		return out
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	for _, r := range rows[1:] {
		at, _ := strconv.ParseFloat(r[col["t_s"]], 64)
		if at >= before {
			break
		}
		rss, _ := strconv.ParseFloat(r[col["rss_bytes"]], 64)
		conns, _ := strconv.ParseFloat(r[col["tcp_established"]], 64)
		if _, ok := out[r[col["role"]]]; ok && conns > 0 {
			out[r[col["role"]]] = fmt.Sprintf("%.0f B (%.1f MiB, %.0f connections, at %.1fs)", rss/conns, rss/(1<<20), conns, at)
		}
	}
	return out
}

// memory measures the loadgen's marginal RSS per connected client.
func (b *bench) memory(small, large int) bool {
	fmt.Printf("== loadgen memory per connected client, %d vs %d clients, no chaos\n", small, large)
	big, err := b.memRun(large, 0)
	if err != nil {
		fmt.Printf("FAIL: %v\n", err)
		return false
	}
	sameProcs, err := b.memRun(small, big.procs)
	if err != nil {
		fmt.Printf("FAIL: %v\n", err)
		return false
	}
	sized, err := b.memRun(small, 0)
	if err != nil {
		fmt.Printf("FAIL: %v\n", err)
		return false
	}
	n := float64(large - small)
	marg := func(a, b float64) float64 { return (a - b) / n }
	fmt.Printf("marginal bytes per client = (%d clients - %d clients) / %d:\n", large, small, large-small)
	fmt.Printf("  same %d processes in both runs:  RSS %.0f B   PSS %.0f B   anon %.0f B   summary peak_rss %.0f B\n",
		big.procs, marg(big.rss, sameProcs.rss), marg(big.pss, sameProcs.pss), marg(big.anon, sameProcs.anon),
		marg(big.peak, sameProcs.peak))
	fmt.Printf("  sized automatically (%d vs %d):  RSS %.0f B   PSS %.0f B   anon %.0f B   summary peak_rss %.0f B\n",
		big.procs, sized.procs, marg(big.rss, sized.rss), marg(big.pss, sized.pss), marg(big.anon, sized.anon),
		marg(big.peak, sized.peak))
	pass := marg(big.rss, sameProcs.rss) <= 1024
	fmt.Printf("%s: marginal loadgen RSS per connected client %.0f B <= 1024 B (same processes)\n",
		verdict(pass), marg(big.rss, sameProcs.rss))
	if m := marg(big.rss, sized.rss); m > 1024 {
		fmt.Printf("note: sized automatically it is %.0f B: the %d extra worker processes each add their baseline (the binary's text pages count in every process's RSS; PSS shares them)\n",
			m, big.procs-sized.procs)
	}
	fmt.Println()
	return pass
}

// memSample is the loadgen's memory with the whole fleet connected.
type memSample struct {
	procs          int
	rss, pss, anon float64 // summed over worker processes at one instant, bytes
	peak           float64 // summary.json resources.loadgen.peak_rss_bytes
}

// memRun runs a fleet without chaos and samples its workers' memory once it
// is whole and settled; procs 0 lets stampede size the run.
func (b *bench) memRun(clients, procs int) (memSample, error) {
	dir := filepath.Join(b.out, fmt.Sprintf("memory-%d-procs%d", clients, procs))
	dur := time.Duration(float64(clients)/b.ramp*float64(time.Second)) + 15*time.Second
	args := []string{"run", "--clients", strconv.Itoa(clients), "--ramp", fmt.Sprint(b.ramp), "--backlog", "4096",
		"--policy", defaultPolicy, "--duration", dur.Round(time.Second).String(), "--out", dir}
	if procs > 0 {
		args = append(args, "--loadgen-procs", strconv.Itoa(procs))
	}
	var m memSample
	sampled, err := b.run(args, clients, func(pid int) {
		pids := children(pid, "worker")
		m.procs = len(pids)
		for _, p := range pids {
			r := smapsRollup(p)
			m.rss += r["Rss"]
			m.pss += r["Pss"]
			m.anon += r["Anonymous"]
		}
	})
	if err != nil {
		return m, err
	}
	if !sampled || m.procs == 0 {
		return m, fmt.Errorf("%d clients never all connected while the run lasted (see the progress lines)", clients)
	}
	s, err := readSummary(dir)
	if err != nil {
		return m, err
	}
	m.peak = s.num("resources.loadgen.peak_rss_bytes")
	fmt.Printf("  %d clients, %d worker processes: RSS %.1f MiB, PSS %.1f MiB, anon %.1f MiB (at %s after all connected); summary peak_rss %.1f MiB\n",
		clients, m.procs, m.rss/(1<<20), m.pss/(1<<20), m.anon/(1<<20), settle, m.peak/(1<<20))
	return m, nil
}

// connectedRe matches a progress line's "connected N/M".
var connectedRe = regexp.MustCompile(`connected (\d+)/(\d+)`)

// run runs `stampede args...`, copying its output to stdout. When sample is
// set it is called once, settle after a progress line shows all clients
// connected, with the run's process ID; run reports whether it was called.
func (b *bench) run(args []string, clients int, sample func(pid int)) (sampled bool, err error) {
	fmt.Printf("$ %s %s\n", b.exe, shellQuote(args))
	cmd := exec.Command(b.exe, args...)
	cmd.Stdout = os.Stdout
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return false, err
	}
	if err := cmd.Start(); err != nil {
		return false, err
	}
	whole := make(chan struct{})
	lines := make(chan struct{})
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stderr)
		signalled := false
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(os.Stderr, line)
			if m := connectedRe.FindStringSubmatch(line); m != nil && !signalled && m[1] == strconv.Itoa(clients) {
				signalled = true
				close(whole)
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	if sample != nil {
		select {
		case <-whole:
			time.Sleep(settle)
			if cmd.ProcessState == nil {
				sample(cmd.Process.Pid)
				sampled = true
			}
		case <-lines:
		}
	}
	<-lines
	if err := cmd.Wait(); err != nil {
		return sampled, fmt.Errorf("stampede %s: %w", args[0], err)
	}
	return sampled, nil
}

// children returns the IDs of pid's child processes whose first argument
// is sub (e.g. "worker"), or whose program is stampede-sub.
func children(pid int, sub string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
		if err != nil {
			continue
		}
		// The command name is in parentheses and may hold spaces.
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(f) < 2 || f[1] != strconv.Itoa(pid) {
			continue
		}
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p))
		argv := strings.Split(string(cmdline), "\x00")
		// A loadgen agent is the lean stampede-worker binary, which
		// scale.sh builds beside stampede (without it, loadgen agents run
		// as `stampede agent`, like the target's, and are not told apart).
		if filepath.Base(argv[0]) == "stampede-"+sub {
			out = append(out, p)
		}
	}
	return out
}

// smapsRollup returns a process's /proc/PID/smaps_rollup fields in bytes.
func smapsRollup(pid int) map[string]float64 {
	out := map[string]float64{}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && f[2] == "kB" {
			v, _ := strconv.ParseFloat(f[1], 64)
			out[strings.TrimSuffix(f[0], ":")] = v * 1024
		}
	}
	return out
}

// summary is a decoded summary.json, read through dotted paths so this
// program depends only on the file's documented field names.
type summary struct{ doc any }

func readSummary(dir string) (summary, error) {
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		return summary{}, err
	}
	var s summary
	if err := json.Unmarshal(b, &s.doc); err != nil {
		return s, fmt.Errorf("%s/summary.json: %w", dir, err)
	}
	return s, nil
}

// get follows a dotted path of keys and array indexes; nil when absent.
func (s summary) get(path string) any {
	v := s.doc
	for _, k := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			v = x[k]
		case []any:
			i, err := strconv.Atoi(k)
			if err != nil || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

func (s summary) num(path string) float64 {
	f, _ := s.get(path).(float64)
	return f
}

func (s summary) str(path string) string {
	switch v := s.get(path).(type) {
	case string:
		return v
	case nil:
		return "-"
	default:
		b, _ := json.Marshal(v)
		return string(b)
	}
}

// nonZero renders the non-zero entries of a JSON object of counts.
func nonZero(v any) string {
	m, _ := v.(map[string]any)
	var parts []string
	for k, x := range m {
		if f, _ := x.(float64); f != 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", k, int(f)))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

func verdict(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}

// shellQuote renders args for a shell, quoting those with spaces or quotes.
func shellQuote(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if strings.ContainsAny(a, " '\"$;*") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		q[i] = a
	}
	return strings.Join(q, " ")
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "scale:", err)
	os.Exit(2)
}
