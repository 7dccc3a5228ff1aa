//go:build linux

// Command connbase measures the kernel's own CPU cost of a loopback TCP
// connection: the baseline for stampede's CPU per connect and per
// reconnect (summary.json resources, docs/metrics.md). A client (this
// process) opens N TCP connections to a listener in a child process, with
// plain blocking socket(2)/connect(2) and accept4(2) calls: no Go net
// package, no poller, no upgrade. Both sides then close them, the
// listener first (as a target going down does), then the client. Each
// side's CPU time (getrusage: user + system) is read around its own loop.
//
//	go -C lab run ./connbase -n 19000 -rounds 2
//
// It prints one line, each figure in µs of CPU time per connection:
//
//	connbase: n=19000 rounds=2 addr=127.0.0.1 per_source=6352 connect_us=29.6 accept_us=12.2 connect_accept_us=41.8 close_client_us=13.8 close_server_us=12.1 close_us=25.9
//
// connect_accept_us is connect_us + accept_us, close_us close_client_us +
// close_server_us. The listener is a child process because stampede's
// loadgen and target are separate processes too: on loopback the softirq
// that handles a packet runs on the sender's time (a SYN's handshake is
// charged to the connecting process), and the baseline shares out the
// kernel's work as a run does. Both sides hold N descriptors, so N is
// capped by the open-file limit (raised to its hard limit): -rounds R
// repeats the whole cycle R times, each against a new listening port, for
// more connections in all. The client binds its sockets to loopback
// source addresses (127.0.0.2, ...) with as many connections each as
// `stampede run` gives one (-per-source): from one address, connect()'s
// search of a crowded ephemeral port range costs more than the rest of
// the connect (259 µs against 30 µs at 19,000). Only addresses of
// 127.0.0.0/8.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"

	"github.com/stampede-dev/stampede/storm"
	"golang.org/x/sys/unix"
)

// childEnv set to 1 makes the process the listener (serve).
const childEnv = "CONNBASE_LISTENER"

// spareFDs are the descriptors a side needs besides its N connections.
const spareFDs = 64

func main() {
	if os.Getenv(childEnv) == "1" {
		if err := serve(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "connbase listener:", err)
			os.Exit(1)
		}
		return
	}
	n := flag.Int("n", 10000, "connections `N` per round, each side holding them all at once (at most the open-file limit less 64)")
	rounds := flag.Int("rounds", 1, "rounds `R` of N connects and closes")
	addr := flag.String("addr", "127.0.0.1", "listen and connect on `IP`, an address of 127.0.0.0/8")
	perSource := flag.Int("per-source", storm.HostLimits().ChosenPerSourceIP(), "connections `N` per loopback source address (127.0.0.2, ...), as stampede run chooses them; 0: the kernel's choice of one")
	flag.Parse()
	exe, err := os.Executable()
	if err == nil {
		var f Figures
		if f, err = Measure(exe, *addr, *n, *rounds, *perSource); err == nil {
			fmt.Println(f.Line())
			return
		}
	}
	fmt.Fprintln(os.Stderr, "connbase:", err)
	os.Exit(1)
}

// Figures are the CPU time of each side in all rounds, in µs.
type Figures struct {
	Addr                     string
	N, Rounds, PerSource     int
	Connect, Accept          float64 // the client's connects, the listener's accepts
	CloseClient, CloseServer float64 // each side's closes
}

// per is a total in µs per connection.
func (f Figures) per(us float64) float64 { return us / float64(f.N*f.Rounds) }

// Line is the one line connbase prints.
func (f Figures) Line() string {
	return fmt.Sprintf("connbase: n=%d rounds=%d addr=%s per_source=%d connect_us=%.1f accept_us=%.1f connect_accept_us=%.1f close_client_us=%.1f close_server_us=%.1f close_us=%.1f",
		f.N, f.Rounds, f.Addr, f.PerSource, f.per(f.Connect), f.per(f.Accept), f.per(f.Connect+f.Accept),
		f.per(f.CloseClient), f.per(f.CloseServer), f.per(f.CloseClient+f.CloseServer))
}

