// Command memprobe measures what one idle WebSocket connection costs a
// target process: its RSS, Go heap and goroutines per connection, and the
// kernel's share (socket buffers from sock_diag, and the slab caches of
// /proc/slabinfo when it is readable), between no connections and N.
//
//	go run ./target/testdata/memprobe -clients 15000 [-profile heap.pprof]
//
// It starts the target (package target, default Config, ws://) in a
// process of its own (itself with -serve), which answers "sample" and
// "profile FILE" on its standard input. The clients are a loadgen fleet in
// this process (mode none: they connect, then only ping every 10 s), so
// the server's figures are its own. Each client sends one echo message
// first when -echo is set, so read buffers were used once.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/loadgen"
	"github.com/stampede-dev/stampede/spec"
	"github.com/stampede-dev/stampede/target"
)

// sample is the server process's memory at one moment.
type sample struct {
	RSS        int64  `json:"rss"`          // VmRSS, bytes
	RSSAfterGC int64  `json:"rss_after_gc"` // VmRSS after debug.FreeOSMemory
	HeapInuse  uint64 `json:"heap_inuse"`   // Go heap spans in use after a GC
	HeapAlloc  uint64 `json:"heap_alloc"`   // live heap objects after a GC
	StackInuse uint64 `json:"stack_inuse"`  // goroutine stacks
	OtherSys   uint64 `json:"other_sys"`    // runtime structures: pollDescs, spans, GC metadata
	Goroutines int    `json:"goroutines"`
	Conns      int64  `json:"conns"`
}

func main() {
	serve := flag.Bool("serve", false, "run the target and answer sample/profile lines on stdin")
	clients := flag.Int("clients", 15000, "idle connections to open")
	profile := flag.String("profile", "", "write the server's heap profile with the connections open to `FILE`")
	settle := flag.Duration("settle", 3*time.Second, "wait after all connected before sampling")
	flag.Parse()
	var err error
	if *serve {
		err = runServer()
	} else {
		err = run(*clients, *profile, *settle)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "memprobe:", err)
		os.Exit(1)
	}
}

func runServer() error {
	runtime.MemProfileRate = 512 // a profile that sees the small per-connection records
	s, err := target.Start(target.Config{Server: spec.Server{Backlog: 4096}})
	if err != nil {
		return err
	}
	<-s.Ready()
	fmt.Println(s.URL())
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 1 && f[0] == "sample":
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			out := sample{RSS: rss(), HeapInuse: ms.HeapInuse, HeapAlloc: ms.HeapAlloc, StackInuse: ms.StackInuse,
				OtherSys:   ms.OtherSys + ms.MSpanInuse + ms.MCacheInuse + ms.GCSys,
				Goroutines: runtime.NumGoroutine(), Conns: s.Stats().Conns}
			debug.FreeOSMemory()
			out.RSSAfterGC = rss()
			json.NewEncoder(os.Stdout).Encode(out)
		case len(f) == 2 && f[0] == "profile":
			runtime.GC()
			w, err := os.Create(f[1])
			if err != nil {
				return err
			}
			pprof.WriteHeapProfile(w)
			w.Close()
			fmt.Println("{}")
		}
	}
	s.Shutdown(target.Abrupt)
	return nil
}

// rss returns the process's resident set size in bytes.
func rss() int64 {
	b, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return -1
}

// server is the target process, driven over its standard input.
type server struct {
	cmd *exec.Cmd
	in  *os.File
	out *bufio.Reader
	url string
}

func startServer() (*server, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, "-serve")
	cmd.Stderr = os.Stderr
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdin = pr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	pr.Close()
	s := &server{cmd: cmd, in: pw, out: bufio.NewReader(stdout)}
	line, err := s.out.ReadString('\n')
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	s.url = strings.TrimSpace(line)
	return s, nil
}

// ask sends one command line and decodes the JSON answer into v.
func (s *server) ask(cmd string, v any) error {
	if _, err := fmt.Fprintln(s.in, cmd); err != nil {
		return err
	}
	line, err := s.out.ReadString('\n')
	if err != nil {
		return err
	}
	return json.Unmarshal([]byte(line), v)
}

func (s *server) stop() {
	s.in.Close()
	s.cmd.Wait()
}

