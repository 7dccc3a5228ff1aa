// Command calibrate checks the simulator against real sockets (issue 13,
// run by scripts/calibrate.sh): for each fleet size and policy it runs the
// real storm (`stampede run`) and the same storm simulated (`stampede
// simulate`) with the same parameters, and prints R50, R90, R99, herd peak,
// wasted attempts per client and ListenOverflows side by side with the
// simulator's relative error, and whether the policies rank the same on
// each figure in both.
//
// The storm is the bench's: backlog 128, 2,000 accepts/s, TCP_SYNCNT 2, a
// 5 s upgrade timeout, an abrupt restart with down=2s once the fleet is
// connected (ramp 90 % of the accept rate). Keepalive is off in the real
// runs (--ping-interval 0): the model has no pings, and on a loaded 2-core
// machine a starved target misses them and its clients drop as
// ping_timeout, a failure of the machine rather than of the herd. The
// simulator gets the real run's restart timing (stop and start times from
// its event) and the bench machine's rate of starting attempts
// (-issue-rate): inputs, not the figures compared.
//
// Every run is printed with its command line. A real folder that holds a
// summary.json is reused with -reuse, so the table can be printed again
// without the heavy runs.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
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

// summary is what calibrate reads of summary.json.
type summary struct {
	Events []struct {
		StartS float64 `json:"start_s"`
		EndS   float64 `json:"end_s"`
		ReadyS float64 `json:"ready_s"`
	} `json:"events"`
	Recovery []struct {
		R50    *float64 `json:"r50_s"`
		R90    *float64 `json:"r90_s"`
		R99    *float64 `json:"r99_s"`
		Peak   *float64 `json:"herd_peak_per_100ms"`
		Wasted *float64 `json:"wasted_attempts_per_client"`
	} `json:"recovery"`
	Kernel struct {
		ListenOverflows float64 `json:"ListenOverflows"`
	} `json:"kernel"`
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
	issue := flag.Float64("issue-rate", 40000, "simulator: attempts per second `R` the loadgen machine starts")
	flag.Parse()
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
		for _, p := range policies {
			common := []string{"-q", "--clients", fmt.Sprint(n), "--backlog", "128", "--accept-rate", "2000",
				"--syn-retries", "2", "--handshake-timeout", "5s", "--seed", fmt.Sprint(*seed), "--policy", p.spec,
				"--chaos", fmt.Sprintf("at %s restart abrupt down=2s", at), "--duration", dur.String()}
			realDir := filepath.Join(*out, fmt.Sprintf("real-%d-%s", n, p.name))
			if _, err := os.Stat(filepath.Join(realDir, "summary.json")); err != nil || !*reuse {
				run(*exe, append(append([]string{"run", "--ping-interval", "0"}, common...), "--out", realDir))
			}
			real := load(realDir)
			stop, start := -1.0, -1.0 // the real restart's timing
			if len(real.Events) > 0 {
				e := real.Events[0]
				stop, start = max(0.001, e.EndS-e.StartS-2), max(0.001, e.ReadyS-e.EndS)
			}
			simDir := filepath.Join(*out, fmt.Sprintf("sim-%d-%s", n, p.name))
			run(*exe, append(append([]string{"simulate", "--issue-rate", fmt.Sprint(*issue),
				"--stop-time", secs(stop), "--start-time", secs(start)}, common...), "--out", simDir))
			results[fmt.Sprint(n, p.name)] = pair{real, load(simDir)}
		}
	}

	fmt.Println()
	fmt.Println("| clients | policy | figure | real | simulated | error |")
	fmt.Println("| --- | --- | --- | --- | --- | --- |")
	for _, n := range ns {
		for _, p := range policies {
			r := results[fmt.Sprint(n, p.name)]
			for _, f := range figures {
				rv, sv := f.get(r.real), f.get(r.sim)
				fmt.Printf("| %d | %s | %s | %s | %s | %s |\n", n, p.name, f.name, val(rv), val(sv), relErr(rv, sv))
			}
		}
	}
	fmt.Println()
	fmt.Println("Ordering of the policies, lowest first (never = null, last):")
	fmt.Println()
	fmt.Println("| clients | figure | real | simulated | same |")
	fmt.Println("| --- | --- | --- | --- | --- |")
	for _, n := range ns {
		for _, f := range figures {
			order := func(real bool) string {
				type kv struct {
					name string
					v    float64
				}
				var list []kv
				for _, p := range policies {
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
				same = "no"
			}
			fmt.Printf("| %d | %s | %s | %s | %s |\n", n, f.name, ro, so, same)
		}
	}
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
