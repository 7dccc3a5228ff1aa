// Command tlscost measures what Go's crypto/tls charges a server for one
// handshake, full and resumed, for each certificate kind: the server
// goroutine's own CPU (tlsconf.Server.Handshake), over loopback TCP, with
// clients that keep their session (tlsconf.Session); and the client's own
// CPU for the same handshakes (its thread's clock around
// tls.Conn.Handshake), both from tlsconf.MeasureCost. lab/tls-storm.sh
// prints it beside the target's figures of the same run. With
// -write-calibration FILE -machine KIND it writes its figures into the
// calibration file (the product's is calibration/calibration.json) as the
// simulator's sim.tls.KIND.full, resumed, client_full and client_resumed,
// each with its command, day and machine: run it under the heavy lock, as
// any timed measurement.
//
//	go -C lab run ./tlscost [-n 300] [-write-calibration ../calibration/calibration.json -machine KIND]
package main

import (
	"flag"
	"fmt"
	"log"
	"math"
	"os"
	"runtime"
	"strings"
	"time"

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
		st, cl, err := tlsconf.MeasureCost(k, *n)
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