func run(n int, profile string, settle time.Duration) error {
	srv, err := startServer()
	if err != nil {
		return err
	}
	defer srv.stop()
	var before, after sample
	if err := srv.ask("sample", &before); err != nil {
		return err
	}
	kBefore := readKernel()
	f, err := loadgen.New(loadgen.Config{Client: spec.Client{URL: srv.url, Clients: n,
		Policy: backoff.Policy{Kind: backoff.Exp, Initial: 100 * time.Millisecond, Max: time.Second, Jitter: 0.5}},
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	t0 := time.Now()
	go func() { _, err := f.Run(ctx); done <- err }()
	for f.Stats().Connected < int64(n) {
		if time.Since(t0) > 2*time.Minute {
			cancel()
			return fmt.Errorf("only %d of %d connected after 2 minutes", f.Stats().Connected, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	connect := time.Since(t0)
	time.Sleep(settle)
	kAfter := readKernel()
	if err := srv.ask("sample", &after); err != nil {
		return err
	}
	if profile != "" {
		var ok struct{}
		if err := srv.ask("profile "+profile, &ok); err != nil {
			return err
		}
	}
	cancel()
	if err := <-done; err != nil {
		return err
	}
	per := func(a, b int64) float64 { return float64(b-a) / float64(n) }
	fmt.Printf("target, %d idle ws:// connections (connected in %.1f s, %d open):\n", n, connect.Seconds(), after.Conns)
	fmt.Printf("  RSS        %7.1f -> %7.1f MiB  %6.0f B/conn (after FreeOSMemory: %.0f B/conn)\n",
		mib(before.RSS), mib(after.RSS), per(before.RSS, after.RSS), per(before.RSSAfterGC, after.RSSAfterGC))
	fmt.Printf("  heap inuse %7.1f -> %7.1f MiB  %6.0f B/conn (live objects %.0f B/conn)\n",
		mib(int64(before.HeapInuse)), mib(int64(after.HeapInuse)), per(int64(before.HeapInuse), int64(after.HeapInuse)),
		per(int64(before.HeapAlloc), int64(after.HeapAlloc)))
	fmt.Printf("  stacks     %7.1f -> %7.1f MiB  %6.0f B/conn; runtime other %6.0f B/conn; goroutines %d -> %d\n",
		mib(int64(before.StackInuse)), mib(int64(after.StackInuse)), per(int64(before.StackInuse), int64(after.StackInuse)),
		per(int64(before.OtherSys), int64(after.OtherSys)), before.Goroutines, after.Goroutines)
	fmt.Printf("kernel (host-wide deltas, both ends of each connection are on this host):\n")
	fmt.Printf("  sockstat TCP inuse %+d, mem %+d pages = %.0f B/conn\n", kAfter.inuse-kBefore.inuse,
		kAfter.memPages-kBefore.memPages, per(kBefore.memPages*4096, kAfter.memPages*4096))
	if kAfter.slab != nil {
		var total int64
		var parts []string
		for _, name := range slabCaches {
			d := kAfter.slab[name] - kBefore.slab[name]
			parts = append(parts, fmt.Sprintf("%s %.0f", name, float64(d)/float64(n)))
		}
		for name, v := range kAfter.slab {
			total += v - kBefore.slab[name]
		}
		fmt.Printf("  slab %.0f B/conn in all (%s B/conn)\n", float64(total)/float64(n), strings.Join(parts, ", "))
	}
	return nil
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// kernel is the host's TCP socket memory at one moment.
type kernel struct {
	inuse, memPages int64
	slab            map[string]int64 // cache -> active bytes; nil when /proc/slabinfo is not readable
}

// slabCaches are the slab caches an open TCP socket and its fd use.
var slabCaches = []string{"TCP", "sock_inode_cache", "filp", "dentry", "eventpoll_epi", "eventpoll_pwq"}

func readKernel() kernel {
	var k kernel
	b, _ := os.ReadFile("/proc/net/sockstat")
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "TCP:" {
			continue
		}
		for i := 1; i+1 < len(f); i += 2 {
			v, _ := strconv.ParseInt(f[i+1], 10, 64)
			switch f[i] {
			case "inuse":
				k.inuse = v
			case "mem":
				k.memPages = v
			}
		}
	}
	if b, err := os.ReadFile("/proc/slabinfo"); err == nil {
		k.slab = map[string]int64{}
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			if len(f) < 4 || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "slabinfo") {
				continue
			}
			active, _ := strconv.ParseInt(f[1], 10, 64)
			size, _ := strconv.ParseInt(f[3], 10, 64)
			k.slab[f[0]] += active * size
		}
	}
	return k
}
