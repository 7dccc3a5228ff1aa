package loadgen

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/stampede-dev/stampede/internal/rawsys"
)

// BenchmarkClosePeerGone is the loadgen's close of a connection the
// server closed first (an abrupt restart's herd: FIN received, EOF read),
// with a FIN (rawsys.Close, the loadgen before) and with a reset
// (rawsys.Abort, now). Both ends are in this process, on loopback, so
// the server's side of the close is in the figure too: cpu-us/close is
// the process's CPU (user + system, getrusage) per close, timewait/close
// the server's sockets left in TIME_WAIT for the next minute.
//
//	go test -run '^$' -bench ClosePeerGone -benchtime 20000x ./loadgen/
func BenchmarkClosePeerGone(b *testing.B) {
	for _, bc := range []struct {
		name  string
		close func(fd int) unix.Errno
	}{{"fin", rawsys.Close}, {"reset", rawsys.Abort}} {
		b.Run(bc.name, func(b *testing.B) {
			ln, port := benchListener(b)
			defer unix.Close(ln)
			const batch = 256
			var cpu float64
			fds := make([]int, 0, batch)
			for done := 0; done < b.N; done += len(fds) {
				b.StopTimer()
				fds = fds[:0]
				for range min(batch, b.N-done) {
					fds = append(fds, peerGone(b, ln, port))
				}
				before := cpuSeconds(b)
				b.StartTimer()
				for _, fd := range fds {
					if e := bc.close(fd); e != 0 {
						b.Fatal(e)
					}
				}
				cpu += cpuSeconds(b) - before
			}
			b.ReportMetric(cpu*1e6/float64(b.N), "cpu-us/close")
			b.ReportMetric(float64(countTimeWait(b, port))/float64(b.N), "timewait/close")
		})
	}
}

// benchListener listens on a free loopback port.
func benchListener(b *testing.B) (fd, port int) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		b.Fatal(err)
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		b.Fatal(err)
	}
	if err := unix.Listen(fd, 4096); err != nil {
		b.Fatal(err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		b.Fatal(err)
	}
	return fd, sa.(*unix.SockaddrInet4).Port
}

// peerGone returns a client socket whose server end was accepted and
// closed, its FIN read as an end of stream.
func peerGone(b *testing.B, ln, port int) int {
	c, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		b.Fatal(err)
	}
	if err := unix.Connect(c, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}, Port: port}); err != nil {
		b.Fatal(err)
	}
	s, _, err := unix.Accept4(ln, unix.SOCK_CLOEXEC)
	if err != nil {
		b.Fatal(err)
	}
	unix.Close(s)
	var buf [1]byte
	if n, err := unix.Read(c, buf[:]); n != 0 || err != nil {
		b.Fatalf("read after the server's close: %d, %v; want an end of stream", n, err)
	}
	return c
}

// cpuSeconds is this process's user + system CPU time.
func cpuSeconds(b *testing.B) float64 {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// countTimeWait counts the sockets of local port in TIME_WAIT.
func countTimeWait(b *testing.B, port int) int { return tcpStates(b, port, true, nil)[tcpTimeWait] }
