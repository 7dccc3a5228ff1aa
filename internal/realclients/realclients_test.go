package realclients

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/loadgen"
	"github.com/stampede-dev/stampede/spec"
)

// libCase is one comparison: a library's fleet in Node and stampede's
// fleet with its preset, each against its own front, dropped together.
type libCase struct {
	lib     string        // fleet.js's name for the library, and the front's protocol
	preset  string        // the stampede policy that reproduces it
	n       int           // clients in each fleet
	procs   int           // Node processes the library's clients are spread over
	settle  time.Duration // connected this long before the drop
	window  time.Duration // attempts recorded this long after it
	from    int           // first retry index compared; 0 means 1
	retries int           // last retry index compared
	limit   int           // retries after which the client gives up; 0 = never
	// perProcess: the library draws once per process; its per-process
	// draws are compared as distributions (two-sample Kolmogorov-Smirnov).
	perProcess bool
}

// cases: the libraries whose comparison holds. Windows are short: a few
// retry indices each. graphql-ws gives up at its first failed attempt, so
// its giving up falls inside one; nats's ten attempts take 20 s.
// socket.io's jitter puts exactly 10 % of the clients in each band, so
// from its second retry on, p10, p50 and p90 fall in the gaps between
// bands (100 ms and more wide) and jump from one sample to the next: its
// first retry, whose gaps are 50 ms, is compared. nats's first retry is
// at once by the rule; the library's arrives 30-90 ms after the drop on
// this machine, its own overhead, so nats is compared from its second.
// phoenix, centrifuge and mqttjs run with the same machinery (fleet.js
// and the front play their protocols) but are not compared yet: on this
// machine the Node side's first retries arrived 50-150 ms later than
// their rule (docs/clients.md).
var cases = []libCase{
	{lib: "socketio", preset: "socketio", n: 400, procs: 4, settle: time.Second, window: 4 * time.Second, retries: 1},
	{lib: "graphql-ws", preset: "graphql-ws", n: 400, procs: 4, settle: time.Second, window: 5 * time.Second, retries: 1, limit: 1},
	{lib: "reconnecting-websocket", preset: "reconnecting-websocket:clientsPerProcess=4", n: 200, procs: 50, settle: 6 * time.Second, window: 13 * time.Second, retries: 2, perProcess: true},
	{lib: "stompjs", preset: "stompjs", n: 200, procs: 4, settle: time.Second, window: 11 * time.Second, retries: 2},
	{lib: "nats", preset: "nats", n: 200, procs: 4, settle: 3 * time.Second, window: 21 * time.Second, from: 2, retries: 4, limit: 10},
}

// running bounds the cases run at once: the machine's cores timing every
// fleet at once would measure each other.
var running = make(chan struct{}, 2)

// TestRealLibraries runs each case's two fleets at once and compares, per
// retry index, when the retries arrived (each from the client's previous
// attempt, see at): p10, p50 and p90 within 10 % or 50 ms, whichever is
// larger, and the same number of clients that gave up.
func TestRealLibraries(t *testing.T) {
	needNode(t)
	for _, c := range cases {
		t.Run(c.lib, func(t *testing.T) {
			// Fifty Node processes starting would load the machine under
			// the others' timings: that case runs first, alone.
			if !c.perProcess {
				t.Parallel()
			}
			running <- struct{}{}
			defer func() { <-running }()
			var lib, own map[int][]time.Duration
			var wg sync.WaitGroup
			wg.Add(2)
			go func() { defer wg.Done(); lib = c.measure(t, c.nodeFleet) }()
			go func() { defer wg.Done(); own = c.measure(t, c.stampedeFleet) }()
			wg.Wait()
			if t.Failed() {
				return
			}
			c.compare(t, lib, own)
		})
	}
}

