// Command synburst measures how many SYN retransmits of one timer-wheel
// burst get past a listener whose accept queue has a little room, the
// evidence for the simulator's rule on bursts (docs/simulator.md, "Final-ACK
// drops"). It fills a listener (-backlog, never accepting), starts -n
// non-blocking connects from threads pinned to the CPUs of -cpus (their
// SYNs are dropped on the full accept queue), accepts -room connections
// 700 ms later, and 1.5 s after the connects (after their first SYN
// retransmit, before the second) counts the clients whose connect
// completed, the listener's accept queue, and the kernel's counters:
//
//	unshare -n sh -c 'ip link set lo up && go -C lab run ./synburst -n 1000 -room 20'
//
// A connect that completed beyond the room stalled: its final ACK was
// dropped on the full queue. If every SYN of a burst passed the accept
// queue's check before any final ACK reached it, completed = n (up to the
// softnet backlog's 1,001); if SYN and ACK processing interleave, about
// room. Loopback only, a few thousand sockets at most: run it in a network
// namespace of its own (unshare -n) so the counters are its own.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stampede-dev/stampede/hoststat"
	"github.com/stampede-dev/stampede/lab/internal/rawlisten"
)

func main() {
	n := flag.Int("n", 1000, "connects `N` to the full listener")
	backlog := flag.Int("backlog", 128, "the listener's `backlog`")
	room := flag.Int("room", 20, "connections `K` accepted before the first retransmit")
	cpus := flag.String("cpus", "0", "CPUs `LIST` whose threads start the connects, round robin")
	flag.Parse()
	var cpuList []int
	for _, w := range strings.Split(*cpus, ",") {
		c, err := strconv.Atoi(strings.TrimSpace(w))
		if err != nil || c < 0 {
			fail(fmt.Errorf("-cpus %q: want a list of CPU numbers", *cpus))
		}
		cpuList = append(cpuList, c)
	}
	if err := measure(*n, *backlog, *room, cpuList); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "synburst:", err)
	os.Exit(1)
}

func measure(n, backlog, room int, cpus []int) error {
	ln, dst, err := rawlisten.Loopback(backlog)
	if err != nil {
		return err
	}
	defer unix.Close(ln)
	var mu sync.Mutex
	var fds []int
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	// Fill the accept queue: it holds backlog+1.
	for range backlog + 1 {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		fds = append(fds, fd)
		if err := unix.Connect(fd, dst); err != nil {
			return err
		}
	}
	time.Sleep(50 * time.Millisecond)
	t0 := time.Now()
	var clients []int
	issued := map[int]time.Duration{}
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return err
	}
	defer unix.Close(ep)
	var wg sync.WaitGroup
	errs := make(chan error, len(cpus))
	for i, cpu := range cpus {
		share := n / len(cpus)
		if i < n%len(cpus) {
			share++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			var set unix.CPUSet
			set.Set(cpu)
			if err := unix.SchedSetaffinity(0, &set); err != nil {
				errs <- fmt.Errorf("pin to CPU %d: %w", cpu, err)
				return
			}
			for range share {
				fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
				if err != nil {
					errs <- err
					return
				}
				at := time.Since(t0)
				if err := unix.Connect(fd, dst); err != unix.EINPROGRESS {
					errs <- fmt.Errorf("connect: %v, want EINPROGRESS", err)
					return
				}
				mu.Lock()
				fds = append(fds, fd)
				clients = append(clients, fd)
				issued[fd] = at
				mu.Unlock()
				if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLOUT, Fd: int32(fd)}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	spread := time.Since(t0)
	time.Sleep(time.Until(t0.Add(700 * time.Millisecond)))
	dropsBefore := softnetDrops()
	before, err := hoststat.KernelSnapshot()
	if err != nil {
		return err
	}
	for range room {
		fd, _, err := unix.Accept4(ln, unix.SOCK_CLOEXEC)
		if err != nil {
			return err
		}
		fds = append(fds, fd)
	}
	var done []time.Duration // completion instants, from t0
	evs := make([]unix.EpollEvent, 256)
	for time.Since(t0) < 1500*time.Millisecond {
		k, err := unix.EpollWait(ep, evs, 10)
		if err != nil && err != unix.EINTR {
			return err
		}
		now := time.Since(t0)
		for _, e := range evs[:max(k, 0)] {
			done = append(done, now)
			unix.EpollCtl(ep, unix.EPOLL_CTL_DEL, int(e.Fd), nil)
		}
	}
	dropsAfter := softnetDrops()
	after, err := hoststat.KernelSnapshot()
	if err != nil {
		return err
	}
	connected := 0
	for _, fd := range clients {
		info, err := unix.GetsockoptTCPInfo(fd, unix.IPPROTO_TCP, unix.TCP_INFO)
		if err == nil && info.State == 1 { // TCP_ESTABLISHED
			connected++
		}
	}
	li, err := unix.GetsockoptTCPInfo(ln, unix.IPPROTO_TCP, unix.TCP_INFO)
	if err != nil {
		return err
	}
	queued := int(li.Unacked) - (backlog + 1 - room) // the burst's share of the queue
	fmt.Printf("connects %d on CPUs %v in %.1f ms, room %d of backlog %d\n", n, cpus, spread.Seconds()*1000, room, backlog)
	fmt.Printf("after the first retransmit: connected %d, queued %d, stalled %d, SYN still dropped %d\n",
		connected, queued, connected-queued, n-connected)
	// Bursts: completions less than 2 ms apart. The SYNs of a burst at B
	// were sent (B-1032, B-1000] ms: their timers' 1 s expiry rounded up
	// to the wheel's 32 ms granule.
	sort.Slice(done, func(i, j int) bool { return done[i] < done[j] })
	for i := 0; i < len(done); {
		j := i + 1
		for j < len(done) && done[j]-done[j-1] <= 2*time.Millisecond {
			j++
		}
		b := done[i]
		sent := 0
		for _, at := range issued {
			if at+time.Second <= b && at+time.Second > b-32*time.Millisecond {
				sent++
			}
		}
		fmt.Printf("  burst at %.1f ms: %d completed of about %d SYNs sent in its granule\n", b.Seconds()*1000, j-i, sent)
		i = j
	}
	fmt.Printf("  softnet drops +%d\n", dropsAfter-dropsBefore)
	for _, k := range []string{"TcpExt.ListenOverflows", "TcpExt.TCPSynRetrans", "TcpExt.TCPReqQFullDoCookies",
		"TcpExt.SyncookiesSent", "TcpExt.SyncookiesRecv", "Tcp.RetransSegs"} {
		fmt.Printf("  %s +%d\n", k, after[k]-before[k])
	}
	return nil
}

// softnetDrops sums the packets every CPU's backlog queue dropped
// (/proc/net/softnet_stat, second column, hexadecimal).
func softnetDrops() int64 {
	b, err := os.ReadFile("/proc/net/softnet_stat")
	if err != nil {
		return 0
	}
	var sum int64
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		v, _ := strconv.ParseInt(f[1], 16, 64)
		sum += v
	}
	return sum
}