// Measure runs rounds of n connections to a listener that exe, started
// with childEnv=1, runs on addr, and returns both sides' CPU times. The
// connections come from loopback source addresses 127.0.0.2, ... with
// perSource connections each (IP_BIND_ADDRESS_NO_PORT, as stampede's
// loadgen binds them), or from the kernel's choice when perSource is 0.
func Measure(exe, addr string, n, rounds, perSource int) (f Figures, err error) {
	f = Figures{Addr: addr, N: n, Rounds: rounds, PerSource: perSource}
	ip := net.ParseIP(addr).To4()
	if ip == nil || ip[0] != 127 {
		return f, fmt.Errorf("-addr %q: not an address of 127.0.0.0/8", addr)
	}
	if rounds < 1 {
		return f, fmt.Errorf("-rounds %d: must be at least 1", rounds)
	}
	limit, err := raiseFDLimit()
	if err != nil {
		return f, err
	}
	if n < 1 || n > limit-spareFDs {
		return f, fmt.Errorf("-n %d: must be within 1..%d (the open-file limit %d less %d); use -rounds for more", n, limit-spareFDs, limit, spareFDs)
	}
	var srcs []syscall.SockaddrInet4
	if perSource > 0 {
		for _, a := range storm.LoopbackSources((n + perSource - 1) / perSource) {
			srcs = append(srcs, syscall.SockaddrInet4{Addr: a.As4()})
		}
	}
	if perSource < 0 {
		return f, fmt.Errorf("-per-source %d: must not be negative", perSource)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), childEnv+"=1")
	cmd.Stderr = os.Stderr
	toChild, err := cmd.StdinPipe()
	if err != nil {
		return f, err
	}
	fromChild, err := cmd.StdoutPipe()
	if err != nil {
		return f, err
	}
	if err := cmd.Start(); err != nil {
		return f, err
	}
	defer func() {
		toChild.Close()
		if err != nil {
			cmd.Process.Kill() // it may wait for connects that never come
		}
		if werr := cmd.Wait(); werr != nil && err == nil {
			err = fmt.Errorf("listener: %w", werr)
		}
	}()
	in := bufio.NewReader(fromChild)
	// The listener's side of the dialogue: "listen ADDR N" starts a round
	// and is answered "port P"; the accepts' CPU comes back as
	// "accepted US" once it has all N; "close" is answered "closed US".
	ask := func(line, want string) (string, error) {
		if line != "" {
			if _, err := io.WriteString(toChild, line+"\n"); err != nil {
				return "", err
			}
		}
		got, err := in.ReadString('\n')
		if err != nil {
			return "", fmt.Errorf("listener: %w", err)
		}
		v, ok := strings.CutPrefix(strings.TrimSpace(got), want+" ")
		if !ok {
			return "", fmt.Errorf("listener said %q, want %q", got, want)
		}
		return v, nil
	}
	num := func(s string, err error) (float64, error) {
		if err != nil {
			return 0, err
		}
		return strconv.ParseFloat(s, 64)
	}
	fds := make([]int, 0, n)
	defer func() {
		for _, fd := range fds {
			syscall.Close(fd)
		}
	}()
	for range rounds {
		p, err := num(ask(fmt.Sprintf("listen %s %d", addr, n), "port"))
		if err != nil {
			return f, err
		}
		sa := &syscall.SockaddrInet4{Port: int(p)}
		copy(sa.Addr[:], ip)
		t0, err := cpuUS()
		if err != nil {
			return f, err
		}
		for range n {
			fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
			if err != nil {
				return f, fmt.Errorf("socket: %w", err)
			}
			fds = append(fds, fd)
			if len(srcs) > 0 {
				// Bind the address only: connect() picks the port, as
				// the loadgen's sockets do.
				if err := syscall.SetsockoptInt(fd, syscall.IPPROTO_IP, unix.IP_BIND_ADDRESS_NO_PORT, 1); err != nil {
					return f, fmt.Errorf("setsockopt IP_BIND_ADDRESS_NO_PORT: %w", err)
				}
				if err := syscall.Bind(fd, &srcs[len(fds)%len(srcs)]); err != nil {
					return f, fmt.Errorf("bind: %w", err)
				}
			}
			if err := syscall.Connect(fd, sa); err != nil {
				return f, fmt.Errorf("connect to %s:%d: %w", addr, sa.Port, err)
			}
		}
		t1, err := cpuUS()
		if err != nil {
			return f, err
		}
		f.Connect += t1 - t0
		acc, err := num(ask("", "accepted"))
		if err != nil {
			return f, err
		}
		f.Accept += acc
		cl, err := num(ask("close", "closed"))
		if err != nil {
			return f, err
		}
		f.CloseServer += cl
		t0, err = cpuUS()
		if err != nil {
			return f, err
		}
		for _, fd := range fds {
			syscall.Close(fd)
		}
		fds = fds[:0]
		t1, err = cpuUS()
		if err != nil {
			return f, err
		}
		f.CloseClient += t1 - t0
	}
	if _, err := io.WriteString(toChild, "done\n"); err != nil {
		return f, err
	}
	return f, nil
}

