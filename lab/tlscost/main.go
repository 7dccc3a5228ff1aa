// Command tlscost measures what Go's crypto/tls charges a server for one
// handshake, full and resumed, for each certificate kind: the server
// goroutine's own CPU (tlsconf.Server.Handshake), over loopback TCP, with
// clients that keep their session (tlsconf.Session); and the client's own
// CPU for the same handshakes (its thread's clock around
// tls.Conn.Handshake). lab/tls-storm.sh prints it beside the target's
// figures of the same run. With -write-calibration FILE -machine KIND it
// writes its figures into the calibration file (the product's is
// calibration/calibration.json) as the simulator's sim.tls.KIND.full,
// resumed, client_full and client_resumed, each with its command, day and
// machine: run it under the heavy lock, as any timed measurement.
//
//	go -C lab run ./tlscost [-n 300] [-write-calibration ../calibration/calibration.json -machine KIND]
package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"log"
	"math"
	"net"
	"os"
	"runtime"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stampede-dev/stampede/calibration"
	"github.com/stampede-dev/stampede/tlsconf"
)

func main() {
	n := flag.Int("n", 200, "handshakes of each kind per certificate kind")
	calFile := flag.String("write-calibration", "", "write the figures into this calibration `FILE` (sim.tls.*)")
	machine := flag.String("machine", "", "with -write-calibration: what the machine is, e.g. \"VM, 24 GiB\"")
	flag.Parse()
	if *calFile != "" && *machine == "" {
		log.Fatal("-write-calibration: needs -machine, what this machine is")
	}
	var figs []calibration.Figure
	fmt.Printf("%-12s %14s %16s %8s %16s %18s\n", "kind", "full µs", "resumed µs", "ratio", "client full µs", "client resumed µs")
	for _, k := range tlsconf.Kinds {
		st, cl, err := measure(k, *n)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%-12s %14.0f %16.0f %8.1f %16.0f %18.0f\n", k, st.FullCPUUs(), st.ResumedCPUUs(), st.FullCPUUs()/st.ResumedCPUUs(),
			cl.FullCPUUs(), cl.ResumedCPUUs())
		figs = append(figs, figures(k, *n, st, cl, *machine)...)
	}
	if *calFile != "" {
		if err := writeCalibration(*calFile, figs); err != nil {
			log.Fatal(err)
		}
	}
}

// figures are the simulator's calibration figures of kind k: each end's
// mean CPU per handshake, full and resumed, over n of each.
func figures(k tlsconf.Kind, n int, srv, cl tlsconf.Stats, kind string) []calibration.Figure {
	m := calibration.Machine{Kind: kind, Cores: runtime.NumCPU(), Kernel: kernelRelease()}
	var out []calibration.Figure
	for _, f := range []struct {
		name string
		us   float64
		note string
	}{
		{"full", srv.FullCPUUs(), "the server goroutine's own CPU per full handshake (tlsconf.Server.Handshake, its thread's clock)"},
		{"resumed", srv.ResumedCPUUs(), "the server goroutine's own CPU per resumed handshake (a TLS 1.3 pre-shared key)"},
		{"client_full", cl.FullCPUUs(), "the client's own CPU per full handshake (its thread's clock around tls.Conn.Handshake)"},
		{"client_resumed", cl.ResumedCPUUs(), "the client's own CPU per resumed handshake"},
	} {
		out = append(out, calibration.Figure{Name: "sim.tls." + string(k) + "." + f.name,
			Value: (time.Duration(math.Round(f.us)) * time.Microsecond).String(),
			Source: calibration.Source{Command: fmt.Sprintf("go -C lab run ./tlscost -n %d", n), Date: time.Now().UTC().Format(time.DateOnly),
				Machine: m, Note: fmt.Sprintf("%s, mean of %d, TLS 1.3, Go %s", f.note, n, runtime.Version())}})
	}
	return out
}

// writeCalibration sets figs in the calibration file at path.
func writeCalibration(path string, figs []calibration.Figure) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	f, err := calibration.Parse(b)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	for _, g := range figs {
		f.Set(g)
	}
	if b, err = f.Marshal(); err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// kernelRelease is this machine's kernel release (uname -r).
func kernelRelease() string {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(b))
}

// clientHandshake dials addr and runs the client's handshake on a thread
// of its own, counting its CPU in st, full or resumed.
func clientHandshake(addr string, cache *tlsconf.Session, st *tlsconf.Stats) (*tls.Conn, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	tc := tls.Client(c, &tls.Config{InsecureSkipVerify: true, ClientSessionCache: cache})
	runtime.LockOSThread()
	t0 := threadCPU()
	err = tc.Handshake()
	ns := threadCPU() - t0
	runtime.UnlockOSThread()
	if err != nil {
		c.Close()
		return nil, err
	}
	if tc.ConnectionState().DidResume {
		st.Resumed++
		st.ResumedCPUNS += ns
	} else {
		st.Full++
		st.FullCPUNS += ns
	}
	return tc, nil
}

// threadCPU is the calling thread's CPU time in nanoseconds.
func threadCPU() uint64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return 0
	}
	return uint64(ts.Nano())
}

// measure makes n full and n resumed handshakes against a server of kind
// k and returns the server's counts and the clients'.
func measure(k tlsconf.Kind, n int) (srv, cl tlsconf.Stats, err error) {
	s, err := tlsconf.NewServer(tlsconf.ServerOptions{Kind: k})
	if err != nil {
		return srv, cl, err
	}
	defer s.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return srv, cl, err
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			tc := tls.Server(c, s.Config())
			if s.Handshake(tc) == nil {
				tc.Write([]byte{1}) // after the TLS 1.3 ticket
			}
			c.Close()
		}
	}()
	for i := 0; i < n; i++ {
		var cache tlsconf.Session
		for range 2 { // full, then resumed
			c, err := clientHandshake(ln.Addr().String(), &cache, &cl)
			if err != nil {
				return srv, cl, err
			}
			c.Read(make([]byte, 1))
			c.Close()
		}
	}
	srv = s.Stats()
	if srv.Full != uint64(n) || srv.Resumed != uint64(n) || cl.Full != uint64(n) || cl.Resumed != uint64(n) {
		return srv, cl, fmt.Errorf("%s: server %d full and %d resumed, client %d and %d, want %d each", k, srv.Full, srv.Resumed, cl.Full, cl.Resumed, n)
	}
	return srv, cl, nil
}