// measure runs one fleet against a front of its own: all connected, up
// for settle, dropped, then window of attempts.
func (c libCase) measure(t *testing.T, start func(t *testing.T, url string) (stop func())) map[int][]time.Duration {
	f := newFront(t, c.lib)
	stop := start(t, f.url())
	defer stop()
	deadline := time.Now().Add(30 * time.Second)
	for f.heldCount() < c.n {
		if time.Now().After(deadline) {
			t.Errorf("%d of %d clients connected in 30s", f.heldCount(), c.n)
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(c.settle)
	f.drop()
	time.Sleep(c.window)
	return f.retries()
}

// nodeFleet starts the library's clients in c.procs Node processes.
func (c libCase) nodeFleet(t *testing.T, url string) func() {
	var cmds []*exec.Cmd
	per := c.n / c.procs
	for p := range c.procs {
		cmd := exec.Command("node", "fleet.js", c.lib, url, fmt.Sprint(p*per), fmt.Sprint(per))
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	return func() {
		for _, cmd := range cmds {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}
}

// stampedeFleet runs stampede's clients with the case's preset.
func (c libCase) stampedeFleet(t *testing.T, url string) func() {
	p, err := backoff.Parse(c.preset)
	if err != nil {
		t.Fatal(err)
	}
	fl, err := loadgen.New(loadgen.Config{Client: spec.Client{URL: url + "/", Clients: c.n, Policy: p, Seed: 1}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := fl.Run(ctx); err != nil {
			t.Error(err)
		}
	}()
	return func() { cancel(); <-done }
}

// compare checks the two fleets' retries index by index.
func (c libCase) compare(t *testing.T, lib, own map[int][]time.Duration) {
	for k := max(c.from, 1); k <= c.retries; k++ {
		a, b := c.at(lib, k), c.at(own, k)
		if len(a) == 0 || len(b) == 0 {
			t.Errorf("retry %d: %d library and %d stampede clients made it", k, len(a), len(b))
			continue
		}
		qa, qb := quantiles(a), quantiles(b)
		t.Logf("retry %d (N=%d/%d): library p10/p50/p90 %v / %v / %v, preset %v / %v / %v",
			k, len(a), len(b), qa[0], qa[1], qa[2], qb[0], qb[1], qb[2])
		if len(a) != len(b) {
			t.Errorf("retry %d: %d library clients made it, %d stampede clients", k, len(a), len(b))
		}
		if c.perProcess {
			if d, crit := ks(a, b); d > crit {
				t.Errorf("retry %d: the per-process draws differ: KS D %.3f > %.3f", k, d, crit)
			}
			continue
		}
		for i, p := range []string{"p10", "p50", "p90"} {
			if tol := max(qa[i]/10, 50*time.Millisecond); (qa[i] - qb[i]).Abs() > tol {
				t.Errorf("retry %d %s: library %v, preset %v: more than %v apart", k, p, qa[i], qb[i], tol)
			}
		}
	}
	if c.limit > 0 {
		ga, gb := gaveUp(lib, c.limit), gaveUp(own, c.limit)
		t.Logf("gave up after %d retries: library %d, preset %d", c.limit, ga, gb)
		if ga != gb || ga == 0 {
			t.Errorf("gave up: library %d, preset %d clients", ga, gb)
		}
	}
}

// at returns, for every client that made its k-th retry, the time from its
// previous attempt (the drop, for the first retry) to that retry's
// arrival: the wait the rule chose, plus one attempt's own time. A wait
// counted from the drop would sum every earlier retry's scheduling delay
// (a busy Node event loop adds tens of ms to each); this way each index
// carries its own. With perProcess, one value per process: its first
// client's.
func (c libCase) at(r map[int][]time.Duration, k int) []time.Duration {
	var out []time.Duration
	per := c.n / c.procs
	for id, ats := range r {
		if len(ats) < k || c.perProcess && id%per != 0 {
			continue
		}
		slices.Sort(ats)
		prev := time.Duration(0)
		if k > 1 {
			prev = ats[k-2]
		}
		out = append(out, ats[k-1]-prev)
	}
	slices.Sort(out)
	return out
}

// gaveUp counts the clients that made exactly limit retries.
func gaveUp(r map[int][]time.Duration, limit int) int {
	n := 0
	for _, ats := range r {
		if len(ats) == limit {
			n++
		}
	}
	return n
}

// quantiles returns p10, p50 and p90 of sorted values (nearest rank).
func quantiles(v []time.Duration) [3]time.Duration {
	q := func(p float64) time.Duration { return v[min(len(v)-1, int(math.Ceil(p*float64(len(v))))-1)] }
	return [3]time.Duration{q(0.1), q(0.5), q(0.9)}
}

// ks returns the two-sample Kolmogorov-Smirnov statistic of sorted a and
// b and its critical value at a significance of 0.001.
func ks(a, b []time.Duration) (d, crit float64) {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		x := min(a[i], b[j])
		for i < len(a) && a[i] == x {
			i++
		}
		for j < len(b) && b[j] == x {
			j++
		}
		d = max(d, math.Abs(float64(i)/float64(len(a))-float64(j)/float64(len(b))))
	}
	n, m := float64(len(a)), float64(len(b))
	return d, 1.949 * math.Sqrt((n+m)/(n*m))
}

// needNode installs the pinned libraries (npm ci) once, or skips the test
// when Node is not here; with STAMPEDE_REQUIRE_SERVICES=1 (CI) it fails
// instead.
func needNode(t *testing.T) {
	fail := t.Skipf
	if os.Getenv("STAMPEDE_REQUIRE_SERVICES") == "1" {
		fail = t.Fatalf
	} else if load, ok := loadAverage(); ok && load > float64(runtime.NumCPU()) {
		// Timings of hundreds of Node clients mean little on a machine
		// already busier than its cores; CI runs it whatever the load.
		t.Skipf("realclients: the machine is busy (load %.1f on %d cores); the timing comparison needs a quiet one", load, runtime.NumCPU())
	}
	for _, bin := range []string{"node", "npm"} {
		if _, err := exec.LookPath(bin); err != nil {
			fail("realclients: %s is not installed (Node 20 and npm run the client libraries)", bin)
		}
	}
	installOnce.Do(func() {
		lock, err1 := os.Stat("package-lock.json")
		inst, err2 := os.Stat(filepath.Join("node_modules", ".package-lock.json"))
		if err1 == nil && err2 == nil && inst.ModTime().After(lock.ModTime()) {
			return
		}
		out, err := exec.Command("npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund").CombinedOutput()
		if err != nil {
			installErr = fmt.Errorf("npm ci: %v\n%s", err, out)
		}
	})
	if installErr != nil {
		fail("realclients: %v", installErr)
	}
}

// loadAverage returns the 1-minute load average, where Linux tells it.
func loadAverage() (float64, bool) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, false
	}
	var l float64
	_, err = fmt.Sscan(string(b), &l)
	return l, err == nil
}

var (
	installOnce sync.Once
	installErr  error
)