// serve is the listener's side of Measure's dialogue, on in and out,
// until "done" or the end of in.
func serve(in io.Reader, out io.Writer) error {
	if _, err := raiseFDLimit(); err != nil {
		return err
	}
	r := bufio.NewReader(in)
	for {
		line, err := r.ReadString('\n')
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		var addr string
		var n int
		if strings.TrimSpace(line) == "done" {
			return nil
		}
		if _, err := fmt.Sscanf(line, "listen %s %d", &addr, &n); err != nil {
			return fmt.Errorf("bad request %q", line)
		}
		if err := round(r, out, addr, n); err != nil {
			return err
		}
	}
}

// round listens on addr, accepts n connections, and closes them when told.
func round(r *bufio.Reader, out io.Writer, addr string, n int) error {
	ip := net.ParseIP(addr).To4()
	if ip == nil || ip[0] != 127 {
		return fmt.Errorf("listen %q: not an address of 127.0.0.0/8", addr)
	}
	lfd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer syscall.Close(lfd)
	sa := &syscall.SockaddrInet4{}
	copy(sa.Addr[:], ip)
	if err := syscall.Bind(lfd, sa); err != nil {
		return err
	}
	if err := syscall.Listen(lfd, n); err != nil { // capped by net.core.somaxconn
		return err
	}
	bound, err := syscall.Getsockname(lfd)
	if err != nil {
		return err
	}
	fds := make([]int, 0, n)
	defer func() {
		for _, fd := range fds {
			syscall.Close(fd)
		}
	}()
	t0, err := cpuUS() // before the client is told the port
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(out, "port %d\n", bound.(*syscall.SockaddrInet4).Port); err != nil {
		return err
	}
	for len(fds) < n {
		fd, _, err := syscall.Accept4(lfd, syscall.SOCK_CLOEXEC)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("accept: %w", err)
		}
		fds = append(fds, fd)
	}
	t1, err := cpuUS()
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(out, "accepted %.3f\n", t1-t0); err != nil {
		return err
	}
	if line, err := r.ReadString('\n'); err != nil || strings.TrimSpace(line) != "close" {
		return fmt.Errorf("want close, got %q (%v)", line, err)
	}
	t0, err = cpuUS()
	if err != nil {
		return err
	}
	for _, fd := range fds {
		syscall.Close(fd)
	}
	fds = fds[:0]
	t1, err = cpuUS()
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(out, "closed %.3f\n", t1-t0)
	return err
}

// cpuUS is the process's CPU time so far (user + system), in µs.
func cpuUS() (float64, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	us := func(t syscall.Timeval) float64 { return float64(t.Sec)*1e6 + float64(t.Usec) }
	return us(ru.Utime) + us(ru.Stime), nil
}

// raiseFDLimit raises the open-file soft limit to the hard one and
// returns it.
func raiseFDLimit() (int, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, err
	}
	if lim.Cur < lim.Max {
		lim.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			return 0, err
		}
	}
	return int(min(lim.Cur, math.MaxInt32)), nil
}
