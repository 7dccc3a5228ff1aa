// Command memprobe measures what one connected loadgen client costs: the
// marginal RSS of the whole process (Go heap, stacks, runtime, everything)
// per connection, between two fleet sizes, and the connect rate.
//
//	go run ./loadgen/testdata/memprobe -compare 2000,10000
//	go run ./loadgen/testdata/memprobe -url wss://127.0.0.1:PORT/ -clients 10000 -heapprofile heap.pb.gz
//
// It starts a WebSocket server in a separate process (itself with -serve),
// then runs each fleet size in a fresh client process (itself with -url),
// which connects every client, waits for the RSS to settle and prints one
// JSON line. The server is a plain goroutine-per-connection gobwas server:
// its memory is not measured.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/gobwas/ws"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/loadgen"
	"github.com/stampede-dev/stampede/spec"
)

// heapProfile is -heapprofile.
var heapProfile string

// sample is one client process's measurement.
type sample struct {
	Clients     int     `json:"clients"`
	ConnectS    float64 `json:"connect_s"`    // first attempt to all connected
	RSS         int64   `json:"rss"`          // VmRSS once settled, bytes
	RSSAfterGC  int64   `json:"rss_after_gc"` // VmRSS after runtime/debug.FreeOSMemory
	HeapInuse   uint64  `json:"heap_inuse"`   // Go heap in use after GC
	Goroutines  int     `json:"goroutines"`   // goroutines while connected
	Attempts    uint64  `json:"attempts"`     // attempts it took
	FailedTotal uint64  `json:"failed_total"` // failed attempts
}

func main() {
	serve := flag.String("serve", "", "run the server on this address (127.0.0.1:0 picks a port) and print it")
	url := flag.String("url", "", "run one client fleet against this server and print a JSON sample")
	clients := flag.Int("clients", 2000, "fleet size with -url")
	reactors := flag.Int("reactors", 0, "reactors with -url (0: default)")
	compare := flag.String("compare", "2000,10000", "fleet sizes to compare (starts its own server)")
	settle := flag.Duration("settle", 2*time.Second, "wait after all connected before reading RSS")
	flag.StringVar(&heapProfile, "heapprofile", "", "with -url: write a heap profile (pprof) to this file once connected")
	flag.Parse()
	if heapProfile != "" {
		runtime.MemProfileRate = 1 // every allocation: the profile divides exactly by the clients
	}
	var err error
	switch {
	case *serve != "":
		err = runServer(*serve)
	case *url != "":
		err = runClients(*url, *clients, *reactors, *settle)
	default:
		err = runCompare(*compare, *reactors, *settle)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "memprobe:", err)
		os.Exit(1)
	}
}

func runServer(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Println(ln.Addr())
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		go func() {
			defer c.Close()
			if _, err := ws.Upgrade(c); err != nil {
				return
			}
			var b [1]byte
			for {
				if _, err := c.Read(b[:]); err != nil {
					return
				}
			}
		}()
	}
}

func runClients(url string, n, reactors int, settle time.Duration) error {
	f, err := loadgen.New(loadgen.Config{Client: spec.Client{URL: url, Clients: n, Reactors: reactors,
		Policy:      backoff.Policy{Kind: backoff.Exp, Initial: 100 * time.Millisecond, Max: time.Second, Jitter: 0.5},
		TLSInsecure: strings.HasPrefix(url, "wss:"), // a wss:// server of this machine, self-signed
	}})
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
			return fmt.Errorf("only %d of %d connected after 2 minutes: %+v", f.Stats().Connected, n, f.Stats())
		}
		time.Sleep(time.Millisecond)
	}
	s := sample{Clients: n, ConnectS: time.Since(t0).Seconds(), Goroutines: runtime.NumGoroutine()}
	time.Sleep(settle)
	s.RSS = rss()
	debug.FreeOSMemory()
	s.RSSAfterGC = rss()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	s.HeapInuse = ms.HeapInuse
	if heapProfile != "" {
		if err := writeHeapProfile(heapProfile); err != nil {
			return err
		}
	}
	st := f.Stats()
	s.Attempts, s.FailedTotal = st.Attempts, st.FailureCount()
	cancel()
	if err := <-done; err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(s)
}

func runCompare(sizes string, reactors int, settle time.Duration) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	srv := exec.Command(self, "-serve", "127.0.0.1:0")
	srv.Stderr = os.Stderr
	out, err := srv.StdoutPipe()
	if err != nil {
		return err
	}
	if err := srv.Start(); err != nil {
		return err
	}
	defer func() {
		_ = srv.Process.Kill()
		_ = srv.Wait()
	}()
	addr, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	url := "ws://" + strings.TrimSpace(addr) + "/"
	var samples []sample
	for _, f := range strings.Split(sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return fmt.Errorf("-compare: %w", err)
		}
		cmd := exec.Command(self, "-url", url, "-clients", strconv.Itoa(n), "-reactors", strconv.Itoa(reactors), "-settle", settle.String())
		cmd.Stderr = os.Stderr
		b, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("client run of %d: %w", n, err)
		}
		var s sample
		if err := json.Unmarshal(b, &s); err != nil {
			return fmt.Errorf("client run of %d: %w: %q", n, err, b)
		}
		fmt.Printf("%s", b)
		samples = append(samples, s)
		time.Sleep(time.Second) // let the server reap the previous fleet
	}
	for i := 1; i < len(samples); i++ {
		a, b := samples[i-1], samples[i]
		dn := float64(b.Clients - a.Clients)
		fmt.Printf("%d -> %d clients: marginal RSS %.0f B/conn (%.0f B/conn after GC), %d connects in %.2f s = %.0f/s\n",
			a.Clients, b.Clients, float64(b.RSS-a.RSS)/dn, float64(b.RSSAfterGC-a.RSSAfterGC)/dn,
			b.Clients, b.ConnectS, float64(b.Clients)/b.ConnectS)
	}
	return nil
}

// writeHeapProfile writes the heap profile (live objects at the last GC).
func writeHeapProfile(name string) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// rss returns the process's resident set size in bytes.
func rss() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return -1
}
