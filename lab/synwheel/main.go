// Command synwheel measures when this kernel retransmits dropped SYNs, the
// evidence for the simulator's timer wheel (docs/simulator.md, "Timer
// batching"). It fills a listener of backlog 1 that never accepts, starts
// -n non-blocking connects to it -gap apart (their SYNs are dropped on the
// full accept queue), then raises the backlog (listen again), so that each
// connect completes at its first SYN retransmit. It prints the retransmit
// delays and the instants the connects completed, grouped into bursts:
//
//	go -C lab run ./synwheel
//	completed 200 of 200; retransmit delay ms: min 1000.4 p50 1017.5 max 1035.5
//	burst at 1022.4 ms: 23
//	burst at 1054.6 ms: 32
//	...
//
// Loopback only, 200 sockets: light enough to run without the heavy lock.
package main

import (
	"flag"
	"fmt"
	"os"
	"sort"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stampede-dev/stampede/lab/internal/rawlisten"
)

func main() {
	n := flag.Int("n", 200, "connects `N`")
	gap := flag.Duration("gap", time.Millisecond, "time `D` between connects")
	flag.Parse()
	if err := measure(*n, *gap); err != nil {
		fmt.Fprintln(os.Stderr, "synwheel:", err)
		os.Exit(1)
	}
}

func measure(n int, gap time.Duration) error {
	ln, dst, err := rawlisten.Loopback(1)
	if err != nil {
		return err
	}
	defer unix.Close(ln)
	var fds []int
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	// Fill the accept queue: backlog 1 holds 2.
	for range 2 {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		fds = append(fds, fd)
		if err := unix.Connect(fd, dst); err != nil {
			return err
		}
	}
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return err
	}
	defer unix.Close(ep)
	sent := map[int32]time.Time{}
	t0 := time.Now()
	for i := range n {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		fds = append(fds, fd)
		sent[int32(fd)] = time.Now()
		if err := unix.Connect(fd, dst); err != unix.EINPROGRESS {
			return fmt.Errorf("connect: %v, want EINPROGRESS", err)
		}
		if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLOUT, Fd: int32(fd)}); err != nil {
			return err
		}
		time.Sleep(time.Until(t0.Add(time.Duration(i+1) * gap)))
	}
	// Before the first retransmit (1 s after the first SYN): room for all.
	time.Sleep(time.Until(t0.Add(700 * time.Millisecond)))
	if err := unix.Listen(ln, 4096); err != nil {
		return err
	}
	var delays, done []float64
	evs := make([]unix.EpollEvent, 64)
	deadline := time.Now().Add(5 * time.Second)
	for len(done) < n && time.Now().Before(deadline) {
		k, err := unix.EpollWait(ep, evs, 100)
		if err != nil && err != unix.EINTR {
			return err
		}
		now := time.Now()
		for _, e := range evs[:max(k, 0)] {
			if v, _ := unix.GetsockoptInt(int(e.Fd), unix.SOL_SOCKET, unix.SO_ERROR); v != 0 {
				return fmt.Errorf("connect failed: %v", unix.Errno(v))
			}
			delays = append(delays, ms(now.Sub(sent[e.Fd])))
			done = append(done, ms(now.Sub(t0)))
			unix.EpollCtl(ep, unix.EPOLL_CTL_DEL, int(e.Fd), nil)
		}
	}
	if len(done) == 0 {
		return fmt.Errorf("no connect completed")
	}
	sort.Float64s(delays)
	sort.Float64s(done)
	fmt.Printf("completed %d of %d; retransmit delay ms: min %.1f p50 %.1f max %.1f\n",
		len(done), n, delays[0], delays[len(delays)/2], delays[len(delays)-1])
	// A burst: completions less than 2 ms apart.
	from, count := done[0], 1
	for i := 1; i <= len(done); i++ {
		if i < len(done) && done[i]-done[i-1] <= 2 {
			count++
			continue
		}
		fmt.Printf("burst at %.1f ms: %d\n", from, count)
		if i < len(done) {
			from, count = done[i], 1
		}
	}
	return nil
}

func ms(d time.Duration) float64 { return d.Seconds() * 1000 }
